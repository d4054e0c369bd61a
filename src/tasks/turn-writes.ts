/**
 * The writes a running turn makes (called by the turn runner, through the agent's TurnPort): its
 * start, its phase and activity, its events, spec updates, rows, charged steps and its end. Each
 * is one unit of work on the locked task, made only while the turn is still the task's current
 * one (a turn stopped or deleted meanwhile writes nothing more) and its worker still holds its
 * lease (LeaseLost otherwise: a worker cut off from the store past its lease, whose turn another
 * worker took over, writes nothing more either).
 */
import { hasCredits } from '../accounts/accounts.js';
import type { Charge, RowKeys, RowWriter, StepUsage } from '../agent/turn-port.js';
import type { Config } from '../config.js';
import type { EventPayload, TaskActivity, TaskPhase, TaskSpec, TaskWait } from '../contract/index.js';
import { crashPoint } from '../crash-points.js';
import { fromMicros, pricesInMicros, stepCostMicros, type MicroPrices } from '../domain/credits.js';
import type { RowTally, TaskRecord, TurnRecord } from '../domain/records.js';
import { turnError, type TurnError } from '../errors.js';
import { recordUnconfirmed, writeKeyedRows } from './keyed-rows.js';
import { endTurn, startingState } from './task-transitions.js';
import { TaskUnit } from './task-unit.js';
import type { UnitsOfWork } from './unit-of-work.js';

export interface TurnWritesOptions {
  units: UnitsOfWork;
  /** The prices a step is charged at. */
  config: Pick<Config, 'prices'>;
}

/** A model step's text: what was not stored yet, and whether some of it was (in `text` events before). */
export interface StepText {
  text: string;
  stored: boolean;
}

const NO_TALLY: RowTally = { verified: 0, cells: { supported: 0, unsupported: 0, unchecked: 0 } };

/** A running turn as its worker claimed it: `leaseOwner` is that worker. */
export type LeasedTurn = Pick<TurnRecord, 'id' | 'taskId' | 'leaseOwner'>;

/** Thrown by a write of a turn whose lease its worker no longer holds: another worker took the turn over. */
export class LeaseLost extends Error {
  constructor(readonly turnId: string) {
    super(`turn ${turnId} is no longer leased to this worker`);
    this.name = 'LeaseLost';
  }
}

/** The running turn's side of the task state machine. */
export class TurnWrites {
  private readonly units: UnitsOfWork;
  private readonly prices: MicroPrices;

  constructor(opts: TurnWritesOptions) {
    this.units = opts.units;
    this.prices = pricesInMicros(opts.config.prices);
  }

  /**
   * A worker took the turn: set the task's activity and say so. Returns the task as the turn
   * starts, or null when the turn must not run (it was stopped or its task deleted between being
   * queued and claimed).
   */
  async turnStarted(turn: TurnRecord, resumed: boolean): Promise<TaskRecord | null> {
    return this.units.run(async (uow) => {
      const read = await uow.tx.tasks.getForLeasedTurn(turn.taskId, turn.id, turn.leaseOwner ?? '');
      const task = read?.task;
      // Stopped or deleted between being claimed and starting: whoever did that ended the turn.
      if (!task || task.currentTurnId !== turn.id) return null;
      if (!read.leased) throw new LeaseLost(turn.id);
      // A resumed turn's turn_started was recorded when it first started.
      if (resumed) return task;
      const unit = new TaskUnit(uow, task);
      if (!(await hasCredits(uow.tx, turn.accountId))) {
        // A message queued while credits remained reaches the front after they ran out: it does not start.
        await endTurn(unit, turn.id, 'failed', turnError('out_of_credits', 'The account has no credits left, so this turn did not start: add credits, then send the message again.'));
        return null;
      }
      await uow.tx.turns.update(turn.id, { startedAt: uow.now });
      unit.set(startingState(turn.kind));
      // A group run's input is framed by Quarry, not said by a caller: only a message or an instruction is shown.
      const said = turn.input !== null && !unit.task.group ? turn.input : undefined;
      unit.taskEvent('turn_started', turn.id, said);
      return unit.task;
    });
  }

  /** Shows what the running turn waits on (the task's `waiting`), or that it waits on nothing. No event: it is state to poll. */
  async setWaiting(turn: LeasedTurn, waiting: TaskWait | null): Promise<void> {
    await this.changeRunningTurn(turn, async (unit) => {
      if ((unit.task.waiting ?? null) !== waiting) unit.set({ waiting });
    });
  }

