/**
 * The cluster link of a shared database: LISTEN/NOTIFY and session-level advisory locks for
 * processes sharing one PostgreSQL database. Each needs a connection of its own that stays open:
 * notifications arrive on the listening connection, and an advisory lock lives exactly as long
 * as the connection that took it, so a dead process frees its locks without anyone cleaning up.
 */
import pg from 'pg';
import type { HeldLock } from '../store.js';
import type { ClusterLink } from '../sql/cluster.js';

const RECONNECT_MS = 1000;

export class PostgresLink implements ClusterLink {
  private listener: pg.Client | undefined;
  private connecting: Promise<pg.Client> | undefined;
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  private readonly resumeHandlers = new Set<() => void>();
  /** The listening connection was lost: the next one to listen again tells the resume handlers. */
  private lostListener = false;
  private readonly locks = new Set<pg.Client>();
  private closed = false;

  constructor(
    private readonly clientConfig: pg.ClientConfig,
    /**
     * The schema this install lives in. Advisory locks belong to the whole database, so a lock's
     * key names the schema: installs side by side in one database each get their own scheduler.
     */
    private readonly schema: string,
  ) {}

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
    this.connecting ??= (async () => {
      const client = new pg.Client(this.clientConfig);
      client.on('notification', (msg) => {
        for (const handler of this.handlers.get(msg.channel) ?? []) handler(msg.payload ?? '');
      });
      const lost = () => {
        if (this.listener !== client) return;
        this.listener = undefined;
        this.lostListener = true;
        // Reconnect and listen again; notifications sent meanwhile are lost, and readers catch up
        // from the store on the next one they get.
        if (!this.closed) setTimeout(() => this.reconnect(), RECONNECT_MS).unref();
      };
      client.on('error', lost);
      client.on('end', lost);
      await client.connect();
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      this.listener = client;
      if (this.lostListener) {
        this.lostListener = false;
        for (const handler of this.resumeHandlers) handler();
      }
      return client;
    })().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private reconnect(): void {
    this.listenerClient().catch(() => {
      if (!this.closed) setTimeout(() => this.reconnect(), RECONNECT_MS).unref();
    });
  }

  async tryLock(name: string): Promise<HeldLock | null> {
    const client = new pg.Client(this.clientConfig);
    let held = false;
    client.on('error', () => {
      held = false;
    });
    client.on('end', () => {
      held = false;
      this.locks.delete(client);
    });
    await client.connect();
    const r = await client.query<{ ok: boolean }>('select pg_try_advisory_lock(hashtext($1)) as ok', [`${this.schema}:${name}`]);
    if (!r.rows[0]?.ok) {
      await client.end();
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
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => {});
    await Promise.all([...this.locks].map((c) => c.end().catch(() => {})));
    this.locks.clear();
  }
}
