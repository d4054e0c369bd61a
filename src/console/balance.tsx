/** The account's balance (`GET /account`), in the header of every page. */
import { useLoad } from './hooks.js';
import { useSession } from './session.js';
import { credits } from './ui.js';

/** How often the balance is read again: turns spend credits while the console is open. */
const REFRESH_MS = 15_000;

export function Balance() {
  const { client } = useSession();
  const account = useLoad(() => client.account(), [client], REFRESH_MS);
  if (!account.data) return null;
  return <span class="balance">Balance <strong>{credits(account.data.balance)}</strong> credits</span>;
}
