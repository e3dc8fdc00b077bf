import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflow } from '../helpers/agent.js';
import { startRunFixture, type RunFixture } from '../helpers/trigger-runs.js';

/**
 * A param `pattern` is an operator's regular expression, tested against a caller's value: one
 * that backtracks exponentially (`^(a+)+$`) must not block the coordinator (docs/trigger-runs.md).
 */
describe('param patterns against hostile values', () => {
  let f: RunFixture;
  beforeAll(async () => {
    f = await startRunFixture([
      workflow('greedy', { paramsSchema: [{ name: 'word', type: 'string', pattern: '^(a+)+$' }] }),
    ]);
  });
  afterAll(() => f?.close());

  it('answers a value that would backtrack for minutes at once, and still matches good values', async () => {
    const trigger = await f.createTrigger({ workflowName: 'greedy' });
    const token = await f.token([trigger.id]);
    const started = performance.now();
    const bad = await f.run(token, trigger.id, { params: { word: `${'a'.repeat(40)}b` } });
    expect(bad.status, bad.text).toBe(422);
    expect(bad.body.details).toEqual([
      { path: 'body.params.word', message: expect.stringContaining('could not be checked against the pattern') },
    ]);
    // Unguarded, 40 characters take hours; guarded, well under the test's timeout.
    expect(performance.now() - started).toBeLessThan(10_000);
    const good = await f.run(token, trigger.id, { params: { word: 'aaaa' } });
    expect(good.status, good.text).toBe(202);
  });
});