  /** Moves the task's phase or activity while its turn runs; an event is stored only on change. */
  async setTurnState(turn: LeasedTurn, state: { phase?: TaskPhase; activity?: TaskActivity }): Promise<void> {
    await this.changeRunningTurn(turn, async (unit) => {
      const phaseChanged = state.phase !== undefined && state.phase !== unit.task.phase;
      const activityChanged = state.activity !== undefined && state.activity !== unit.task.activity;
      if (!phaseChanged && !activityChanged) return;
      unit.set({ ...(phaseChanged ? { phase: state.phase } : {}), ...(activityChanged ? { activity: state.activity } : {}) });
      unit.taskEvent(phaseChanged ? 'phase_changed' : 'activity_changed', turn.id);
    });
  }

  /** Stores a tool call's event while the turn still runs. */
  async toolEvent(turn: LeasedTurn, payload: EventPayload<'tool'>): Promise<boolean> {
    return this.changeRunningTurn(turn, async (unit) => unit.event('tool', turn.id, payload));
  }

  /**
   * Stores text of the model reply under way as a `text` event. With the reply's first stored
   * text the turn records that it holds text no checkpoint covers yet (cleared by the step's
   * checkpoint or by withdrawReplyText), so that a turn taken up again after a crash withdraws it.
   */
  async replyText(turn: LeasedTurn, text: string, firstOfReply: boolean): Promise<boolean> {
    return this.changeRunningTurn(turn, async (unit) => {
      unit.event('text', turn.id, { text });
      if (firstOfReply) await unit.tx.turns.update(turn.id, { replyTextStored: true });
    });
  }

  /**
   * Withdraws the stored text of the model reply under way, which is asked for again (it failed
   * part-way, or the worker that streamed it is gone): a `text` event with `restart: true`. A
   * reader drops the text since the turn's last tool event or phase change, so the event carries
   * what of it stands (`kept`: the text of checkpointed answers since then, most often none).
   */
  async withdrawReplyText(turn: LeasedTurn, kept: string): Promise<boolean> {
    return this.changeRunningTurn(turn, async (unit) => {
      unit.event('text', turn.id, { text: kept, restart: true });
      await unit.tx.turns.update(turn.id, { replyTextStored: false });
    });
  }

  /** Replaces the spec during a turn (update_spec). */
  async updateSpec(turn: LeasedTurn, spec: TaskSpec): Promise<boolean> {
    return this.changeRunningTurn(turn, async (unit) => {
      unit.set({ spec, name: spec.name });
      unit.taskEvent('updated', turn.id);
    });
  }

  /**
   * Appends validated rows once per write key (to a keyed output, with `keys`: replaces the rows
   * whose key is there already, and records the changes with them); null when the turn no
   * longer runs. `tally` counts the call's rows; the task's cell counts change by what the rows
   * add less what the rows they replace held.
   */
  async appendRows(turn: LeasedTurn, outputId: string, writeKey: string, rows: RowWriter[], tally: RowTally = NO_TALLY, keys?: RowKeys): Promise<{ firstRow: number; count: number } | null> {
    let written: { firstRow: number; count: number } | null = null;
    await this.changeRunningTurn(turn, async (unit) => {
      const output = unit.task.spec.outputs.find((o) => o.id === outputId);
      const r = keys && output?.key
        ? await writeKeyedRows(unit, turn.id, output, writeKey, rows, keys)
        : { ...(await unit.tx.rows.append(turn.taskId, outputId, writeKey, rows, unit.now, tally)), delta: tally };
      written = { firstRow: r.firstRow, count: r.count };
      if (!r.replayed) {
        unit.set({
          activeOutput: outputId,
          supportedCells: (unit.task.supportedCells ?? 0) + r.delta.cells.supported,
          unsupportedCells: (unit.task.unsupportedCells ?? 0) + r.delta.cells.unsupported,
        });
        await unit.tx.turns.addRows(turn.id, { written: r.count, verified: tally.verified });
      }
    });
    if (written) crashPoint('rows.appended');
    return written;
  }

