/**
 * One task: what it is doing, live (its stored events, then its stream while a turn runs), its
 * rows with their sources, and what can be done to it (continue, stop, execute, export).
 */
import { useEffect, useState } from 'preact/hooks';
import { messageOf, type OutputInfo, type Task, type TaskEvent } from './api.js';
import { saveFile, EXPORT_TYPES } from './download.js';
import { EventLog } from './event-log.js';
import { Sleeper, useAction, useLoad } from './hooks.js';
import { Link } from './router.js';
import { plainColumns, RowsTable } from './rows-table.js';
import { useSession } from './session.js';
import { credits, ErrorNote, PageTitle, Pager, StatusBadge, taskActivity, Time } from './ui.js';

/** How often an idle task is asked whether a turn started (a cron tick, another client). */
const IDLE_POLL_MS = 3000;
/** How long a broken stream waits before it is opened again. */
const RETRY_MS = 3000;
const ROWS_PER_PAGE = 50;

interface Live {
  task: Task | undefined;
  events: TaskEvent[];
  error: string | undefined;
  /** Bumped when rows may have been written (a write_rows call, a turn's end). */
  rowsVersion: number;
  /** Says a turn was just started here: follow it now rather than at the next poll. */
  wake: () => void;
}

/** The task's events: the stored history, then its stream whenever a turn runs. */
function useLiveTask(taskId: string): Live {
  const { client } = useSession();
  const [task, setTask] = useState<Task | undefined>(undefined);
  const [events, setEvents] = useState<TaskEvent[]>([]);
  const [error, setError] = useState<string | undefined>(undefined);
  const [rowsVersion, setRowsVersion] = useState(0);
  const [sleeper] = useState(() => new Sleeper());

  useEffect(() => {
    const abort = new AbortController();
    const { signal } = abort;
    let lastSeq = 0;
    const take = (batch: TaskEvent[]) => {
      const fresh = batch.filter((e) => e.seq === undefined || e.seq > lastSeq);
      for (const e of fresh) if (e.seq !== undefined) lastSeq = e.seq;
      if (fresh.length > 0) setEvents((prev) => [...prev, ...fresh.filter((e) => e.seq !== undefined)]);
      for (const e of fresh) {
        if (e.type === 'task') setTask(e.task);
        if ((e.type === 'tool' && e.rows) || e.type === 'done') setRowsVersion((v) => v + 1);
      }
    };

    (async () => {
      setTask(await client.tasks.retrieve(taskId, {}, { signal }));
      const history: TaskEvent[] = [];
      for await (const event of client.tasks.events(taskId, { limit: 1000 }, { signal })) history.push(event);
      take(history);
      while (!signal.aborted) {
        try {
          const state = await client.tasks.state(taskId, {}, { signal });
          setError(undefined);
          if (!state.active) {
            await sleeper.sleep(IDLE_POLL_MS);
            continue;
          }
          // From the last event seen: a replay from the start would end at the first idle turn's end.
          for await (const event of client.tasks.stream(taskId, { after: lastSeq }, { signal })) take([event]);
        } catch (err) {
          if (signal.aborted) return;
          setError(messageOf(err));
          await sleeper.sleep(RETRY_MS);
        }
      }
    })().catch((err: unknown) => {
      if (!signal.aborted) setError(messageOf(err));
    });
    return () => abort.abort();
  }, [client, taskId]);

  return { task, events, error, rowsVersion, wake: () => sleeper.wake() };
}

function Actions(props: { taskId: string; active: boolean; onStarted: () => void }) {
  const { client } = useSession();
  const [message, setMessage] = useState('');
  const action = useAction();
  const send = async (e: Event) => {
    e.preventDefault();
    const ok = await action.run(async () => {
      await client.tasks.continue(props.taskId, { message });
      props.onStarted();
    });
    if (ok) setMessage('');
  };
  return (
    <section class="actions" aria-label="Actions">
      <form onSubmit={send} class="continue">
        <label for="message">Message</label>
        <textarea id="message" rows={2} value={message} onInput={(e) => setMessage(e.currentTarget.value)} placeholder="What to change, add or continue" />
        <button type="submit" disabled={action.busy || message.trim() === ''}>{props.active ? 'Queue message' : 'Continue'}</button>
      </form>
      <div class="buttons">
        <button type="button" class="danger" disabled={action.busy || !props.active} onClick={() => action.run(() => client.tasks.stop(props.taskId))}>Stop</button>
        <button type="button" class="secondary" disabled={action.busy || props.active} onClick={() => action.run(async () => {
          await client.tasks.execute(props.taskId);
          props.onStarted();
        })}>Execute again</button>
      </div>
      <ErrorNote message={action.error} />
    </section>
  );
}

