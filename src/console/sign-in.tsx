import { useState } from 'preact/hooks';
import { clientFor } from './api.js';
import { useAction } from './hooks.js';
import { ErrorNote, PageTitle } from './ui.js';

/** Asks for an API key and checks it with one cheap call before keeping it. */
export function SignIn(props: { onSignedIn: (key: string) => void }) {
  const [key, setKey] = useState('');
  const action = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    const trimmed = key.trim();
    const ok = await action.run(() => clientFor(trimmed).tasks.list({ limit: 1 }));
    if (ok) props.onSignedIn(trimmed);
  };
  return (
    <main class="sign-in">
      <PageTitle>Quarry console</PageTitle>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input id="api-key" type="password" autoComplete="off" spellcheck={false} required value={key} onInput={(e) => setKey(e.currentTarget.value)} placeholder="qry_…" />
        <p class="hint">Kept in this tab only (session storage) and sent as <code>X-API-Key</code>.</p>
        <button type="submit" disabled={action.busy || key.trim() === ''}>Sign in</button>
        <ErrorNote message={action.error} />
      </form>
    </main>
  );
}
