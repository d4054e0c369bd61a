/**
 * `quarry serve [--role all|api|worker]`: runs the service with the configuration in the
 * environment (decisions §12). Loaded only for `serve`, so client commands start without the
 * server's dependencies.
 */
import { loadConfig, ConfigError, type Role } from '../config.js';

const SERVE_USAGE = 'usage: quarry serve [--role all|api|worker]\n';

function usage(): never {
  process.stderr.write(SERVE_USAGE);
  process.exit(2);
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
  const quarry = await createQuarry(config);
  const url = await quarry.listen();
  process.stdout.write(`quarry listening on ${url}\n`);
  if (quarry.starterKey) process.stdout.write(`starter api key: ${quarry.starterKey}\n`);
  if (!config.model) process.stdout.write('no model provider configured: set QUARRY_MODEL_BASE_URL to run turns\n');
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
}

/** Runs the server; a configuration error or a failed start exits 1 with its message. */
export function runServe(args: string[]): void {
  serve(args).catch((err) => {
    process.stderr.write(`${err instanceof ConfigError ? err.message : (err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
