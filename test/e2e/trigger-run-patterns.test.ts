import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflow } from '../helpers/agent.js';
import { startRunFixture, type RunFixture } from '../helpers/trigger-runs.js';

/**
 * A param `pattern` is an operator's regular expression, tested against a caller's value: RE2
 * syntax, matched in linear time (docs/agent.md, "Param patterns"). The timing of the engine is
 * proven in shared/test/pattern-match.test.ts; here, the coordinator's two ends of it.
 */
describe('param patterns', () => {
  let f: RunFixture;
  beforeAll(async () => {
    f = await startRunFixture([
      workflow('greedy', { paramsSchema: [{ name: 'word', type: 'string', pattern: '^(a|a)*$' }] }),
    ]);
  });
  afterAll(() => f?.close());

  // Issue 29: 28 characters against `^(a|a)*$` held the event loop for ~14 s.
  it('answers a value that would backtrack for hours as a plain mismatch, and still matches good values', async () => {
    const trigger = await f.createTrigger({ workflowName: 'greedy' });
    const token = await f.token([trigger.id]);
    const bad = await f.run(token, trigger.id, { params: { word: `${'a'.repeat(40)}b` } });
    expect(bad.status, bad.text).toBe(422);
    expect(bad.body.details).toEqual([
      { path: 'body.params.word', message: expect.stringContaining('must match the pattern `^(a|a)*$`') },
    ]);
    const good = await f.run(token, trigger.id, { params: { word: 'aaaa' } });
    expect(good.status, good.text).toBe(202);
  });

  it('refuses a reported pattern that RE2 does not support, at its path, naming the feature', async () => {
    const res = await f.agent.request(
      'PUT',
      '/v1/agent/workflows',
      {
        workflows: [
          workflow('lookahead', { paramsSchema: [{ name: 'branch', type: 'string', pattern: '^(?!main$)' }] }),
        ],
      },
      { now: f.clock.now() },
    );
    expect(res.status, res.text).toBe(422);
    expect(res.body.details).toEqual([
      {
        path: 'body.workflows.0.paramsSchema.0.pattern',
        message: expect.stringMatching(
          /^uses a lookahead `\(\?=\.\.\.\)`\/`\(\?!\.\.\.\)`, which patterns do not support/,
        ),
      },
    ]);
  });
});
