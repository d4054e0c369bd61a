import { useRef, useState } from 'preact/hooks';
import type { ListTasksParams, Task } from './api.js';
import { useAction, useLoad, usePagedList } from './hooks.js';
import { Link } from './router.js';
import { useSession } from './session.js';
import { credits, duration, ErrorNote, PageTitle, ShowMore, StatusBadge, taskActivity, taskState, Time, toneOf } from './ui.js';

/** How often the list is read again while it is shown: statuses change as turns run. */
const REFRESH_MS = 3000;
const TASKS_PER_PAGE = 50;
/** The running tasks shown above the list: enough to see what is at work, not a second list. */
const RUNNING_SHOWN = 10;

type Filters = Partial<Pick<ListTasksParams, 'q' | 'state' | 'outcome' | 'created_after' | 'created_before'>>;

/** The filters the API takes, less the empty ones; a day from a date field is the whole day, in the reader's time zone. */
function query(form: { q: string; state: string; outcome: string; after: string; before: string }): Filters {
  const filters: Filters = {};
  if (form.q.trim()) filters.q = form.q.trim();
  if (form.state) filters.state = form.state as Filters['state'];
  if (form.outcome) filters.outcome = form.outcome as Filters['outcome'];
  if (form.after) filters.created_after = new Date(`${form.after}T00:00:00`).toISOString();
  if (form.before) filters.created_before = new Date(`${form.before}T23:59:59.999`).toISOString();
  return filters;
}

function TaskCard(props: { task: Task; onPin?: (task: Task) => void; pinBusy?: boolean }) {
  const { task } = props;
  const state = taskState(task);
  const last = task.last_turn;
  return (
    <li class={`card tone-${toneOf(state)}${task.pinned ? ' pinned' : ''}`}>
      <div class="card-head">
        <Link to={`/tasks/${encodeURIComponent(task.task_id)}`} class="card-title">{task.name ?? task.task_id}</Link>
        <StatusBadge status={state} />
        {task.pinned && <span class="hint">pinned</span>}
      </div>
      {/* Why it failed, where the failure is seen: the list, not only the task's log. */}
      {last?.error && !taskActivity(task) && <p class="card-reason">{last.error.message}</p>}
      <div class="card-meta">
        {task.name && <span class="mono">{task.task_id}</span>}
        <span>created <Time at={task.created_at} /></span>
        {last && !taskActivity(task) && (
          <span>
            last turn {last.outcome} <Time at={last.ended_at} />{last.started_at ? ` after ${duration(Date.parse(last.ended_at) - Date.parse(last.started_at))}` : ''}
          </span>
        )}
        <span>{task.output_count} output{task.output_count === 1 ? '' : 's'}</span>
        <span>{credits(task.credits_used)} credits</span>
        {task.cron && <span>cron {task.cron.expression}</span>}
      </div>
      {props.onPin && (
        <button type="button" class="pin secondary" aria-pressed={task.pinned} disabled={props.pinBusy} onClick={() => props.onPin!(task)}>
          {task.pinned ? 'Unpin' : 'Pin'}
          <span class="visually-hidden"> {task.name ?? task.task_id}</span>
        </button>
      )}
    </li>
  );
}

/**
 * The account's tasks, pinned first (the API's order), kept live by reading the list again; the
 * running ones also above it, so work under way is never buried. Search and filters are the
 * API's (`GET /task` with q, state, outcome, created_after, created_before).
 */
export function TaskList() {
  const { client } = useSession();
  const [form, setForm] = useState({ q: '', state: '', outcome: '', after: '', before: '' });
  const [filters, setFilters] = useState<Filters>({});
  const filtered = Object.keys(filters).length > 0;
  const list = usePagedList(
    (limit, cursor) => client.tasks.list({ limit, cursor, ...filters }),
    (task) => task.task_id,
    [client, JSON.stringify(filters)],
    { pageSize: TASKS_PER_PAGE, refreshMs: REFRESH_MS },
  );
  const running = useLoad(async () => (filtered ? undefined : (await client.tasks.list({ state: 'running', limit: RUNNING_SHOWN })).data), [client, filtered], REFRESH_MS);
  const cards = useRef<HTMLUListElement>(null);
  const pin = useAction();
  const togglePin = (task: Task) => pin.run(async () => {
    await client.tasks.update(task.task_id, { pinned: !task.pinned });
    list.reload();
  });
  const set = (field: keyof typeof form) => (e: { currentTarget: { value: string } }) => setForm({ ...form, [field]: e.currentTarget.value });
  const search = (e: Event) => {
    e.preventDefault();
    setFilters(query(form));
  };
  const clear = () => {
    setForm({ q: '', state: '', outcome: '', after: '', before: '' });
    setFilters({});
  };

  return (
    <section>
      <div class="title-row">
        <PageTitle>Tasks</PageTitle>
        <Link to="/new" class="button">New task</Link>
      </div>
      <form role="search" aria-label="Tasks" class="filters" onSubmit={search}>
        <div>
          <label for="task-q">Search</label>
          <input id="task-q" type="search" value={form.q} onInput={set('q')} placeholder="Words in the name or the prompt" />
        </div>
        <div>
          <label for="task-state">State</label>
          <select id="task-state" value={form.state} onChange={set('state')}>
            <option value="">any</option>
            <option value="running">running or waiting</option>
            <option value="idle">idle</option>
          </select>
        </div>
        <div>
          <label for="task-outcome">Last turn</label>
          <select id="task-outcome" value={form.outcome} onChange={set('outcome')}>
            <option value="">any</option>
            <option value="completed">completed</option>
            <option value="failed">failed</option>
            <option value="stopped">stopped</option>
          </select>
        </div>
        <div>
          <label for="task-after">Created from</label>
          <input id="task-after" type="date" value={form.after} onInput={set('after')} />
        </div>
        <div>
          <label for="task-before">Created until</label>
          <input id="task-before" type="date" value={form.before} onInput={set('before')} />
        </div>
        <div class="buttons">
          <button type="submit">Search</button>
          {filtered && <button type="button" class="secondary" onClick={clear}>Clear</button>}
        </div>
      </form>
      <ErrorNote message={list.error ?? pin.error ?? running.error} />
      {!filtered && running.data && running.data.length > 0 && (
        <>
          <h2>Running now</h2>
          <ul class="cards" aria-label="Running tasks">
            {running.data.map((task) => <TaskCard key={task.task_id} task={task} />)}
          </ul>
          <h2>All tasks</h2>
        </>
      )}
      {list.items && list.items.length === 0 && (filtered ? <p>No task matches. <button type="button" class="secondary small" onClick={clear}>Clear the filters</button></p> : <p>No tasks yet. <Link to="/new">Start one</Link>.</p>)}
      <ul class="cards" aria-label={filtered ? 'Matching tasks' : 'Tasks'} ref={cards}>
        {list.items?.map((task) => <TaskCard key={task.task_id} task={task} onPin={togglePin} pinBusy={pin.busy} />)}
      </ul>
      <ShowMore list={list} cards={cards} noun="tasks" />
    </section>
  );
}
