import { Type } from 'typebox';
import { QuarryError } from '../../errors.js';
import { OutputInput, type OutputDecl } from '../../contract/index.js';
import { normalizeOutputs } from '../../domain/spec.js';
import type { AgentTool } from './tool.js';

const parameters = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 200, description: 'A short human label for the task.' })),
  prompt: Type.Optional(Type.String({ minLength: 1, maxLength: 100_000, description: 'The research question, restated precisely.' })),
  outputs: Type.Optional(Type.Array(OutputInput, { description: 'Outputs to add or replace (merged by id).' })),
  remove_outputs: Type.Optional(Type.Array(Type.String(), { description: 'Ids of outputs to remove; only outputs without rows can go.' })),
});

interface UpdateSpecArgs {
  name?: string;
  prompt?: string;
  outputs?: unknown[];
  remove_outputs?: string[];
}

export const updateSpecTool: AgentTool<UpdateSpecArgs> = {
  name: 'update_spec',
  description: 'Revise the task spec: its name, prompt and outputs. Outputs merge by id (same id replaces, a new id adds).',
  parameters,
  async run(args, ctx) {
    const spec = ctx.spec();
    let declared: OutputDecl[];
    try {
      declared = normalizeOutputs((args.outputs ?? []) as never, 'outputs');
    } catch (err) {
      if (err instanceof QuarryError) return { isError: true, content: `The spec was not changed: ${err.message}`, summary: 'rejected spec change' };
      throw err;
    }
    const outputs = [...spec.outputs];
    for (const out of declared) {
      const at = outputs.findIndex((o) => o.id === out.id);
      if (at >= 0) outputs[at] = out;
      else outputs.push(out);
    }
    if (args.remove_outputs?.length) {
      const counts = await ctx.rowCounts();
      const blocked = args.remove_outputs.filter((id) => (counts.get(id) ?? 0) > 0);
      if (blocked.length) return { isError: true, content: `The spec was not changed: outputs ${blocked.join(', ')} already have rows and cannot be removed.`, summary: 'rejected spec change' };
      const drop = new Set(args.remove_outputs);
      outputs.splice(0, outputs.length, ...outputs.filter((o) => !drop.has(o.id)));
    }
    const next = { ...spec, outputs, ...(args.name !== undefined ? { name: args.name } : {}), ...(args.prompt !== undefined ? { prompt: args.prompt } : {}) };
    await ctx.updateSpec(next);
    const summary = `spec now has ${outputs.length} output${outputs.length === 1 ? '' : 's'}: ${outputs.map((o) => o.id).join(', ') || 'none'}`;
    // The system message keeps the spec as the turn started (decisions §16.3): the change is told here.
    return { content: `Spec updated; ${summary}.\nThe spec now (JSON):\n${JSON.stringify({ name: next.name, prompt: next.prompt, outputs })}`, summary };
  },
};
