/**
 * `quarry serve [--role all|api|worker]`: runs the service with the configuration in the
 * environment (decisions §12). Loaded only for `serve`, so client commands start without the
 * server's dependencies.
 */
import fs from 'node:fs';
import { loadConfig, ConfigError, type Config, type Role } from '../config.js';
import { quarryCommandLine } from './invocation.js';

const SERVE_USAGE = 'usage: quarry serve [--role all|api|worker]\n';

/** A start that failed for a reason the operator can fix: its message is all they need to see. */
class StartError extends Error {
  readonly name = 'StartError';
}

function usage(): never {
  process.stderr.write(SERVE_USAGE);
  process.exit(2);
}

/** What to do about a failed listen, in one line; undefined when it is not a known configuration problem. */
function listenProblem(err: unknown, config: Config): string | undefined {
  const where = `${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`;
  switch ((err as NodeJS.ErrnoException).code) {
    case 'EADDRINUSE':
      return `quarry: cannot listen on ${where}: the port is in use (another Quarry or another server): stop that, or set QUARRY_PORT to a free port, e.g. QUARRY_PORT=${config.port === 8080 ? 8081 : 8080} npm start`;
    case 'EACCES':
      return `quarry: cannot listen on ${where}: not allowed to use that port: set QUARRY_PORT to a port above 1023, e.g. QUARRY_PORT=8080`;
    case 'EADDRNOTAVAIL':
      return `quarry: cannot listen on ${where}: ${config.host} is not an address of this machine: set QUARRY_HOST, e.g. QUARRY_HOST=127.0.0.1`;
    default:
      return undefined;
  }
}

/** Written straight to stdout before the key is stored (see Accounts.ensureStarterAccount). */
function printStarterKey(apiKey: string, config: Config): void {
  fs.writeSync(1, `starter api key: ${apiKey}\n`
    + `  for the "default" account (${config.starterCredits} credits); shown once, keep it. Lost it? On this host: ${quarryCommandLine('keys create')}\n`);
}

async function serve(args: string[]): Promise<void> {
  const roleAt = args.indexOf('--role');
  const overrides: { role?: Role } = {};
  if (roleAt >= 0) {
    const role = args[roleAt + 1];
    if (role !== 'all' && role !== 'api' && role !== 'worker') usage();
    overrides.role = role;
  }
  const config = loadConfig(process.env, overrides);
  // Loaded after the arguments are checked: a usage error answers without starting the server's modules.
  const { createQuarry } = await import('../server.js');
  let announced = false;
  const quarry = await createQuarry(config, {
    onStarterKey: (apiKey) => {
      printStarterKey(apiKey, config);
      announced = true;
    },
  });
  let url: string;
  try {
    url = await quarry.listen();
  } catch (err) {
    await quarry.close().catch(() => {});
    // Printed, then not stored: the store is still empty and the next start prints another.
    if (announced && quarry.starterKey === null) process.stderr.write('quarry: the starter key printed above was not stored; the next start prints a new one\n');
    const problem = listenProblem(err, config);
    throw problem ? new StartError(problem) : err;
  }
  // Handlers first: whoever reads the line below may signal at once, and must get a clean shutdown.
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    quarry.app.log.info({ signal }, 'shutting down');
    quarry.close().then(() => process.exit(0), (err) => {
      quarry.app.log.error({ err }, 'shutdown failed');
      process.exit(1);
    });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.stdout.write(`quarry listening on ${url}\n`);
  if (!config.model && config.role !== 'api') {
    process.stdout.write('no model configured, so every turn fails at once: point Quarry at an OpenAI-compatible endpoint, e.g. QUARRY_MODEL_BASE_URL=http://127.0.0.1:11434/v1 QUARRY_MODEL=qwen2.5 npm start, or watch a scripted turn with QUARRY_MODEL_PROVIDER=demo npm start (docs/agent.md)\n');
  } else if (config.model?.provider === 'demo' && config.role !== 'api') {
    process.stdout.write('demo model: turns are scripted (they count the words of each message) and no real model is asked; unset QUARRY_MODEL_PROVIDER and set QUARRY_MODEL_BASE_URL to research for real\n');
  }
}

/** Runs the server; a configuration error or a busy port exits 1 with one line, any other failed start with its stack. */
export function runServe(args: string[]): void {
  serve(args).catch((err) => {
    process.stderr.write(`${err instanceof ConfigError || err instanceof StartError ? err.message : (err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
