/**
 * `quarry keys create [--account NAME]`, run on the server's host: prints a new API key for the
 * `default` account (or the oldest account named NAME), written straight into the store the
 * server uses (QUARRY_DATA_DIR, or QUARRY_DATABASE_URL and QUARRY_DATABASE_SCHEMA). Access to
 * that store is the credential, so it works without the server running and without the admin
 * key: the way to a key when the starter key was lost. The store's modules are loaded only here.
 */
import { ConfigError, loadConfig } from '../../config.js';
import { QuarryError } from '../../errors.js';
import { printNewKey, type CliContext } from '../context.js';
import { ExitCode, type ExitCodeValue } from '../exit-codes.js';

export async function createKeyOnHost(ctx: CliContext, accountName: string): Promise<ExitCodeValue> {
  const fail = (error: string, message: string, code: ExitCodeValue): ExitCodeValue => {
    ctx.err(ctx.json ? JSON.stringify({ error, message, retryable: false, status: null }) : `quarry: ${message}`);
    return code;
  };
  let config;
  try {
    config = loadConfig(ctx.io.env);
  } catch (err) {
    if (err instanceof ConfigError) return fail('usage', err.message, ExitCode.usage);
    throw err;
  }
  const { openStore, storeExists, storeLocation } = await import('../../store/open-store.js');
  // A wrong QUARRY_DATA_DIR would otherwise make a new, empty store whose keys no server knows.
  if (!storeExists(config)) {
    return fail('not_found', `no Quarry store at ${storeLocation(config)}: run this on the server's host with the server's QUARRY_DATA_DIR (or QUARRY_DATABASE_URL)`, ExitCode.notFound);
  }
  const { Accounts } = await import('../../accounts/accounts.js');
  const store = await openStore(config, { applicationName: 'quarry keys create' });
  try {
    await store.migrate();
    const { account, keyId, apiKey } = await new Accounts(store).createKeyForName(accountName, config.starterCredits);
    if (ctx.json) ctx.printJson({ account_id: account.id, name: account.name, key_id: keyId, api_key: apiKey });
    else {
      ctx.out(`account  ${account.id}\nname     ${account.name}`);
      printNewKey(ctx, { key_id: keyId, api_key: apiKey });
    }
    return ExitCode.ok;
  } catch (err) {
    if (err instanceof QuarryError && err.code === 'not_found') return fail('not_found', `${err.message} (${storeLocation(config)})`, ExitCode.notFound);
    throw err;
  } finally {
    await store.close();
  }
}
