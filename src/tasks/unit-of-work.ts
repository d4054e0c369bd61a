/**
 * The unit of work every change to a task or a group goes through (decisions §2, §6): opened
 * around one store transaction, it collects the changes of the records it touches (each a
 * stream with its own gap-free event sequence), the notices for the other processes and what
 * to do once the transaction commits. At flush it runs the handlers of what happened (the
 * webhook outbox, a group's scheduler) in the same transaction, then writes every record and its
 * events; only after commit are the events published and the workers woken. A change that
 * fails rolls back whole: nothing of it is stored, published or woken.
 */
import type { Group } from '../contract/index.js';
import { crashPoint, type CrashPoint } from '../crash-points.js';
import type { ChangeCounts, EventRecord, TaskRecord } from '../domain/records.js';
import { CONTROL_CHANNEL, type ControlMessage } from '../events/cluster-messages.js';
import type { EventBus } from '../events/event-bus.js';
import { storeEvents } from '../events/store-events.js';
import type { Repositories, Store } from '../store/store.js';

export type TurnOutcome = 'completed' | 'stopped' | 'failed';

/** A turn ended, with its task as the unit commits it. */
export interface TurnEnd {
  task: TaskRecord;
  turnId: string;
  outcome: TurnOutcome;
  outputCount: number;
  creditsUsedMicros: number;
  /** What the turn changed in keyed outputs (decisions §19). */
  changes: ChangeCounts;
}

/** A group has no run left pending or running. */
export interface GroupFinished {
  accountId: string;
  groupId: string;
  /** The group as the unit commits it. */
  group: Group;
}

/** What a unit records for its handlers, by name. */
export interface UnitSignals {
  turn_ended: TurnEnd;
  group_finished: GroupFinished;
}

/** Runs inside the transaction of the unit that raised the signal: what it writes commits or rolls back with it. */
export type UnitHandler<K extends keyof UnitSignals> = (uow: UnitOfWork, signal: UnitSignals[K]) => Promise<void>;

type Signal = { [K in keyof UnitSignals]: { type: K; value: UnitSignals[K] } }[keyof UnitSignals];

/** What a change makes or changes, as its guard is told. */
export interface ChangeTarget {
  kind: 'task' | 'group';
  id: string;
}

/**
 * What the caller of a change runs in the change's transaction, so that what it writes commits or
 * rolls back with the change: `claim` first, before the change takes any lock, and `made` once
 * the change is made. The HTTP edge's Idempotency-Key record is one (src/http/idempotency.ts).
 */
export interface ChangeGuard {
  claim(uow: UnitOfWork, target: ChangeTarget): Promise<void>;
  /** `queued`: the change is a message waiting behind a running turn. */
  made(uow: UnitOfWork, target: ChangeTarget, outcome: { queued: boolean }): Promise<void>;
}

interface StreamRecord {
  id: string;
  lastEventSeq: number;
  updatedAt: string;
}

/**
 * One record's changes within a unit: field updates and the events they cause, written together
 * at flush. Event sequence numbers come from the record, locked by whoever read it for the
 * unit, so they are gap-free per stream.
 */
export abstract class RecordChange<R extends StreamRecord, P extends Partial<StreamRecord>> {
  readonly events: EventRecord[] = [];
  private readonly patch: Partial<StreamRecord> = {};

  constructor(
    readonly uow: UnitOfWork,
    readonly record: R,
    /** The record is not stored yet: flush inserts it whole instead of updating it. */
    protected readonly isNew: boolean,
  ) {
    uow.track(this);
  }

  get now(): string {
    return this.uow.now;
  }

  get tx(): Repositories {
    return this.uow.tx;
  }

  set(patch: P): void {
    Object.assign(this.record, patch, { updatedAt: this.now });
    Object.assign(this.patch, patch, { updatedAt: this.now });
  }

  /** Writes the record and its events (UnitOfWork.flush). */
  async write(origin: string): Promise<void> {
    if (this.isNew) await this.insert(this.record);
    else await this.update(this.record.id, this.patch as P);
    await storeEvents(this.tx, origin, this.events);
  }

  /** Appends the stream's next event; `names` say whose it is (task_id and turn_id, or group_id). */
  protected append(type: string, turnId: string | null, names: Record<string, string | null>, payload: object): void {
    const seq = this.record.lastEventSeq + 1;
    this.record.lastEventSeq = seq;
    this.patch.lastEventSeq = seq;
    const data = JSON.stringify({ seq, type, ...names, at: this.now, ...payload });
    this.events.push({ taskId: this.record.id, seq, type, turnId, data });
  }

  protected abstract insert(record: R): Promise<void>;
  protected abstract update(id: string, patch: P): Promise<void>;
}