function Rows(props: { taskId: string; version: number }) {
  const { client } = useSession();
  const [chosen, setChosen] = useState<string | undefined>(undefined);
  const [offset, setOffset] = useState(0);
  const outputs = useLoad(() => client.tasks.outputs(props.taskId), [client, props.taskId, props.version]);
  const output: OutputInfo | undefined = outputs.data?.find((o) => o.id === chosen) ?? outputs.data?.find((o) => o.row_count > 0) ?? outputs.data?.[0];
  const page = useLoad(
    async () => (output ? client.tasks.output(props.taskId, { output: output.id, offset, limit: ROWS_PER_PAGE }) : undefined),
    [client, props.taskId, output?.id, output?.row_count, offset],
  );
  const exporting = useAction();
  const download = (format: 'csv' | 'jsonl') => exporting.run(async () => {
    if (!output) return;
    const file = await client.tasks.export(props.taskId, { output: output.id, format });
    saveFile(file.filename ?? `${props.taskId}-${output.id}.${format}`, await file.text(), EXPORT_TYPES[format]);
  });

  if (outputs.error) return <ErrorNote message={outputs.error} />;
  if (!outputs.data) return <p class="hint">Loading outputs…</p>;
  if (!output) return <p class="hint">No outputs declared yet: the agent declares them while it plans.</p>;
  const rows = page.data?.rows ?? [];
  const columns = ['_row', ...(output.columns?.map((c) => c.name) ?? [...new Set(rows.flatMap((r) => Object.keys(r).filter((k) => !k.startsWith('_'))))])];
  return (
    <>
      <div class="toolbar">
        {outputs.data.length > 1 && (
          <label>
            Output{' '}
            <select value={output.id} onChange={(e) => { setChosen(e.currentTarget.value); setOffset(0); }}>
              {outputs.data.map((o) => <option key={o.id} value={o.id}>{o.id} ({o.row_count})</option>)}
            </select>
          </label>
        )}
        <span>
          {output.row_count} row{output.row_count === 1 ? '' : 's'} · {output.verified_rows} verified · {output.unverified_rows} not
        </span>
        <button type="button" class="secondary" disabled={exporting.busy || output.row_count === 0} onClick={() => download('csv')}>Export CSV</button>
        <button type="button" class="secondary" disabled={exporting.busy || output.row_count === 0} onClick={() => download('jsonl')}>Export JSONL</button>
      </div>
      <ErrorNote message={page.error ?? exporting.error} />
      {output.kind !== 'table' && output.row_count > 0 && <p class="hint">A {output.kind} output: each row's fields are shown as columns.</p>}
      {rows.length > 0 && <RowsTable groups={plainColumns(columns)} rows={rows} caption={`Rows of ${output.id}`} rowKey={(row) => String(row._row)} />}
      <Pager offset={offset} perPage={ROWS_PER_PAGE} total={output.row_count} onChange={setOffset} />
    </>
  );
}

export function TaskPage(props: { taskId: string }) {
  const live = useLiveTask(props.taskId);
  const { task } = live;
  return (
    <article class="task">
      <PageTitle>{task?.name ?? props.taskId}</PageTitle>
      <p class="card-meta" aria-live="polite">
        <StatusBadge status={task ? taskActivity(task) : 'loading'} />
        <span class="mono">{props.taskId}</span>
        {/* A group's run: the way back to its group (a run is left out of the task list). */}
        {task?.group_id && (
          <span>
            run of input {task.input_index} in <Link to={`/groups/${encodeURIComponent(task.group_id)}`} class="mono">{task.group_id}</Link>
          </span>
        )}
        {task && <span>{credits(task.credits_used)} credits</span>}
        {task && task.queued_messages > 0 && <span>{task.queued_messages} queued</span>}
        {task && <span>updated <Time at={task.updated_at} /></span>}
      </p>
      <ErrorNote message={live.error} />
      {/* A task is in `execute` while a turn runs or waits for a worker: then it can be stopped, and a message is queued. */}
      <Actions taskId={props.taskId} active={task?.status === 'execute'} onStarted={live.wake} />
      <div class="task-grid">
        <section aria-labelledby="activity-title" class="panel">
          <h2 id="activity-title">Activity</h2>
          <EventLog events={live.events} />
        </section>
        <section aria-labelledby="rows-title" class="panel">
          <h2 id="rows-title">Rows</h2>
          <Rows taskId={props.taskId} version={live.rowsVersion} />
        </section>
      </div>
    </article>
  );
}
