import { useRef } from 'preact/hooks';
import type { Task } from './api.js';
import { useAction, usePagedList } from './hooks.js';
import { Link } from './router.js';
import { useSession } from './session.js';
import { credits, ErrorNote, PageTitle, ShowMore, StatusBadge, taskActivity, Time } from './ui.js';

/** How often the list is read again while it is shown: statuses change as turns run. */
const REFRESH_MS = 3000;
const TASKS_PER_PAGE = 50;

/** The account's tasks, pinned first (the API's order), kept live by reading the list again. */
export function TaskList() {
  const { client } = useSession();
  const list = usePagedList(
    (limit, cursor) => client.tasks.list({ limit, cursor }),
    (task) => task.task_id,
    [client],
    { pageSize: TASKS_PER_PAGE, refreshMs: REFRESH_MS },
  );
  const cards = useRef<HTMLUListElement>(null);
  const pin = useAction();
  const togglePin = (task: Task) => pin.run(async () => {
    await client.tasks.update(task.task_id, { pinned: !task.pinned });
    list.reload();
  });

  return (
    <section>
      <div class="title-row">
        <PageTitle>Tasks</PageTitle>
        <Link to="/new" class="button">New task</Link>
      </div>
      <ErrorNote message={list.error ?? pin.error} />
      {list.items && list.items.length === 0 && <p>No tasks yet. <Link to="/new">Start one</Link>.</p>}
      <ul class="cards" aria-label="Tasks" ref={cards}>
        {list.items?.map((task) => (
          <li key={task.task_id} class={`card${task.pinned ? ' pinned' : ''}`}>
            <div class="card-head">
              <Link to={`/tasks/${encodeURIComponent(task.task_id)}`} class="card-title">{task.name ?? task.task_id}</Link>
              <StatusBadge status={taskActivity(task) ?? 'idle'} />
            </div>
            <div class="card-meta">
              {task.name && <span class="mono">{task.task_id}</span>}
              <span>created <Time at={task.created_at} /></span>
              <span>updated <Time at={task.updated_at} /></span>
              <span>{task.output_count} output{task.output_count === 1 ? '' : 's'}</span>
              <span>{credits(task.credits_used)} credits</span>
              {task.cron && <span>cron {task.cron.expression}</span>}
            </div>
            <button type="button" class="pin secondary" aria-pressed={task.pinned} disabled={pin.busy} onClick={() => togglePin(task)}>
              {task.pinned ? 'Unpin' : 'Pin'}
              <span class="visually-hidden"> {task.name ?? task.task_id}</span>
            </button>
          </li>
        ))}
      </ul>
      <ShowMore list={list} cards={cards} noun="tasks" />
    </section>
  );
}