/** One transaction's changes: see the module comment. Made by UnitsOfWork.run. */
export class UnitOfWork {
  private readonly changes: RecordChange<StreamRecord, Partial<StreamRecord>>[] = [];
  private readonly controls: ControlMessage[] = [];
  private readonly signals: Signal[] = [];
  private readonly effects = new Set<() => void>();
  private wakes = false;
  private startedAt: string | undefined;

  constructor(
    readonly tx: Repositories,
    private readonly units: UnitsOfWork,
  ) {}

  /** The time of this change, read when first asked for (after the locks taken before that). */
  get now(): string {
    this.startedAt ??= this.units.now();
    return this.startedAt;
  }

  /** Whether the unit changed any record. */
  get changed(): boolean {
    return this.changes.length > 0;
  }

  track(change: RecordChange<StreamRecord, Partial<StreamRecord>>): void {
    this.changes.push(change);
  }

  /** A turn was made pending: every process's workers look for it once this commits. */
  turnReady(): void {
    if (this.wakes) return;
    this.wakes = true;
    this.controls.push({ type: 'wake' });
    this.effects.add(this.units.wakeWorkers);
  }

  /** A turn some worker may be running was ended: whichever runs it stops once this commits. */
  turnCancelled(turnId: string): void {
    this.controls.push({ type: 'cancel', turnId });
    this.effects.add(() => this.units.onTurnCancelled(turnId));
  }

  /** Runs the handlers of `type` at flush, in this transaction. */
  signal<K extends keyof UnitSignals>(type: K, value: UnitSignals[K]): void {
    this.signals.push({ type, value } as Signal);
  }

  /** Runs `effect` once this unit commits (once, however often it is asked for). */
  afterCommit(effect: () => void): void {
    this.effects.add(effect);
  }

  async flush(): Promise<void> {
    // A handler may change more records and raise more signals (a run's end starts the group's next runs).
    for (let next = this.signals.shift(); next; next = this.signals.shift()) {
      for (const handler of this.units.handlersOf(next.type)) await handler(this, next.value as never);
    }
    for (const change of this.changes) await change.write(this.units.origin);
    for (const message of this.controls) await this.tx.cluster.notify(CONTROL_CHANNEL, JSON.stringify(message));
  }

  /** After commit: the events go to live listeners, then the effects run. */
  committed(bus: EventBus): void {
    for (const change of this.changes) bus.publish(change.events);
    for (const effect of this.effects) effect();
  }
}

export interface UnitsOfWorkOptions {
  store: Store;
  bus: EventBus;
  /** This process, named in notices so it can skip its own. */
  origin: string;
  clock?: () => Date;
}

/** Opens units of work on the store, and holds the handlers and wake-ups every unit shares. */
export class UnitsOfWork {
  readonly origin: string;
  readonly clock: () => Date;
  /** Called after a commit that made a turn ready to run. */
  onTurnReady: () => void = () => {};
  /** Called after a commit that ended a turn some worker may be running (stop, delete). */
  onTurnCancelled: (turnId: string) => void = () => {};
  private readonly store: Store;
  private readonly bus: EventBus;
  private readonly handlers = new Map<keyof UnitSignals, UnitHandler<never>[]>();

  constructor(opts: UnitsOfWorkOptions) {
    this.store = opts.store;
    this.bus = opts.bus;
    this.origin = opts.origin;
    this.clock = opts.clock ?? (() => new Date());
  }

  now(): string {
    return this.clock().toISOString();
  }

  /** One function for every unit, so a unit that makes many turns pending wakes the workers once. */
  readonly wakeWorkers = (): void => this.onTurnReady();

  /** Registers a handler that every unit raising `type` runs in its transaction. */
  on<K extends keyof UnitSignals>(type: K, handler: UnitHandler<K>): void {
    this.handlers.set(type, [...this.handlersOf(type), handler as UnitHandler<never>]);
  }

  handlersOf<K extends keyof UnitSignals>(type: K): UnitHandler<K>[] {
    return (this.handlers.get(type) ?? []) as UnitHandler<K>[];
  }

  /**
   * Runs `fn` in a transaction, flushes its unit, and publishes once it commits. `crashAt` is
   * reached between the commit and the publishing of a unit that changed something.
   */
  async run<T>(fn: (uow: UnitOfWork) => Promise<T>, crashAt?: CrashPoint): Promise<T> {
    const { uow, result } = await this.store.transaction(async (tx) => {
      const unit = new UnitOfWork(tx, this);
      const value = await fn(unit);
      await unit.flush();
      return { uow: unit, result: value };
    });
    if (crashAt && uow.changed) crashPoint(crashAt);
    uow.committed(this.bus);
    return result;
  }
}
