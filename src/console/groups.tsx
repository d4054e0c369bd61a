/**
 * Task groups (decisions §15.2): one spec run over many inputs. The list, a form to start one,
 * and a group's page with its progress and merged rows, read again every few seconds while it runs.
 */
import { useState } from 'preact/hooks';
import type { Group } from './api.js';
import { saveFile, EXPORT_TYPES } from './download.js';
import { useAction, useLoad } from './hooks.js';
import { Link, navigate } from './router.js';
import { RowsTable, type SourcedRow } from './rows-table.js';
import { useSession } from './session.js';
import { columnsOf, ColumnsEditor, newColumn, newOutput, OutputEditor, outputOf, type ColumnDraft, type OutputDraft } from './spec-editor.js';
import { credits, ErrorNote, PageTitle, Pager, StatusBadge, Time } from './ui.js';

const REFRESH_MS = 2000;
const ROWS_PER_PAGE = 50;

/** Runs that are over, of all runs. */
function progressOf(group: Group): { done: number; total: number } {
  const { pending, running, completed, failed, stopped } = group.counts;
  return { done: completed + failed + stopped, total: pending + running + completed + failed + stopped };
}

function Progress(props: { group: Group; id: string }) {
  const { group } = props;
  const { done, total } = progressOf(group);
  const { pending, running, completed, failed, stopped } = group.counts;
  return (
    <div class="progress">
      <label for={props.id}>{done} of {total} runs done</label>
      <progress id={props.id} max={Math.max(total, 1)} value={done} />
      <span class="hint">
        {completed} completed · {running} running · {pending} pending · {failed} failed · {stopped} stopped
      </span>
    </div>
  );
}

