/**
 * The cluster link of a shared database: LISTEN/NOTIFY and session-level advisory locks for
 * processes sharing one PostgreSQL database. Each needs a connection of its own that stays open:
 * notifications arrive on the listening connection, and an advisory lock lives exactly as long
 * as the connection that took it, so a dead process frees its locks without anyone cleaning up.
 *
 * Notices are sent after the transactions that stored what they announce have committed, never
 * from inside them: PostgreSQL commits every transaction that sent NOTIFY under one lock for the
 * whole database, so notifying writers queue on each other, and with many workers most of their
 * time went to that queue. Here one connection per process sends the notices of an event-loop
 * turn with one statement, packing a channel's notices into one notification per 7,900 bytes
 * (lines of its payload). A notice is a hint: what it announces is in the store already, and a
 * reader that misses one (this process died between the commit and the send, or the connection
 * dropped) catches up from the store (events/cluster-relay.ts sweeps, the turn runner polls).
 *
 * Every connection the link opens is either held (and ended by close()) or ended at once: one
 * whose set-up fails, one that finishes setting up after close() began, one lost to an error.
 * After close() the link opens none, and a reconnect that was due is called off.
 */
import pg from 'pg';
import { RetryPolicy } from '../../retry-policy.js';
import type { HeldLock } from '../store.js';
import type { ClusterLink, Notice } from '../sql/cluster.js';

const RECONNECT_MS = 1000;
/** The longest wait between tries to connect again while the database stays away. */
const RECONNECT_MAX_MS = 5000;

/** NOTIFY takes payloads of less than 8,000 bytes. */
const MAX_PAYLOAD_BYTES = 7_900;

export interface PostgresLinkOptions {
  /** Makes each of the link's own connections (tests count them, and hold one half way). */
  newClient?: (config: pg.ClientConfig) => pg.Client;
  /** About how long after losing the listening connection the link connects again (the first wait; later ones double). */
  reconnectMs?: number;
}

/** What listen() meets once close() has begun: the link opens no connection any more. */
function closedError(): Error {
  return new Error('the cluster link is closed');
}

/** The notices as (channel, payload) columns: each channel's notices in order, joined by lines. */
export function packNotices(notices: readonly Notice[]): { channels: string[]; payloads: string[] } {
  const channels: string[] = [];
  const payloads: string[] = [];
  const open = new Map<string, { index: number; bytes: number; seen: Set<string> }>();
  for (const { channel, payload } of notices) {
    const bytes = Buffer.byteLength(payload);
    const current = open.get(channel);
    // The same notice twice in one send (a wake) says nothing more.
    if (current?.seen.has(payload)) continue;
    if (current && current.bytes + 1 + bytes <= MAX_PAYLOAD_BYTES) {
      payloads[current.index] += `\n${payload}`;
      current.bytes += 1 + bytes;
      current.seen.add(payload);
    } else {
      open.set(channel, { index: payloads.length, bytes, seen: new Set([payload]) });
      channels.push(channel);
      payloads.push(payload);
    }
  }
  return { channels, payloads };
}

export class PostgresLink implements ClusterLink {
  private listener: pg.Client | undefined;
  private connecting: Promise<pg.Client> | undefined;
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  private readonly resumeHandlers = new Set<() => void>();
  /** The listening connection was lost: the next one to listen again tells the resume handlers. */
  private lostListener = false;
  private readonly locks = new Set<pg.Client>();
  private closed = false;
  /** Notices waiting for the next send, the send under way, and its connection. */
  private unsent: Notice[] = [];
  private sending: Promise<void> | undefined;
  private sender: pg.Client | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private readonly newClient: (config: pg.ClientConfig) => pg.Client;
  /** Drawn at random so that the processes of a cluster that lost the database together do not come back together. */
  private readonly reconnects: RetryPolicy;
  /** Tries to connect again since the listening connection was lost. */
  private reconnectTries = 0;

  constructor(
    private readonly clientConfig: pg.ClientConfig,
    /**
     * The schema this install lives in. Advisory locks belong to the whole database, so a lock's
     * key names the schema: installs side by side in one database each get their own scheduler.
     */
    private readonly schema: string,
    opts: PostgresLinkOptions = {},
  ) {
    this.newClient = opts.newClient ?? ((config) => new pg.Client(config));
    this.reconnects = new RetryPolicy({ baseMs: opts.reconnectMs ?? RECONNECT_MS, capMs: RECONNECT_MAX_MS, jitter: 'full' });
  }

  /**
   * Connects `client` and runs `setUp` on it. A client whose set-up fails is ended: a connection
   * that is neither handed out nor ended stays open for as long as the process lives. Its end is
   * not waited for (a connection that never opened may never report it).
   */
  private async opened(client: pg.Client, setUp: (client: pg.Client) => Promise<unknown>): Promise<pg.Client> {
    try {
      await client.connect();
      await setUp(client);
      return client;
    } catch (err) {
      void client.end().catch(() => {});
      throw err;
    }
  }

