/**
 * Task groups (decisions §15.2): one spec run over many inputs. The list, a form to start one,
 * and a group's page, which follows the group's event stream: its progress as runs start and
 * end, and its merged rows read again as they grow.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { messageOf, type Group, type ListGroupsParams, type GroupDetail, type GroupEvent, type GroupRow } from './api.js';
import { saveFile, EXPORT_TYPES } from './download.js';
import { Sleeper, useAction, useLoad, usePagedList } from './hooks.js';
import { Link, navigate } from './router.js';
import { RowsTable, type ColumnGroup, type SourcedRow } from './rows-table.js';
import { useSession } from './session.js';
import { columnsOf, ColumnsEditor, newColumn, newOutput, OutputEditor, outputOf, type ColumnDraft, type OutputDraft } from './spec-editor.js';
import { cellText, credits, ErrorNote, PageTitle, Pager, ShowMore, StatusBadge, Time, toneOf, type Tone } from './ui.js';

/** How often the list is read again: the progress of its running groups. */
const LIST_REFRESH_MS = 4000;
const GROUPS_PER_PAGE = 50;
const ROWS_PER_PAGE = 50;
/**
 * The merged rows are read again at most this often while runs end (and once at the group's
 * `done`): a 1,000-run group ends runs faster than anyone reads a table.
 */
const ROWS_EVERY_MS = 2000;
/** The progress is drawn at most this often: a busy group, or the replay of its past, sends events faster than a screen shows them. */
const PAINT_MS = 250;
/** How often a group with nothing left to run is asked whether it runs again (inputs added, a retry elsewhere). */
const IDLE_POLL_MS = 5000;
/** How long a stream that gave up reconnecting waits before it is opened again. */
const RETRY_MS = 3000;

/** Runs that are over, of all runs. */
function progressOf(group: Group): { done: number; total: number } {
  const { pending, running, completed, failed, stopped } = group.counts;
  return { done: completed + failed + stopped, total: pending + running + completed + failed + stopped };
}

/** Whether a run is pending or running: a stopped group is busy too until its running runs have stopped. */
function busy(group: Group): boolean {
  return group.counts.pending + group.counts.running > 0;
}

/**
 * Where a group stands, in one word and its colour: running, stopped, or, once nothing is left to
 * run, how its runs ended: `finished` (green) only when every run completed, `failed` when none
 * did, and `finished, N failed` when some did not.
 */
export function groupState(group: Group): { word: string; tone: Tone } {
  const { completed, failed, stopped } = group.counts;
  if (group.status === 'running') return { word: 'running', tone: 'running' };
  if (group.status === 'stopped') return { word: 'stopped', tone: 'stopped' };
  if (failed > 0 && completed === 0) return { word: 'failed', tone: 'failed' };
  if (failed > 0) return { word: `finished, ${failed} failed`, tone: 'failed' };
  if (stopped > 0) return { word: `finished, ${stopped} stopped`, tone: 'stopped' };
  return { word: 'finished', tone: 'completed' };
}

const SEGMENTS = ['completed', 'failed', 'stopped', 'running', 'pending'] as const;

/**
 * The runs as one bar of their states, each in its colour (completed, failed, stopped, running;
 * pending is the empty track), with every count written beside it.
 */
function Progress(props: { group: Group; id: string }) {
  const { group } = props;
  const { done, total } = progressOf(group);
  return (
    <div class="progress">
      <label for={props.id}>{done} of {total} runs done</label>
      <progress id={props.id} class="visually-hidden" max={Math.max(total, 1)} value={done} />
      <div class="bar" aria-hidden="true">
        {SEGMENTS.filter((s) => s !== 'pending' && group.counts[s] > 0).map((s) => (
          <span key={s} class={`bar-part tone-${s === 'running' ? 'running' : s}`} style={{ width: `${(100 * group.counts[s]) / Math.max(total, 1)}%` }} />
        ))}
      </div>
      <span class="counts">
        {SEGMENTS.map((s, i) => (
          <span key={s} class={group.counts[s] > 0 ? `count tone-${s === 'pending' ? 'waiting' : s}` : 'count'}>
            {i > 0 ? ' · ' : ''}{group.counts[s]} {s}
          </span>
        ))}
      </span>
    </div>
  );
}

