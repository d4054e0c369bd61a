/**
 * The composition root: opens the store, builds the services, the turn runner and the HTTP app,
 * and wires them together. The CLI and the tests both start Quarry through here.
 */
import pino, { type Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import { Accounts } from './accounts/accounts.js';
import { Agent } from './agent/agent-loop.js';
import type { ModelProvider } from './agent/providers/model-provider.js';
import { createAnthropicProvider } from './agent/providers/anthropic.js';
import { createDemoProvider } from './agent/providers/demo-model.js';
import { createOpenAICompatibleProvider } from './agent/providers/openai-compatible.js';
import { ProviderGate } from './agent/providers/provider-gate.js';
import { createAgentTools } from './agent/tools/index.js';
import type { Config } from './config.js';
import { ClusterRelay } from './events/cluster-relay.js';
import { EventBus } from './events/event-bus.js';
import { EventFollower } from './events/event-follower.js';
import { EVENT_STREAM_URLS } from './contract/index.js';
import { A2A_URL } from './frontends/a2a/a2a-routes.js';
import { buildApp } from './app.js';
import { PrometheusMetrics } from './metrics/prometheus-metrics.js';
import { TaskCommands } from './tasks/task-commands.js';
import { GroupService } from './groups/group-service.js';
import { TaskQueries } from './tasks/task-queries.js';
import { openStore } from './store/open-store.js';
import type { Store } from './store/store.js';
import { IdempotencyRecords } from './tasks/idempotency-records.js';
import { TaskService } from './tasks/task-service.js';
import { TurnWrites } from './tasks/turn-writes.js';
import { UnitsOfWork } from './tasks/unit-of-work.js';
import { Pruner } from './pruner.js';
import { TurnRunner } from './engine/turn-runner.js';
import { TurnQueries } from './tasks/turn-queries.js';
import { TurnQueue } from './tasks/turn-queue.js';
import { SourceSnapshots } from './outputs/source-snapshots.js';
import { createSandbox } from './sandbox/sandbox.js';
import { Uploads } from './uploads/uploads.js';
import { WebhookDispatcher } from './webhooks/dispatcher.js';
import { registerWebhookOutbox } from './webhooks/webhook-outbox.js';
import { Webhooks } from './webhooks/webhooks.js';

export interface Quarry {
  config: Config;
  app: FastifyInstance;
  store: Store;
  /** Where this process's committed events are published (and other processes' relayed). */
  bus: EventBus;
  tasks: TaskService;
  accounts: Accounts;
  runner: TurnRunner | undefined;
  /** The starter key when this start created the starter account (in listen()), else null. */
  readonly starterKey: string | null;
  /**
   * Listens on config.host:config.port (0 = any free port), then creates the starter account on
   * an empty store (only a start that got its port does, so a failed start cannot use the key
   * up) and starts the workers; resolves with the base URL.
   */
  listen(): Promise<string>;
  /**
   * Starts what a process runs besides answering requests: turns, webhook deliveries and the
   * pruner, where its role has them. listen() does this too; a caller that serves no socket
   * (requests through app.inject()) calls it alone.
   */
  startWorkers(): Promise<void>;
  close(): Promise<void>;
}

export interface QuarryOptions {
  logger?: Logger;
  /** Overrides the provider built from config (tests use this only to inject failures they cannot script). */
  provider?: ModelProvider;
  /** Waits between model retries. */
  retryDelaysMs?: number[];
  /** Shows the starter key; called before the key is stored (see Accounts.ensureStarterAccount), so write it synchronously. */
  onStarterKey?: (apiKey: string) => void;
}

function providerFrom(config: Config): ModelProvider | undefined {
  const m = config.model;
  if (!m) return undefined;
  if (m.provider === 'demo') return createDemoProvider();
  if (m.provider === 'anthropic') return createAnthropicProvider({ baseUrl: m.baseUrl, model: m.model, apiKey: m.apiKey, stream: m.stream, maxTokens: m.maxTokens, timeoutMs: m.timeoutMs });
  return createOpenAICompatibleProvider({
    baseUrl: m.baseUrl, model: m.model, apiKey: m.apiKey, stream: m.stream, timeoutMs: m.timeoutMs, sendCacheKey: m.sendCacheKey,
    ...(m.maxTokensField ? { maxTokens: { field: m.maxTokensField, tokens: m.maxTokens } } : {}),
  });
}

export async function createQuarry(config: Config, opts: QuarryOptions = {}): Promise<Quarry> {
  const logger = opts.logger ?? pino({ level: config.logLevel });
  const store = await openStore(config);
  try {
    return await assemble(config, opts, logger, store);
  } catch (err) {
    // A start that fails half way leaves no connection open, so the process can exit.
    await store.close().catch((closeErr) => logger.warn({ err: closeErr }, 'closing the store failed'));
    throw err;
  }
}

/** Everything a Quarry runs on, built on an opened store. */
async function assemble(config: Config, opts: QuarryOptions, logger: Logger, store: Store): Promise<Quarry> {
  await store.migrate();

  const bus = new EventBus();
  const metrics = new PrometheusMetrics({ turns: store.turns, streamRoutes: [...EVENT_STREAM_URLS, A2A_URL] });
  const units = new UnitsOfWork({ store, bus, origin: config.workerId });
  const tasks = new TaskService({ store, units, config });
  const accounts = new Accounts(store);
  const uploads = new Uploads(store, { dataDir: config.dataDir, maxBytes: config.maxUploadBytes });

  const events = new EventFollower({ events: store.events, bus, readTimeoutMs: config.sseReadTimeoutMs });
  const queries = new TaskQueries(store, events);
  const commands = new TaskCommands({ tasks, queries, uploads, maxBlockSeconds: config.maxBlockSeconds });
  // Every process that ends turns starts a group's next runs, so each has the group service.
  const groups = new GroupService({ store, units, config, tasks, commands, uploads });

  const runsTurns = config.role !== 'api';
  // Deliveries are sent by the processes that run turns; an api process's (a stop's) wait for their poll.
  const dispatcher = runsTurns ? new WebhookDispatcher({ store, config: config.webhooks, allowPrivate: config.fetchAllowPrivate, logger, metrics }) : undefined;
  const webhooks = new Webhooks({ store, allowPrivate: config.fetchAllowPrivate, onDeliveryDue: () => dispatcher?.wake() });
  registerWebhookOutbox(units, () => dispatcher?.wake());
  const pruner = runsTurns ? new Pruner({ store, config: config.prune, requestTimeoutMs: config.requestTimeoutSeconds * 1000, logger }) : undefined;
  // Only a process that runs turns runs code; the probe costs a moment at start-up.
  const sandbox = runsTurns
    ? await createSandbox({
        mode: config.sandbox.mode, limits: config.sandbox.limits, pythonPath: config.sandbox.pythonPath, cgroupParent: config.sandbox.cgroupParent,
        protectedPaths: [config.dataDir], log: (level, msg) => logger[level](msg),
      })
    : undefined;
  if (sandbox && !sandbox.available) logger.warn(`run_code is disabled: ${sandbox.reason}`);
  // One gate per provider in the process: every turn's calls wait their place in it, under limits the cluster shares.
  const gate = (provider: 'model' | 'search') => new ProviderGate({ provider, limits: config.providerLimits[provider], store, metrics });
  const runner = runsTurns && sandbox
    ? new TurnRunner({
        writes: new TurnWrites({ units, config }), tasks, groups, queue: new TurnQueue(store), queries: new TurnQueries(store), sources: new SourceSnapshots(store), locks: store.cluster,
        uploads, config, logger, metrics,
        agent: new Agent({
          provider: opts.provider ?? providerFrom(config),
          tools: createAgentTools({ search: config.search, fetch: { allowPrivate: config.fetchAllowPrivate }, sandbox, searchGate: gate('search') }),
          modelGate: gate('model'),
          retryDelaysMs: opts.retryDelaysMs,
          contextTokens: config.model?.contextTokens,
          toolConcurrency: config.toolConcurrency,
          subagentConcurrency: config.subagentConcurrency,
        }),
      })
    : undefined;
  if (runner) {
    units.onTurnReady = () => runner.wake();
    units.onTurnCancelled = (turnId) => runner.cancel(turnId);
  }
  const relay = new ClusterRelay({
    store, bus, origin: config.workerId, logger,
    // A worker serves no streams or long-polls, so other processes' events are nothing to it.
    relayEvents: config.role !== 'worker',
    onControl: (message) => {
      if (message.type === 'wake') runner?.wake();
      else if (message.type === 'cancel') runner?.cancel(message.turnId);
      else if (message.type === 'key_revoked') accounts.forgetKey(message.keyId);
    },
  });
  let ready = false;
  const idempotency = new IdempotencyRecords(store);
  const app = await buildApp({
    config, logger, events, commands, queries, accounts, uploads, webhooks, idempotency, groups, metrics,
    ready: () => ready,
    pingStore: () => store.ping(),
    rateWindows: store.shared ? store.cluster : null,
  });

  let starterKey: string | null = null;
  const startWorkers = async () => {
    await runner?.start({ reclaimAll: store.kind === 'sqlite' });
    dispatcher?.start();
    pruner?.start();
  };
  return {
    config, app, store, bus, tasks, accounts, runner,
    get starterKey() {
      return starterKey;
    },
    async listen() {
      await relay.start();
      await app.listen({ host: config.host, port: config.port });
      starterKey = await accounts.ensureStarterAccount(config.starterCredits, opts.onStarterKey);
      await startWorkers();
      ready = true;
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : config.port;
      const host = config.host.includes(':') ? `[${config.host}]` : config.host;
      return `http://${host}:${port}`;
    },
    startWorkers,
    async close() {
      ready = false;
      // Each step runs even if an earlier one failed (e.g. the store is already gone).
      try {
        await runner?.shutdown();
        await dispatcher?.stop();
        await pruner?.stop();
        await sandbox?.close();
        await relay.stop();
      } finally {
        try {
          await app.close();
        } finally {
          await store.close().catch((err) => logger.warn({ err }, 'closing the store failed'));
        }
      }
    },
  };
}
