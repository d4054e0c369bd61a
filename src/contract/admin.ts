/** Admin routes' bodies and answers (decisions §7). */
import { Type } from 'typebox';
import { component, MAX_CREDITS, Nullable, Str, Timestamp } from './common.js';
import { TurnKindSchema } from './task.js';

const Credits = (description: string) => Type.Number({ description: `${description} (at most 6 decimal places).` });

export const AccountBody = Type.Object({ name: Str({ minLength: 1, maxLength: 200 }), credits: Type.Number({ minimum: 0, maximum: MAX_CREDITS }) });
export const CreditsBody = Type.Object({ amount: Type.Number({ minimum: -MAX_CREDITS, maximum: MAX_CREDITS, description: 'Credits to add; negative takes them (the balance never goes below 0).' }) });
const AccountId = Str({ minLength: 1, maxLength: 100 });
export const AccountParams = Type.Object({ account_id: AccountId });
export const KeyParams = Type.Object({ account_id: AccountId, key_id: Str({ minLength: 1, maxLength: 100 }) });

export const CreatedAccount = component('CreatedAccount', Type.Object({
  account_id: Type.String(),
  name: Type.String(),
  balance: Credits('The starting balance'),
  api_key: Type.String({ description: 'Shown once.' }),
  key_id: Type.String(),
}));

export const Account = component('Account', Type.Object({
  account_id: Type.String(),
  name: Type.String(),
  balance: Credits('Credits left'),
  credits_used: Credits('Credits used so far'),
  created_at: Timestamp(),
}));

export const OwnAccount = component('OwnAccount', Type.Object({
  account_id: Type.String(),
  name: Type.String(),
  balance: Credits('Credits left'),
  credits_used: Credits('Credits used so far'),
}, { description: 'The account the API key belongs to.' }));

export const Balance = component('Balance', Type.Object({ account_id: Type.String(), balance: Credits('Credits left') }));

export const CreatedKey = component('CreatedKey', Type.Object({ key_id: Type.String(), api_key: Type.String({ description: 'Shown once.' }) }));

export const KeyInfo = component('KeyInfo', Type.Object({ key_id: Type.String(), created_at: Timestamp(), revoked_at: Nullable(Timestamp()) }));
export const KeyList = component('KeyList', Type.Object({ keys: Type.Array(KeyInfo) }));

export const TurnUsage = component('TurnUsage', Type.Object({
  task_id: Type.String(),
  turn_id: Type.String(),
  kind: TurnKindSchema,
  status: Type.String(),
  credits: Credits('Credits the turn used'),
  tokens_in: Type.Integer({ minimum: 0, description: 'All input tokens, cached ones included.' }),
  tokens_in_cached: Type.Integer({ minimum: 0, description: 'Of tokens_in, those read from the provider\'s prompt cache (priced at QUARRY_PRICE_CACHED_INPUT).' }),
  tokens_out: Type.Integer({ minimum: 0 }),
  tool_calls: Type.Integer({ minimum: 0 }),
  compactions: Type.Integer({ minimum: 0, description: 'How often the turn\'s conversation was compacted to fit the model\'s context.' }),
  rows_written: Type.Integer({ minimum: 0, description: 'Rows the turn wrote.' }),
  verified_rows: Type.Integer({ minimum: 0, description: 'Of them, rows whose every source was verified.' }),
  unverified_rows: Type.Integer({ minimum: 0, description: 'Of them, rows with a source that was not verified, or none.' }),
}));
export const Usage = component('Usage', Type.Object({ turns: Type.Array(TurnUsage) }));