export function GroupList() {
  const { client } = useSession();
  const [form, setForm] = useState({ q: '', status: '' });
  const [filters, setFilters] = useState<ListGroupsParams>({});
  const filtered = Object.keys(filters).length > 0;
  const list = usePagedList(
    (limit, cursor) => client.groups.list({ limit, cursor, ...filters }),
    (group) => group.group_id,
    [client, JSON.stringify(filters)],
    { pageSize: GROUPS_PER_PAGE, refreshMs: LIST_REFRESH_MS },
  );
  const search = (e: Event) => {
    e.preventDefault();
    setFilters({ ...(form.q.trim() ? { q: form.q.trim() } : {}), ...(form.status ? { status: form.status as ListGroupsParams['status'] } : {}) });
  };
  const cards = useRef<HTMLUListElement>(null);
  return (
    <section>
      <div class="title-row">
        <PageTitle>Groups</PageTitle>
        <Link to="/groups/new" class="button">New group</Link>
      </div>
      {/* The API's own filters (`GET /group` with q and status). */}
      <form role="search" aria-label="Groups" class="filters" onSubmit={search}>
        <div>
          <label for="group-q">Search</label>
          <input id="group-q" type="search" value={form.q} onInput={(e) => setForm({ ...form, q: e.currentTarget.value })} placeholder="Words in the name" />
        </div>
        <div>
          <label for="group-status">Status</label>
          <select id="group-status" value={form.status} onChange={(e) => setForm({ ...form, status: e.currentTarget.value })}>
            <option value="">any</option>
            <option value="running">running</option>
            <option value="finished">finished</option>
            <option value="stopped">stopped</option>
          </select>
        </div>
        <div class="buttons">
          <button type="submit">Search</button>
          {filtered && <button type="button" class="secondary" onClick={() => { setForm({ q: '', status: '' }); setFilters({}); }}>Clear</button>}
        </div>
      </form>
      <ErrorNote message={list.error} />
      {list.items && list.items.length === 0 && (filtered ? <p>No group matches.</p> : <p>No groups yet. <Link to="/groups/new">Start one</Link>.</p>)}
      <ul class="cards" aria-label="Groups" ref={cards}>
        {list.items?.map((group) => (
          <li key={group.group_id} class="card">
            <div class="card-head">
              <Link to={`/groups/${encodeURIComponent(group.group_id)}`} class="card-title">{group.name ?? group.group_id}</Link>
              <StatusBadge status={groupState(group).word} tone={groupState(group).tone} />
            </div>
            <div class="card-meta">
              {group.name && <span class="mono">{group.group_id}</span>}
              <span>started <Time at={group.created_at} /></span>
            </div>
            <Progress group={group} id={`progress-${group.group_id}`} />
          </li>
        ))}
      </ul>
      <ShowMore list={list} cards={cards} noun="groups" />
    </section>
  );
}

/**
 * Inputs, one a line: a JSON object (`{"company": "Northvolt", "founded": 2016}`), or, when the
 * group has one input column, just its value (`Northvolt`): a list pasted from a spreadsheet's
 * column works as it is. The API converts a value given as text to its column's type.
 */
function parseInputs(text: string, columns: string[]): Record<string, unknown>[] {
  const only = columns.length === 1 ? columns[0] : undefined;
  return text.split('\n').map((line) => line.trim()).filter(Boolean).map((line, i) => {
    if (!line.startsWith('{') && only !== undefined) return { [only]: line };
    try {
      const value: unknown = JSON.parse(line);
      if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    } catch {
      // said below
    }
    throw new Error(`Input line ${i + 1} is not a JSON object${only === undefined ? ' (with more than one input column, a line names each value: {"column": value, …})' : ''}: ${line.slice(0, 80)}`);
  });
}

