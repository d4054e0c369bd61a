/**
 * The test kit's tool check: outside CI a missing tool skips a test with the reason; with CI set
 * it fails the test and names the tool, so CI never passes by skipping.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { MissingToolError, skipTestWithout, skipUnlessAvailable } from '../kit/require-tool.js';

const TOOL = 'quarry-no-such-tool';
const ciBefore = process.env.CI;

describe('skipUnlessAvailable', () => {
  afterEach(() => {
    if (ciBefore === undefined) delete process.env.CI;
    else process.env.CI = ciBefore;
  });

  it('outside CI, a missing tool is a skip whose reason names the tool and why', () => {
    for (const ci of [undefined, '', '0', 'false']) {
      if (ci === undefined) delete process.env.CI;
      else process.env.CI = ci;
      assert.equal(skipUnlessAvailable(TOOL, 'not on PATH'), `needs ${TOOL}, which cannot be used here: not on PATH`, `CI=${ci}`);
    }
  });

  it('in CI, a missing tool fails with a message naming it', () => {
    for (const ci of ['true', '1', 'yes']) {
      process.env.CI = ci;
      assert.throws(() => skipUnlessAvailable(TOOL, 'not on PATH'), (err: unknown) => {
        assert.ok(err instanceof MissingToolError);
        assert.equal(err.message, `CI=${ci}, and this test needs ${TOOL}, which cannot be used here: not on PATH`);
        return true;
      });
    }
  });

  it('a tool that is here runs the test, in CI or not', () => {
    for (const ci of [undefined, 'true']) {
      if (ci === undefined) delete process.env.CI;
      else process.env.CI = ci;
      assert.equal(skipUnlessAvailable(TOOL, false), false);
    }
  });

  it('in CI, a test that finds the tool missing only while it runs fails instead of skipping', (t) => {
    process.env.CI = 'true';
    assert.throws(() => skipTestWithout(t, TOOL, 'probe failed'), MissingToolError);
  });
});
