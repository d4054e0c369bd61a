/**
 * One task: how its last turn ended (and why, when it failed), what it was asked (the prompt, the
 * spec, the caller's messages), what it is doing, live (its stored events, then its stream while
 * a turn runs), its rows with their sources, and what can be done to it (continue, stop,
 * execute, export).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { messageOf, QuarryError, type DoneEvent, type OutputInfo, type Task, type TaskEvent, type TaskSpec } from './api.js';
import { saveFile, EXPORT_TYPES } from './download.js';
import { Changes } from './changes.js';
import { EventLog } from './event-log.js';
import { Sleeper, useAction, useLoad } from './hooks.js';
import { Link } from './router.js';
import { plainColumns, RowsTable } from './rows-table.js';
import { useSession } from './session.js';
import { SpecView } from './spec-view.js';
import { credits, duration, ErrorNote, PageTitle, Pager, StatusBadge, taskState, Time, toneOf } from './ui.js';

/** How often an idle task is asked whether a turn started (a cron tick, another client). */
const IDLE_POLL_MS = 3000;
/** How long a broken stream waits before it is opened again. */
const RETRY_MS = 3000;
const ROWS_PER_PAGE = 50;

interface Live {
  task: Task | undefined;
  spec: TaskSpec | undefined;
  /** The API's message when there is no such task (or not for this key). */
  missing: string | undefined;
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
  const [spec, setSpec] = useState<TaskSpec | undefined>(undefined);
  const [missing, setMissing] = useState<string | undefined>(undefined);
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
        // The agent (or a PATCH) changed the spec: read it again, as events carry only the task.
        if (e.type === 'task' && e.reason === 'updated' && e.seq !== undefined) void client.tasks.retrieve(taskId, {}, { signal }).then((d) => setSpec(d.spec), () => undefined);
        if ((e.type === 'tool' && e.rows) || e.type === 'done') setRowsVersion((v) => v + 1);
      }
    };

    (async () => {
      let detail;
      try {
        detail = await client.tasks.retrieve(taskId, {}, { signal });
      } catch (err) {
        if (err instanceof QuarryError && err.status === 404) {
          setMissing(messageOf(err));
          return;
        }
        throw err;
      }
      setTask(detail);
      setSpec(detail.spec);
      // A deleted task's history is read from its detail (its last 100 events): its event pages are gone.
      if (detail.status === 'deleted') {
        take(detail.events);
        return;
      }
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

  return { task, spec, missing, events, error, rowsVersion, wake: () => sleeper.wake() };
}

function Actions(props: { task: Task; planned: boolean; onStarted: () => void }) {
  const { client } = useSession();
  const { task } = props;
  const taskId = task.task_id;
  // A task is in `execute` while a turn runs or waits for a worker: then it can be stopped, and a message is queued.
  const active = task.status === 'execute';
  const [message, setMessage] = useState('');
  const [sent, setSent] = useState<string | undefined>(undefined);
  const box = useRef<HTMLTextAreaElement>(null);
  const action = useAction();
  const send = async (e: Event) => {
    e.preventDefault();
    setSent(undefined);
    const ok = await action.run(async () => {
      await client.tasks.continue(taskId, { message });
      props.onStarted();
    });
    if (ok) {
      setMessage('');
      setSent(active ? 'Message queued: it starts a turn when the running one ends.' : 'Message sent: a turn starts on it.');
    }
    // The button is disabled until the next message is written: the focus stays in the box, ready for it.
    box.current?.focus();
  };
  const stop = (clearQueue: boolean) => action.run(() => client.tasks.stop(taskId, clearQueue ? { clear_queue: true } : {}));
  return (
    <section class="actions" aria-label="Actions">
      <form onSubmit={send} class="continue">
        <label for="message">Message</label>
        <textarea id="message" ref={box} rows={2} value={message} onInput={(e) => setMessage(e.currentTarget.value)} placeholder="What to change, add or continue" />
        <button type="submit" disabled={action.busy || message.trim() === ''}>{active ? 'Queue message' : 'Continue'}</button>
      </form>
      <div class="buttons">
        <button type="button" class="danger" disabled={action.busy || !active} onClick={() => stop(false)}>Stop</button>
        {/* A stop ends the running turn only: a queued message would start the next at once. */}
        {active && task.queued_messages > 0 && (
          <button type="button" class="danger" disabled={action.busy} onClick={() => stop(true)}>
            Stop and drop {task.queued_messages} queued message{task.queued_messages === 1 ? '' : 's'}
          </button>
        )}
        <button type="button" class={props.planned ? undefined : 'secondary'} disabled={action.busy || active} onClick={() => action.run(async () => {
          await client.tasks.execute(taskId);
          props.onStarted();
        })}>{props.planned ? 'Execute the plan' : 'Execute again'}</button>
        {active && task.queued_messages > 0 && <span class="hint">{task.queued_messages} message{task.queued_messages === 1 ? '' : 's'} queued: Stop ends this turn and the next starts on the first of them.</span>}
      </div>
      <p role="status" class="hint">{sent}</p>
      <ErrorNote message={action.error} />
    </section>
  );
}

/** How the last turn ended, and why when it failed: the first thing a reader of an idle task needs. */
function LastTurn(props: { task: Task; events: readonly TaskEvent[] }) {
  const last = props.task.last_turn;
  if (!last) return null;
  // The turn's `done` tells the rows it wrote, when it is among the events read.
  const done = props.events.find((e): e is DoneEvent => e.type === 'done' && e.turn_id === last.turn_id);
  const took = last.started_at ? ` after ${duration(Date.parse(last.ended_at) - Date.parse(last.started_at))}` : '';
  const rows = done?.rows_written !== undefined ? `; ${done.rows_written} row${done.rows_written === 1 ? '' : 's'} written, ${done.verified_rows ?? 0} verified` : '';
  return (
    <div class={`outcome tone-${toneOf(last.outcome)}`} role={last.outcome === 'failed' ? 'alert' : undefined}>
      <p>
        <strong>Last turn {last.outcome}</strong> at <Time at={last.ended_at} />{took} · {credits(last.credits_used)} credits{rows}
      </p>
      {last.error && <p>{last.error.message}</p>}
    </div>
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
        {/* The output's cells by support (decisions §17.1): a value in a verified quote, in none, or not checked. */}
        <span>
          cells: {output.supported_cells} in a quote · {output.unsupported_cells} in none · {output.unchecked_cells} not checked
        </span>
        <button type="button" class="secondary" disabled={exporting.busy || output.row_count === 0} onClick={() => download('csv')}>Export CSV</button>
        <button type="button" class="secondary" disabled={exporting.busy || output.row_count === 0} onClick={() => download('jsonl')}>Export JSONL</button>
      </div>
      <ErrorNote message={page.error ?? exporting.error} />
      {output.kind !== 'table' && output.row_count > 0 && <p class="hint">A {output.kind} output: each row's fields are shown as columns.</p>}
      {(rows.length > 0 || columns.length > 1) && <RowsTable groups={plainColumns(columns)} rows={rows} caption={`Rows of ${output.id}`} rowKey={(row) => String(row._row)} empty="No rows yet." />}
      <Pager offset={offset} perPage={ROWS_PER_PAGE} total={output.row_count} onChange={setOffset} />
    </>
  );
}

export function TaskPage(props: { taskId: string }) {
  const live = useLiveTask(props.taskId);
  const { task, spec, events } = live;
  // A task that never entered the execute phase has only planned: its plan waits for Execute.
  const planned = events.length > 0 && !events.some((e) => e.type === 'task' && e.task.phase === 'execute');
  const state = task ? taskState(task, planned) : undefined;
  const tabTitle = `${state ? `${state} · ` : ''}${task?.name ?? props.taskId}`;
  if (live.missing) {
    return (
      <article class="task">
        <PageTitle>No such task</PageTitle>
        <p class="error" role="alert">{live.missing}</p>
        <p><Link to="/">Back to the tasks</Link></p>
      </article>
    );
  }
  const deleted = task?.status === 'deleted';
  return (
    <article class="task">
      <PageTitle tabTitle={tabTitle}>{task?.name ?? props.taskId}</PageTitle>
      <p class="card-meta">
        {state && <StatusBadge status={state} />}
        <span class="mono">{props.taskId}</span>
        {/* A group's run: the way back to its group (a run is left out of the task list). */}
        {task?.group_id && (
          <span>
            run of input {task.input_index} in <Link to={`/groups/${encodeURIComponent(task.group_id)}`} class="mono">{task.group_id}</Link>
          </span>
        )}
        {task && <span>created <Time at={task.created_at} /></span>}
        {task && <span>{credits(task.credits_used)} credits</span>}
        {/* Of the task's checked cells, how many a verified source's quote holds (decisions §17.1). */}
        {typeof task?.citation_accuracy === 'number' && <span>citation accuracy {Math.round(task.citation_accuracy * 100)}%</span>}
        {task && task.queued_messages > 0 && <span>{task.queued_messages} queued</span>}
        {task?.cron && <span>next run <Time at={task.cron.next_run_at} /></span>}
      </p>
      <ErrorNote message={live.error} />
      {!task && !live.error && <p class="hint">Loading the task…</p>}
      {deleted && <p class="outcome tone-stopped">This task was deleted: its last events are shown, and nothing more can be done to it.</p>}
      {task && !deleted && task.status !== 'execute' && <LastTurn task={task} events={events} />}
      {task && !deleted && <Actions task={task} planned={planned} onStarted={live.wake} />}
      {task && (
        <div class="task-grid">
          <section aria-labelledby="activity-title" class="panel">
            <h2 id="activity-title">Activity</h2>
            {spec && (
              <details class="spec-box" open={planned}>
                <summary>{planned ? 'The plan' : 'Spec'}: {spec.outputs.length} output{spec.outputs.length === 1 ? '' : 's'}, citations {spec.citations ?? 'flag'}{spec.schedule ? `, every ${spec.schedule.cron}` : ''}</summary>
                <SpecView spec={spec} />
              </details>
            )}
            <EventLog events={events} prompt={spec?.prompt} />
          </section>
          <div class="stack">
            <section aria-labelledby="rows-title" class="panel">
              <h2 id="rows-title">Rows</h2>
              <Rows taskId={props.taskId} version={live.rowsVersion} />
            </section>
            {/* A keyed output keeps its rows by key: what each turn added and changed is listed (decisions §19). */}
            {spec?.outputs.some((o) => o.key && o.key.length > 0) && (
              <section aria-labelledby="changes-title" class="panel">
                <h2 id="changes-title">Changes</h2>
                <Changes taskId={props.taskId} version={live.rowsVersion} />
              </section>
            )}
          </div>
        </div>
      )}
    </article>
  );
}
