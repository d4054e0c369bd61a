/** Starting a task: from a prompt (the agent plans the outputs), or from a spec written here. */
import { useState } from 'preact/hooks';
import type { TaskSpecInput } from './api.js';
import { useAction } from './hooks.js';
import { navigate } from './router.js';
import { useSession } from './session.js';
import { newOutput, OutputEditor, outputOf, type OutputDraft } from './spec-editor.js';
import { ErrorNote, PageTitle } from './ui.js';

type CitationMode = NonNullable<TaskSpecInput['citations']>;

export function CreateTask() {
  const { client } = useSession();
  const [mode, setMode] = useState<'prompt' | 'spec'>('prompt');
  const [prompt, setPrompt] = useState('');
  const [name, setName] = useState('');
  const [planOnly, setPlanOnly] = useState(false);
  const [citations, setCitations] = useState<CitationMode>('flag');
  const [outputs, setOutputs] = useState<OutputDraft[]>([newOutput(0)]);
  const action = useAction();

  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const task = mode === 'prompt'
        ? await client.tasks.create({ prompt, plan_only: planOnly })
        : await client.tasks.start({ task: { prompt, ...(name.trim() ? { name: name.trim() } : {}), citations, outputs: outputs.map(outputOf) } });
      navigate(`/tasks/${encodeURIComponent(task.task_id)}`);
    });
  };

  return (
    <section>
      <PageTitle>New task</PageTitle>
      <form onSubmit={submit} class="form">
        <fieldset class="choice">
          <legend>Start from</legend>
          <label class="check"><input type="radio" name="mode" checked={mode === 'prompt'} onChange={() => setMode('prompt')} /> a prompt: the agent plans the outputs</label>
          <label class="check"><input type="radio" name="mode" checked={mode === 'spec'} onChange={() => setMode('spec')} /> a spec: you declare the outputs</label>
        </fieldset>
        <label for="prompt">Prompt</label>
        <textarea id="prompt" rows={5} required value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} placeholder="List the EU plants making Li-ion cells, with country and capacity in GWh." />
        {mode === 'prompt' ? (
          <label class="check"><input type="checkbox" checked={planOnly} onChange={(e) => setPlanOnly(e.currentTarget.checked)} /> Plan only (execute it later)</label>
        ) : (
          <>
            <label for="name">Name</label>
            <input id="name" value={name} maxLength={200} onInput={(e) => setName(e.currentTarget.value)} />
            <label for="citations">Citations</label>
            <select id="citations" value={citations} onChange={(e) => setCitations(e.currentTarget.value as CitationMode)}>
              <option value="flag">flag: keep every row, mark unverified sources</option>
              <option value="require_verified">require_verified: refuse rows without a verified source</option>
              <option value="require_supported">require_supported: also refuse a value its quote does not hold</option>
            </select>
            {outputs.map((output, i) => (
              <OutputEditor
                key={i}
                index={i}
                output={output}
                onChange={(next) => setOutputs(outputs.map((o, j) => (j === i ? next : o)))}
                onRemove={outputs.length > 1 ? () => setOutputs(outputs.filter((_, j) => j !== i)) : undefined}
              />
            ))}
            <button type="button" class="secondary" onClick={() => setOutputs([...outputs, newOutput(outputs.length)])}>Add output</button>
          </>
        )}
        <div class="buttons">
          <button type="submit" disabled={action.busy || prompt.trim() === ''}>Start task</button>
        </div>
        <ErrorNote message={action.error} />
      </form>
    </section>
  );
}