  notify(notices: readonly Notice[]): void {
    if (this.closed || notices.length === 0) return;
    this.unsent.push(...notices);
    this.startSending();
  }

  private startSending(): void {
    if (this.sending) return;
    this.sending = this.send().finally(() => {
      this.sending = undefined;
      // Notices that came after the last look but before this callback ran.
      if (this.unsent.length > 0) this.startSending();
    });
  }

  /** Sends what waits, after the current event-loop turn (so its commits' notices go together), until nothing does. */
  private async send(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    while (this.unsent.length > 0) {
      const { channels, payloads } = packNotices(this.unsent);
      this.unsent = [];
      try {
        this.sender ??= await this.connectSender();
        await this.sender.query('select pg_notify(n.channel, n.payload) from unnest($1::text[], $2::text[]) as n(channel, payload)', [channels, payloads]);
      } catch {
        // Dropped: readers catch up from the store. The next send connects again.
        const broken = this.sender;
        this.sender = undefined;
        await broken?.end().catch(() => {});
      }
    }
  }

  private async connectSender(): Promise<pg.Client> {
    const client = this.newClient(this.clientConfig);
    client.on('error', () => {
      if (this.sender === client) this.sender = undefined;
    });
    // A send is a transaction of its own, and a notice is no data to keep: its commit need not
    // wait for the WAL to reach the disk (it is delivered at commit either way).
    return this.opened(client, (c) => c.query('set synchronous_commit = off'));
  }

  async listen(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>> {
    let set = this.handlers.get(channel);
    const first = !set;
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
    }
    set.add(handler);
    const client = await this.listenerClient();
    if (first) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    return async () => {
      set.delete(handler);
    };
  }

  onResume(handler: () => void): () => void {
    this.resumeHandlers.add(handler);
    return () => this.resumeHandlers.delete(handler);
  }

  private listenerClient(): Promise<pg.Client> {
    if (this.listener) return Promise.resolve(this.listener);
    if (this.closed) return Promise.reject(closedError());
    this.connecting ??= this.connectListener().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async connectListener(): Promise<pg.Client> {
    const client = this.newClient(this.clientConfig);
    client.on('notification', (msg) => {
      const handlers = this.handlers.get(msg.channel);
      if (!handlers) return;
      // One notice per line (packNotices).
      for (const notice of (msg.payload ?? '').split('\n')) for (const handler of handlers) handler(notice);
    });
    const lost = () => {
      if (this.listener !== client) return;
      this.listener = undefined;
      this.lostListener = true;
      // An error need not close the socket: end it, so that the reconnect does not leave it open.
      void client.end().catch(() => {});
      // Reconnect and listen again; notifications sent meanwhile are lost, and readers catch up
      // from the store on the next one they get.
      this.reconnectLater();
    };
    client.on('error', lost);
    client.on('end', lost);
    await this.opened(client, async (c) => {
      for (const channel of this.handlers.keys()) await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    });
    // close() ran while this connection was being set up: it found no listener to end.
    if (this.closed) {
      await client.end().catch(() => {});
      throw closedError();
    }
    this.listener = client;
    this.reconnectTries = 0;
    if (this.lostListener) {
      this.lostListener = false;
      for (const handler of this.resumeHandlers) handler();
    }
    return client;
  }

  private reconnectLater(): void {
    if (this.closed || this.reconnectTimer) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.listenerClient().catch(() => this.reconnectLater());
    }, this.reconnects.delay(++this.reconnectTries));
    this.reconnectTimer.unref();
  }

  async tryLock(name: string): Promise<HeldLock | null> {
    if (this.closed) return null;
    const client = this.newClient(this.clientConfig);
    let held = false;
    client.on('error', () => {
      held = false;
    });
    client.on('end', () => {
      held = false;
      this.locks.delete(client);
    });
    let ok = false;
    await this.opened(client, async (c) => {
      const r = await c.query<{ ok: boolean }>('select pg_try_advisory_lock(hashtext($1)) as ok', [`${this.schema}:${name}`]);
      ok = r.rows[0]?.ok === true;
    });
    // Not taken, or taken while close() ran (it ends only the locks it finds).
    if (!ok || this.closed) {
      await client.end().catch(() => {});
      return null;
    }
    held = true;
    this.locks.add(client);
    return {
      get held() {
        return held;
      },
      release: async () => {
        held = false;
        this.locks.delete(client);
        await client.end().catch(() => {});
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    // What was committed before the close is still announced.
    while (this.sending) await this.sending;
    await this.sender?.end().catch(() => {});
    this.sender = undefined;
    // A listening connection being set up ends itself once it sees the link closed.
    await this.connecting?.catch(() => {});
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => {});
    await Promise.all([...this.locks].map((c) => c.end().catch(() => {})));
    this.locks.clear();
  }
}