export function CreateGroup() {
  const { client } = useSession();
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
      const columns = columnsOf(inputColumns);
      const group = await client.groups.create({
        ...(name.trim() ? { name: name.trim() } : {}),
        task: { prompt, input_columns: columns, outputs: [outputOf(output)] },
        inputs: parseInputs(inputs, columns.map((c) => c.name)),
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
        <label for="group-inputs">Inputs, one per line</label>
        <textarea id="group-inputs" rows={8} required class="mono" aria-describedby="group-inputs-hint" value={inputs} onInput={(e) => setInputs(e.currentTarget.value)} />
        <p id="group-inputs-hint" class="hint">
          Each line a JSON object of input columns, <code>{'{"company": "Northvolt"}'}</code>; with one input column, just its value, <code>Northvolt</code>. Up to 1,000.
        </p>
        <label for="group-parallel">Runs at once</label>
        <input id="group-parallel" type="number" min={1} max={256} value={maxParallel} onInput={(e) => setMaxParallel(e.currentTarget.value)} />
        <div class="buttons">
          <button type="submit" disabled={action.busy}>Start group</button>
        </div>
        <ErrorNote message={action.error} />
      </form>
    </section>
  );
}

/**
 * Calls `fn` at most once every `ms` (counting from when it was made), at the end of the wait:
 * the requests of a burst become one call.
 */
function throttle(fn: () => void, ms: number): { request: () => void; now: () => void; cancel: () => void } {
  let last = Date.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const run = () => {
    timer = undefined;
    last = Date.now();
    fn();
  };
  return {
    request: () => {
      if (timer === undefined) timer = setTimeout(run, Math.max(0, last + ms - Date.now()));
    },
    now: () => {
      clearTimeout(timer);
      run();
    },
    cancel: () => clearTimeout(timer),
  };
}

interface LiveGroup {
  group: GroupDetail | undefined;
  error: string | undefined;
  /** Bumped when the merged rows may have grown (runs ended). */
  rowsVersion: number;
  /** Says the group was just changed here (retried): follow it now rather than at the next poll. */
  wake: () => void;
}

/**
 * The group, followed by its event stream while a run is pending or running. The stream says
 * exactly how the counts move (a `run` event: pending to running, or running to how it ended;
 * a `group` or `done` event: the whole group), so the progress is counted from it rather than
 * read again. When nothing is left to run, the group is asked now and then whether it runs
 * again, and followed from the last event seen when it does. Leaving the page closes the stream.
 */
function useLiveGroup(groupId: string): LiveGroup {
  const { client } = useSession();
  const [group, setGroup] = useState<GroupDetail | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [rowsVersion, setRowsVersion] = useState(0);
  const [sleeper] = useState(() => new Sleeper());

  useEffect(() => {
    const abort = new AbortController();
    const { signal } = abort;
    /** The group as the events so far left it. */
    let current: GroupDetail | undefined;
    /** The last event seen: a stream opened again goes on from it, so no event counts twice. */
    let lastEventId: number | undefined;
    const paint = throttle(() => current && setGroup(current), PAINT_MS);
    const rows = throttle(() => {
      setRowsVersion((v) => v + 1);
      // A run's credits count when it ends, and a `run` event does not carry them: read them with
      // the rows. They only grow, so an answer overtaken by a `done` cannot lower them.
      client.groups.get(groupId, { signal }).then((fresh) => {
        if (!current || signal.aborted) return;
        current = { ...current, credits_used: Math.max(current.credits_used, fresh.credits_used) };
        paint.request();
      }, () => undefined);
    }, ROWS_EVERY_MS);

    const take = (event: GroupEvent) => {
      if (!current) return;
      if (event.type === 'run') {
        const counts = { ...current.counts };
        if (event.status === 'running') counts.pending -= 1;
        else {
          counts.running -= 1;
          // Its rows are merged when it ends.
          rows.request();
        }
        counts[event.status] += 1;
        current = { ...current, counts, updated_at: event.at };
      } else {
        // A replay from the group's start passes its old snapshots: credits only grow, so the
        // ones already read stand.
        current = { ...current, ...event.group, credits_used: Math.max(current.credits_used, event.group.credits_used) };
        if (event.type === 'done') rows.now();
      }
      paint.request();
    };

    const load = async () => {
      current = await client.groups.get(groupId, { signal });
      setGroup(current);
      while (!signal.aborted) {
        try {
          if (busy(current)) {
            // From the first event (the group's creation) when none was seen yet: the counts
            // are then built from the start, not added to the ones just read.
            const stream = client.groups.stream(groupId, { lastEventId }, { signal });
            for await (const event of stream) {
              lastEventId = event.seq;
              take(event);
            }
            setError(undefined);
            // It ends at the group's latest `done`. An end without one (nothing new after the
            // last event seen) means the group was idle after all: read it, and wait a moment
            // should it still look busy.
            if (busy(current)) {
              current = await client.groups.get(groupId, { signal });
              setGroup(current);
              if (busy(current)) await sleeper.sleep(RETRY_MS);
            }
          } else {
            await sleeper.sleep(IDLE_POLL_MS);
            if (signal.aborted) return;
            const fresh = await client.groups.get(groupId, { signal });
            setError(undefined);
            // Running again: the stream takes it from here, its first new event being the
            // snapshot of what changed (inputs added, a retry).
            current = fresh;
            if (!busy(fresh)) setGroup(fresh);
          }
        } catch (err) {
          if (signal.aborted) return;
          setError(messageOf(err));
          await sleeper.sleep(RETRY_MS);
        }
      }
    };
    load().catch((err: unknown) => {
      if (!signal.aborted) setError(messageOf(err));
    });
    return () => {
      abort.abort();
      paint.cancel();
      rows.cancel();
    };
  }, [client, groupId]);

  return { group, error, rowsVersion, wake: () => sleeper.wake() };
}

/** The run's task page, named for its input and saying how the run stands. */
function RunLink(props: { row: GroupRow }) {
  const { _input, _run } = props.row;
  return (
    <Link to={`/tasks/${encodeURIComponent(_run.task_id)}`} class={`run tone-${toneOf(_run.status)}`} aria-label={`Run of input ${_input}: ${_run.status}`}>
      {_run.status}
    </Link>
  );
}

/**
 * The merged rows: the input's index, the input's columns, the output's columns (with their
 * source marks), and the run. Read again when `version` says runs ended.
 */
function GroupRows(props: { group: GroupDetail; version: number }) {
  const { client } = useSession();
  const { group_id: groupId, spec } = props.group;
  const [offset, setOffset] = useState(0);
  const page = useLoad(() => client.groups.rows(groupId, { offset, limit: ROWS_PER_PAGE }), [client, groupId, offset, props.version]);
  // A failed read leaves the rows read before in place, under the API's message.
  if (!page.data) return <ErrorNote message={page.error} />;
  if (page.data.total === 0) return <p class="hint">No rows yet: a run's rows are merged here when it ends.</p>;

  const { rows, total } = page.data;
  const output = spec.outputs.find((o) => o.kind === 'table') ?? spec.outputs[0];
  const inputs = spec.input_columns?.map((c) => c.name) ?? [];
  const declared = new Set([...inputs, ...(output?.columns?.map((c) => c.name) ?? [])]);
  // Fields the spec does not name (none, as the API checks rows) are shown with the output's rather than hidden.
  const outputs = [...(output?.columns?.map((c) => c.name) ?? []), ...new Set(rows.flatMap((r) => Object.keys(r).filter((k) => !k.startsWith('_') && !declared.has(k))))];
  const groups: ColumnGroup[] = [
    { columns: [{ key: '_input' }] },
    // An input is given, not researched: sources mark the output's cells only.
    { label: 'Input', class: 'input-columns', columns: inputs.map((key) => ({ key, sourced: false })) },
    { label: `Output: ${output?.id ?? ''}`, columns: outputs.map((key) => ({ key })) },
    { columns: [{ key: '_run', render: (row) => <RunLink row={row as GroupRow} /> }] },
  ];
  // A run's rows keep their keys while other runs' rows are merged around them (an open sources panel stays on its row).
  const seen = new Map<string, number>();
  const keys = rows.map((r) => {
    const n = seen.get(r._run.task_id) ?? 0;
    seen.set(r._run.task_id, n + 1);
    return `${r._run.task_id}/${n}`;
  });
  return (
    <>
      <ErrorNote message={page.error} />
      <RowsTable groups={groups} rows={rows as SourcedRow[]} caption="Merged rows of the group" rowKey={(_row, i) => keys[i]!} />
      <Pager offset={offset} perPage={ROWS_PER_PAGE} total={total} onChange={setOffset} />
    </>
  );
}

const RUNS_PER_PAGE = 20;
const RUN_FILTERS = { all: 'all', failed: 'failed', stopped: 'stopped', pending: 'pending', running: 'running', completed: 'completed' } as const;
type RunFilter = keyof typeof RUN_FILTERS;

/**
 * Every run of the group, rows or not (`GET /group/{id}/runs`), in input order: its input, its
 * status and, when it failed, why; each that has started opens its task's page. Failed,
 * stopped and pending runs are one choice away. Read again as the group's runs end (`version`).
 */
function GroupRuns(props: { groupId: string; version: number }) {
  const { client } = useSession();
  const [filter, setFilter] = useState<RunFilter>('all');
  const list = usePagedList(
    (limit, cursor) => client.groups.runs(props.groupId, { limit, cursor, ...(filter === 'all' ? {} : { status: filter }) }),
    (run) => String(run.input_index),
    [client, props.groupId, filter, props.version],
    { pageSize: RUNS_PER_PAGE, refreshMs: LIST_REFRESH_MS },
  );
  const cards = useRef<HTMLTableSectionElement>(null);
  return (
    <section aria-labelledby="runs-title">
      <h2 id="runs-title">Runs</h2>
      <fieldset class="choice inline">
        <legend>Show</legend>
        {(Object.keys(RUN_FILTERS) as RunFilter[]).map((f) => (
          <label class="check" key={f}>
            <input type="radio" name="run-filter" checked={filter === f} onChange={() => setFilter(f)} /> {RUN_FILTERS[f]}
          </label>
        ))}
      </fieldset>
      <ErrorNote message={list.error} />
      {list.items && list.items.length === 0 && <p class="hint">No {filter === 'all' ? '' : `${RUN_FILTERS[filter]} `}runs.</p>}
      {list.items && list.items.length > 0 && (
        <div class="table-scroll" role="region" aria-label="Runs of the group" tabIndex={0}>
          <table class="runs">
            <caption class="visually-hidden">Runs of the group</caption>
            <thead>
              <tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Input</th><th scope="col">Why it failed</th><th scope="col">Updated</th><th scope="col">Credits</th></tr>
            </thead>
            <tbody ref={cards}>
              {list.items.map((run) => (
                <tr key={run.input_index}>
                  <td>
                    {/* A run that never started has no task to open. */}
                    {run.task_id ? <Link to={`/tasks/${encodeURIComponent(run.task_id)}`}>Input {run.input_index}</Link> : <span>Input {run.input_index}</span>}
                  </td>
                  <td><StatusBadge status={run.status} /></td>
                  <td>{Object.entries(run.input).map(([column, value]) => `${column}: ${cellText(value)}`).join(', ')}</td>
                  <td class="reason">{run.error?.message}</td>
                  <td><Time at={run.updated_at} /></td>
                  <td>{credits(run.credits_used)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ShowMore list={list} cards={cards} noun="runs" />
    </section>
  );
}

export function GroupPage(props: { groupId: string }) {
  const { client } = useSession();
  const live = useLiveGroup(props.groupId);
  const action = useAction();
  const download = (format: 'csv' | 'jsonl') => action.run(async () => {
    const file = await client.groups.export(props.groupId, format);
    saveFile(file.filename ?? `${props.groupId}.${format}`, await file.text(), EXPORT_TYPES[format]);
  });

  const [newCap, setNewCap] = useState('');
  const retry = (include: ('failed' | 'stopped')[]) => action.run(async () => {
    const cap = include.includes('stopped') && newCap.trim() !== '' ? { max_credits: Number(newCap) } : {};
    await client.groups.retry(props.groupId, { include, ...cap });
    live.wake();
  });
  const data = live.group;
  return (
    <article>
      <PageTitle tabTitle={`${data ? `${groupState(data).word} · ` : ''}${data?.name ?? props.groupId}`}>{data?.name ?? props.groupId}</PageTitle>
      <ErrorNote message={live.error} />
      {data && (
        <>
          <p class="card-meta">
            {/* Said when it changes (finished, stopped); the counts below change too often to be read out. */}
            <span aria-live="polite"><StatusBadge status={groupState(data).word} tone={groupState(data).tone} /></span>
            <span class="mono">{data.group_id}</span>
            <span>{data.inputs} inputs{data.duplicates ? ` (${data.duplicates} duplicates)` : ''}</span>
            <span>{credits(data.credits_used)} credits{data.max_credits !== null ? ` of ${credits(data.max_credits)}` : ''}</span>
            <span>started <Time at={data.created_at} /></span>
          </p>
          <Progress group={data} id="group-progress" />
          <div class="buttons">
            {/* The stream brings what a stop does; a retry of a finished group is followed at once. */}
            <button type="button" class="danger" disabled={action.busy || data.status !== 'running'} onClick={() => action.run(() => client.groups.stop(props.groupId))}>Stop group</button>
            <button type="button" class="secondary" disabled={action.busy || data.counts.failed === 0} onClick={() => retry(['failed'])}>Retry failed runs</button>
            {/* Runs stopped by the group's stop or its credit cap: run again, under a new cap when one is given. */}
            <button type="button" class="secondary" disabled={action.busy || data.counts.stopped === 0} onClick={() => retry(['stopped'])}>Retry stopped runs</button>
            {data.max_credits !== null && data.counts.stopped > 0 && (
              <label class="inline-field">
                New credit cap <input type="number" min={0} step="any" value={newCap} onInput={(e) => setNewCap(e.currentTarget.value)} placeholder={credits(data.max_credits)} />
              </label>
            )}
            <button type="button" class="secondary" disabled={action.busy} onClick={() => download('csv')}>Export CSV</button>
            <button type="button" class="secondary" disabled={action.busy} onClick={() => download('jsonl')}>Export JSONL</button>
          </div>
        </>
      )}
      <ErrorNote message={action.error} />
      {data && <GroupRuns groupId={props.groupId} version={live.rowsVersion} />}
      <h2>Rows</h2>
      {data && <GroupRows group={data} version={live.rowsVersion} />}
    </article>
  );
}
