export { AccountBody, AccountParams, CreditsBody, KeyParams } from '../contract/index.js';