export function GroupList() {
  const { groups } = useSession();
  const list = useLoad(() => groups.list(), [groups], REFRESH_MS * 2);
  return (
    <section>
      <div class="title-row">
        <PageTitle>Groups</PageTitle>
        <Link to="/groups/new" class="button">New group</Link>
      </div>
      <ErrorNote message={list.error} />
      {list.data && list.data.length === 0 && <p>No groups yet.</p>}
      <ul class="cards" aria-label="Groups">
        {list.data?.map((group) => (
          <li key={group.group_id} class="card">
            <div class="card-head">
              <Link to={`/groups/${encodeURIComponent(group.group_id)}`} class="card-title">{group.name ?? group.group_id}</Link>
              <StatusBadge status={group.status} />
            </div>
            <Progress group={group} id={`progress-${group.group_id}`} />
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Inputs as one JSON object per line: `{"company": "Northvolt"}`. */
function parseInputs(text: string): Record<string, unknown>[] {
  return text.split('\n').map((line) => line.trim()).filter(Boolean).map((line, i) => {
    try {
      const value: unknown = JSON.parse(line);
      if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    } catch {
      // said below
    }
    throw new Error(`Input line ${i + 1} is not a JSON object: ${line.slice(0, 80)}`);
  });
}

export function CreateGroup() {
  const { groups } = useSession();
  const [name, setName] = useState('');
  const [prompt, setPrompt] = useState('');
  const [inputColumns, setInputColumns] = useState<ColumnDraft[]>([{ ...newColumn(), name: 'company', required: true }]);
  const [output, setOutput] = useState<OutputDraft>(newOutput(0));
  const [inputs, setInputs] = useState('{"company": "Northvolt"}\n{"company": "ACC"}');
  const [maxParallel, setMaxParallel] = useState('8');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const group = await groups.create({
        ...(name.trim() ? { name: name.trim() } : {}),
        task: { prompt, input_columns: columnsOf(inputColumns), outputs: [outputOf(output)] },
        inputs: parseInputs(inputs),
        max_parallel: Number(maxParallel),
      });
      navigate(`/groups/${encodeURIComponent(group.group_id)}`);
    });
  };
  return (
    <section>
      <PageTitle>New group</PageTitle>
      <form onSubmit={submit} class="form">
        <label for="group-name">Name</label>
        <input id="group-name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <label for="group-prompt">Prompt for every input</label>
        <textarea id="group-prompt" rows={3} required value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} placeholder="Find the company's battery plants in Europe." />
        <ColumnsEditor idPrefix="input" legend="Input columns" columns={inputColumns} onChange={setInputColumns} />
        <OutputEditor index={0} output={output} kinds={['table']} onChange={setOutput} />
        <label for="group-inputs">Inputs, one JSON object per line</label>
        <textarea id="group-inputs" rows={5} required class="mono" value={inputs} onInput={(e) => setInputs(e.currentTarget.value)} />
        <label for="group-parallel">Runs at once</label>
        <input id="group-parallel" type="number" min={1} max={64} value={maxParallel} onInput={(e) => setMaxParallel(e.currentTarget.value)} />
        <div class="buttons">
          <button type="submit" disabled={action.busy}>Start group</button>
        </div>
        <ErrorNote message={action.error} />
      </form>
    </section>
  );
}

export function GroupPage(props: { groupId: string }) {
  const { groups } = useSession();
  const [offset, setOffset] = useState(0);
  const group = useLoad(() => groups.get(props.groupId), [groups, props.groupId], REFRESH_MS);
  const done = group.data ? progressOf(group.data).done : 0;
  const rows = useLoad(() => groups.rows(props.groupId, offset, ROWS_PER_PAGE), [groups, props.groupId, offset, done]);
  const action = useAction();
  const act = (call: () => Promise<Group>) => action.run(async () => {
    await call();
    group.reload();
  });
  const download = (format: 'csv' | 'jsonl') => action.run(async () => saveFile(`${props.groupId}.${format}`, await groups.export(props.groupId, format), EXPORT_TYPES[format]));

  const data = group.data;
  const page = rows.data;
  const fields = page ? [...new Set(page.rows.flatMap((r) => Object.keys(r).filter((k) => !k.startsWith('_'))))] : [];
  const tableRows: SourcedRow[] = page?.rows.map((r) => ({ ...r, _status: r._run.status })) ?? [];
  return (
    <article>
      <PageTitle>{data?.name ?? props.groupId}</PageTitle>
      <ErrorNote message={group.error} />
      {data && (
        <>
          <p class="card-meta">
            <StatusBadge status={data.status} />
            <span class="mono">{data.group_id}</span>
            <span>{data.inputs} inputs{data.duplicates ? ` (${data.duplicates} duplicates)` : ''}</span>
            <span>{credits(data.credits_used)} credits{data.max_credits !== null ? ` of ${credits(data.max_credits)}` : ''}</span>
            <span>started <Time at={data.created_at} /></span>
          </p>
          <Progress group={data} id="group-progress" />
          <div class="buttons">
            <button type="button" class="danger" disabled={action.busy || data.status !== 'running'} onClick={() => act(() => groups.stop(props.groupId))}>Stop group</button>
            <button type="button" class="secondary" disabled={action.busy || data.counts.failed === 0} onClick={() => act(() => groups.retry(props.groupId))}>Retry failed runs</button>
            <button type="button" class="secondary" disabled={action.busy} onClick={() => download('csv')}>Export CSV</button>
            <button type="button" class="secondary" disabled={action.busy} onClick={() => download('jsonl')}>Export JSONL</button>
          </div>
        </>
      )}
      <ErrorNote message={action.error ?? rows.error} />
      <h2>Rows</h2>
      {page && page.total === 0 && <p class="hint">No rows yet.</p>}
      {page && page.rows.length > 0 && (
        <RowsTable columns={['_input', ...fields, '_status']} rows={tableRows} caption="Merged rows of the group" rowKey={(_row, i) => String(offset + i)} />
      )}
      {page && <Pager offset={offset} perPage={ROWS_PER_PAGE} total={page.total} onChange={setOffset} />}
    </article>
  );
}
