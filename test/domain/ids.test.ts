/** Ids made at every request come from pooledIds: slices of blocks rendered ahead. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pooledIds } from '../../src/ids.js';

describe('pooled ids', () => {
  it('each id is the prefix and its random hex digits, none repeated across blocks', () => {
    const next = pooledIds('req_', 16);
    const ids = Array.from({ length: 300 }, next);
    for (const id of ids) assert.match(id, /^req_[0-9a-f]{32}$/);
    assert.equal(new Set(ids).size, ids.length);
  });

  it('without a prefix, just the digits', () => {
    assert.match(pooledIds('', 12)(), /^[0-9a-f]{24}$/);
  });
});
