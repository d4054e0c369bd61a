/**
 * The cluster link of an embedded database. One process owns it, and that process already knows
 * everything it does: there is no one to hear a notification, and no one to lock out, so every
 * named lock is granted at once.
 */
import type { ClusterLink } from '../sql/cluster.js';

export const SQLITE_LINK: ClusterLink = {
  notify: () => {},
  listen: async () => async () => {},
  onResume: () => () => {},
  tryLock: async () => ({ held: true, release: async () => {} }),
  close: async () => {},
};
