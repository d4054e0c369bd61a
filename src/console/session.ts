import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { QuarryClient } from './api.js';

/** The signed-in session: the client with the user's key. */
export interface Session {
  client: QuarryClient;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside a signed-in page');
  return session;
}
