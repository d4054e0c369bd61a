/**
 * The Quarry console (decisions §15.5): a single-page app over the public HTTP API, served by
 * Quarry at /console. Built by scripts/build-console.ts.
 */
import './console.css';
import { render } from 'preact';
import { useMemo, useState } from 'preact/hooks';
import { clientFor, storedKey, storeKey } from './api.js';
import { CreateGroup, GroupList, GroupPage } from './groups.js';
import { CreateTask } from './create-task.js';
import { Link, navigate, usePath } from './router.js';
import { SessionContext } from './session.js';
import { SignIn } from './sign-in.js';
import { TaskList } from './task-list.js';
import { Balance } from './balance.js';
import { TaskPage } from './task-page.js';
import { DeliveryPage, WebhookList, WebhookPage } from './webhooks.js';

const NAV = [
  { to: '/', label: 'Tasks', section: /^\/(tasks\/.*)?$/ },
  { to: '/new', label: 'New task', section: /^\/new$/ },
  { to: '/groups', label: 'Groups', section: /^\/groups/ },
  { to: '/webhooks', label: 'Webhooks', section: /^\/webhooks/ },
];

function Page(props: { path: string }) {
  const { path } = props;
  let m: RegExpExecArray | null;
  if (path === '/') return <TaskList />;
  if (path === '/new') return <CreateTask />;
  if ((m = /^\/tasks\/([^/]+)$/.exec(path))) return <TaskPage taskId={decodeURIComponent(m[1]!)} />;
  if (path === '/groups') return <GroupList />;
  if (path === '/groups/new') return <CreateGroup />;
  if ((m = /^\/groups\/([^/]+)$/.exec(path))) return <GroupPage groupId={decodeURIComponent(m[1]!)} />;
  if (path === '/webhooks') return <WebhookList />;
  if ((m = /^\/webhooks\/([^/]+)$/.exec(path))) return <WebhookPage webhookId={decodeURIComponent(m[1]!)} />;
  if ((m = /^\/webhooks\/([^/]+)\/deliveries\/([^/]+)$/.exec(path))) return <DeliveryPage webhookId={decodeURIComponent(m[1]!)} deliveryId={decodeURIComponent(m[2]!)} />;
  return (
    <p>
      No page here. <Link to="/">Back to the tasks</Link>
    </p>
  );
}

function App() {
  const [key, setKey] = useState(storedKey);
  const path = usePath();
  const session = useMemo(() => (key ? { client: clientFor(key) } : null), [key]);
  const signIn = (value: string | null) => {
    storeKey(value);
    setKey(value);
  };
  if (!session) return <SignIn onSignedIn={signIn} />;
  return (
    <SessionContext.Provider value={session}>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <Link to="/" class="brand">Quarry</Link>
        <nav aria-label="Console">
          <ul>
            {NAV.map((item) => (
              <li key={item.to}>
                <Link to={item.to} aria-current={item.section.test(path) ? 'page' : undefined}>{item.label}</Link>
              </li>
            ))}
          </ul>
        </nav>
        <Balance />
        <button
          type="button"
          class="secondary"
          onClick={() => {
            signIn(null);
            navigate('/');
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main">
        <Page key={path} path={path} />
      </main>
    </SessionContext.Provider>
  );
}

render(<App />, document.getElementById('app')!);