  /**
   * Stores a completed agent step and charges what it used, atomically, with `text` (what the
   * model streamed since the last text event) as a text event, and the reply's text is then held
   * by a checkpoint (`reply.stored`: some of it was stored before). A step is charged once,
   * however often the turn is replayed. Returns the account balance after the charge and what
   * the turn has used, in credits: the exact micro-credit amounts as the API shows them, so
   * `balance <= 0` holds exactly when the balance reads 0. The same step stored already (its
   * commit went through but its answer was lost, and the write was sent again) gets the balance
   * and turn total as they stand, charging nothing more. Null when the turn no longer runs or
   * another step of that number was stored (another worker got there first). `cappedGroupId`:
   * the task is a run of that group, which has max_credits: the charge is added to its spend.
   */
  async checkpointStep(turn: TurnRecord, step: number, data: string, usage: StepUsage, reply: StepText, cappedGroupId?: string): Promise<Charge | null> {
    const costMicros = stepCostMicros(this.prices, usage);
    let result: Charge | null = null;
    await this.changeRunningTurn(turn, async (unit) => {
      if (!(await unit.tx.steps.insert(turn.id, step, data, unit.now))) {
        if ((await unit.tx.steps.get(turn.id, step)) !== data) return;
        const turnMicros = (await unit.tx.turns.get(turn.id))?.creditsUsedMicros ?? 0;
        const balanceMicros = (await unit.tx.accounts.get(turn.accountId))?.balanceMicros ?? 0;
        result = { balance: fromMicros(balanceMicros), turnCredits: fromMicros(turnMicros) };
        return;
      }
      if (reply.text) unit.event('text', turn.id, { text: reply.text });
      if (reply.stored) await unit.tx.turns.update(turn.id, { replyTextStored: false });
      const turnMicros = (await unit.tx.turns.addUsage(turn.id, { creditsMicros: costMicros, ...usage }))!;
      const balanceMicros = costMicros > 0
        ? await unit.tx.accounts.charge(turn.accountId, costMicros)
        : ((await unit.tx.accounts.get(turn.accountId))?.balanceMicros ?? 0);
      if (costMicros > 0) unit.set({ creditsUsedMicros: unit.task.creditsUsedMicros + costMicros });
      // A capped group's spend is kept as its runs are charged (the cap is checked before each model call); others' is added as each run ends.
      if (cappedGroupId !== undefined && costMicros > 0) await unit.tx.groups.addCreditsUsed(cappedGroupId, costMicros);
      result = { balance: fromMicros(balanceMicros), turnCredits: fromMicros(turnMicros) };
    });
    return result;
  }

  /**
   * A model call of a capped group's run may begin: its most cost (`micros`) is reserved on the
   * turn unless the group's spend plus its runs' reserves reached the cap (decisions §18).
   */
  async reserveModelCall(turnId: string, groupId: string, micros: number): Promise<boolean> {
    return this.units.run((uow) => uow.tx.turns.reserveModelCall(turnId, groupId, micros));
  }

  /** The model call that reserved `micros` ended. */
  async releaseModelReserve(turnId: string, micros: number): Promise<void> {
    await this.units.run((uow) => uow.tx.turns.releaseModelReserve(turnId, micros));
  }

  /** The turn ended by itself (completed or failed); false (nothing stored) when it was stopped meanwhile. */
  async finishTurn(turn: LeasedTurn, outcome: 'completed' | 'failed', error: TurnError | null): Promise<boolean> {
    return this.changeRunningTurn(turn, async (unit) => {
      // Only an execute turn that got to its end has checked every key; a failed one may not have.
      if (outcome === 'completed' && (await unit.tx.turns.get(turn.id))?.kind === 'execute') await recordUnconfirmed(unit, turn.id);
      await endTurn(unit, turn.id, outcome, error);
    }, 'turn.finished');
  }

  /**
   * Runs `fn` only while `turn` is still the task's running turn and its worker still holds its
   * lease. Returns false when the turn was stopped (or its task deleted) meanwhile; throws
   * LeaseLost when another worker took the turn over, whether it still runs there or has ended.
   */
  private async changeRunningTurn(turn: LeasedTurn, fn: (unit: TaskUnit) => Promise<void>, crashAt?: 'turn.finished'): Promise<boolean> {
    return this.units.run(async (uow) => {
      // A turn no worker claimed ('' is no worker's id) holds no lease.
      const read = await uow.tx.tasks.getForLeasedTurn(turn.taskId, turn.id, turn.leaseOwner ?? '');
      const task = read?.task;
      if (!task || task.currentTurnId !== turn.id) {
        if ((await uow.tx.turns.get(turn.id))?.status === 'stopped') return false;
        throw new LeaseLost(turn.id);
      }
      if (!read.leased) throw new LeaseLost(turn.id);
      await fn(new TaskUnit(uow, task));
      return true;
    }, crashAt);
  }
}

