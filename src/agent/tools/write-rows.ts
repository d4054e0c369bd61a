import { Type } from 'typebox';
import { serializeRow, validateRows } from '../../outputs/row-validation.js';
import type { AgentTool } from './tool.js';

const SourceSchema = Type.Object({
  url: Type.Optional(Type.String()),
  upload_id: Type.Optional(Type.String()),
  title: Type.Optional(Type.String()),
  quote: Type.Optional(Type.String()),
  fields: Type.Optional(Type.Array(Type.String())),
});

const parameters = Type.Object({
  output: Type.String({ description: 'Id of the output to append to.' }),
  rows: Type.Array(Type.Object({}, { additionalProperties: true }), { minItems: 1, description: 'Rows to append. A row may carry its own "_sources".' }),
  sources: Type.Optional(Type.Array(SourceSchema, { description: 'Sources backing every row of this call (url or upload_id, title, quote, fields).' })),
});

interface WriteRowsArgs {
  output: string;
  rows: unknown[];
  sources?: unknown[];
}

export const writeRowsTool: AgentTool<WriteRowsArgs> = {
  name: 'write_rows',
  description: 'Validate rows against an output declared in the spec and append them. Cite where every fact came from in sources.',
  parameters,
  async run(args, ctx) {
    const output = ctx.spec().outputs.find((o) => o.id === args.output);
    if (!output) {
      const ids = ctx.spec().outputs.map((o) => o.id).join(', ') || 'none yet; declare one with update_spec';
      return { isError: true, content: `No output "${args.output}". Declared outputs: ${ids}.`, summary: `unknown output ${args.output}` };
    }
    const checked = validateRows(output, args.rows, args.sources);
    if (!checked.ok) {
      const lines = checked.errors.map((e) => `- ${e.index === null ? '' : `row ${e.index}: `}${e.field ? `${e.field}: ` : ''}${e.message}`);
      return { isError: true, content: `No rows were written; fix these and call again:\n${lines.join('\n')}`, summary: `rejected ${args.rows.length} rows for ${output.id}` };
    }
    const written = await ctx.appendRows(output.id, checked.rows.map((row) => (n: number) => serializeRow(n, row)));
    const last = written.firstRow + written.count - 1;
    let content = `Wrote ${written.count} rows to ${output.id} (rows ${written.firstRow}-${last}).`;
    if (checked.unsourced > 0) content += ` ${checked.unsourced} of them have no sources: every fact must be traceable, so write them again with sources or cite them in a later call.`;
    return { content, summary: `wrote ${written.count} rows to ${output.id}` };
  },
};
