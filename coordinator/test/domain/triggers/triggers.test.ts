import { describe, expect, it } from 'vitest';
import type { Agent } from '../../../src/domain/model/agents.js';
import type { Trigger } from '../../../src/domain/model/triggers.js';
import {
  changedFields,
  checkChatKeywordClash,
  checkTriggerAgent,
  resolveTriggerConfig,
  type TriggerConfig,
  type TriggerInput,
} from '../../../src/domain/triggers/triggers.js';
import { problems } from '../validation-problems.js';

const AGENT = '11111111-1111-4111-8111-111111111111';
const base: TriggerInput = {
  name: 'deploy',
  agentId: AGENT,
  scopeType: 'workflow',
  workflowName: 'deploy',
  responseMode: 'async',
};

const paths = (fn: () => unknown) => problems(fn).map((p) => p.path);

describe('trigger configuration on create', () => {
  it('fills the defaults of a webhook trigger', () => {
    expect(resolveTriggerConfig(base, null)).toEqual({
      name: 'deploy',
      type: 'webhook',
      agentId: AGENT,
      agentSelector: null,
      fanout: null,
      maxParallel: null,
      scopeType: 'workflow',
      workflowName: 'deploy',
      responseMode: 'async',
      responseTimeoutMs: 30000,
      allowedRefs: null,
      allowDebug: false,
      notifyProvider: null,
      notifyTeamId: null,
      notifyChannelId: null,
      notifyOn: 'none',
      cronExpression: null,
      cronTimezone: null,
      cronEnabled: null,
      cronMissedPolicy: null,
      cronOverlapPolicy: null,
      params: null,
      ref: null,
      chatTeamId: null,
      chatChannelId: null,
      chatKeyword: null,
      chatAllowedUserIds: null,
    });
  });

  it('requires name, agentId, scopeType and responseMode', () => {
    expect(paths(() => resolveTriggerConfig({}, null))).toEqual(
      expect.arrayContaining(['body.name', 'body.agentId', 'body.scopeType', 'body.responseMode']),
    );
  });

  it('trims the name and refuses a blank one or control characters', () => {
    expect(resolveTriggerConfig({ ...base, name: '  deploy  ' }, null).name).toBe('deploy');
    expect(paths(() => resolveTriggerConfig({ ...base, name: '   ' }, null))).toEqual(['body.name']);
    expect(paths(() => resolveTriggerConfig({ ...base, name: 'a\u0007b' }, null))).toEqual(['body.name']);
  });

  it('requires workflowName with scopeType workflow', () => {
    const { workflowName: _, ...rest } = base;
    expect(problems(() => resolveTriggerConfig(rest, null))).toEqual([
      { path: 'body.workflowName', message: expect.stringContaining('scopeType is "workflow"') },
    ]);
    expect(paths(() => resolveTriggerConfig({ ...base, workflowName: null }, null))).toEqual(['body.workflowName']);
  });

  it('refuses a workflowName with scopeType agent but accepts null', () => {
    expect(paths(() => resolveTriggerConfig({ ...base, scopeType: 'agent' }, null))).toEqual(['body.workflowName']);
    const config = resolveTriggerConfig({ ...base, scopeType: 'agent', workflowName: null }, null);
    expect(config.workflowName).toBeNull();
  });

  it('needs team and channel with a notification provider, and then notifies always by default', () => {
    expect(paths(() => resolveTriggerConfig({ ...base, notifyProvider: 'slack' }, null))).toEqual([
      'body.notifyTeamId',
      'body.notifyChannelId',
    ]);
    const config = resolveTriggerConfig(
      { ...base, notifyProvider: 'slack', notifyTeamId: 'T1', notifyChannelId: 'C1' },
      null,
    );
    expect(config).toMatchObject({
      notifyProvider: 'slack',
      notifyTeamId: 'T1',
      notifyChannelId: 'C1',
      notifyOn: 'always',
    });
    const failures = resolveTriggerConfig(
      { ...base, notifyProvider: 'discord', notifyTeamId: 'G1', notifyChannelId: 'C1', notifyOn: 'failure' },
      null,
    );
    expect(failures.notifyOn).toBe('failure');
  });

  it('refuses notification fields without a provider', () => {
    expect(
      paths(() =>
        resolveTriggerConfig({ ...base, notifyTeamId: 'T1', notifyChannelId: 'C1', notifyOn: 'always' }, null),
      ),
    ).toEqual(['body.notifyTeamId', 'body.notifyChannelId', 'body.notifyOn']);
    expect(
      resolveTriggerConfig({ ...base, notifyProvider: null, notifyTeamId: null, notifyOn: 'none' }, null).notifyOn,
    ).toBe('none');
  });

  it('requires a valid cron expression on a cron trigger and defaults its zone and switch', () => {
    expect(paths(() => resolveTriggerConfig({ ...base, type: 'cron' }, null))).toEqual(['body.cronExpression']);
    expect(paths(() => resolveTriggerConfig({ ...base, type: 'cron', cronExpression: '61 * * * *' }, null))).toEqual([
      'body.cronExpression',
    ]);
    expect(resolveTriggerConfig({ ...base, type: 'cron', cronExpression: '0  3 * * *' }, null)).toMatchObject({
      type: 'cron',
      cronExpression: '0 3 * * *',
      cronTimezone: 'UTC',
      cronEnabled: true,
      cronMissedPolicy: 'skip',
      cronOverlapPolicy: 'skip',
      params: null,
      ref: null,
    });
  });

  it('takes the policies, fixed params and ref of a cron trigger, and refuses them on other kinds', () => {
    const cron = { ...base, type: 'cron' as const, cronExpression: '0 3 * * *' };
    expect(
      resolveTriggerConfig(
        { ...cron, cronMissedPolicy: 'run_once', cronOverlapPolicy: 'queue', params: { env: 'prod' }, ref: 'main' },
        null,
      ),
    ).toMatchObject({ cronMissedPolicy: 'run_once', cronOverlapPolicy: 'queue', params: { env: 'prod' }, ref: 'main' });
    expect(paths(() => resolveTriggerConfig({ ...base, params: { env: 'prod' }, ref: 'main' }, null))).toEqual([
      'body.params',
      'body.ref',
    ]);
    expect(paths(() => resolveTriggerConfig({ ...cron, scopeType: 'agent', workflowName: null }, null))).toEqual([
      'body.scopeType',
    ]);
    expect(paths(() => resolveTriggerConfig({ ...cron, allowedRefs: ['main'] }, null))).toEqual(['body.ref']);
    expect(paths(() => resolveTriggerConfig({ ...cron, allowedRefs: ['main'], ref: 'dev' }, null))).toEqual([
      'body.ref',
    ]);
    expect(paths(() => resolveTriggerConfig({ ...cron, params: { n: Number.NaN } }, null))).toEqual(['body.params.n']);
    // What a step could never get (DROVER_REF, DROVER_PARAM_<NAME>): control characters in refs, NUL in params.
    expect(
      paths(() =>
        resolveTriggerConfig(
          { ...cron, ref: 'a\u0000b', params: { x: 'a\u0000b' }, allowedRefs: ['ok', 'm\nx'] },
          null,
        ),
      ),
    ).toEqual(['body.params.x', 'body.ref', 'body.ref', 'body.allowedRefs.1']);
  });

  it('makes a cron trigger without answer settings: async, no debug, whatever responseMode it is sent', () => {
    const { responseMode: _, ...noMode } = base;
    const cron = { ...noMode, type: 'cron' as const, cronExpression: '0 3 * * *' };
    expect(resolveTriggerConfig(cron, null)).toMatchObject({
      responseMode: 'async',
      responseTimeoutMs: 30000,
      allowDebug: false,
    });
    expect(resolveTriggerConfig({ ...cron, responseMode: 'async', allowDebug: false }, null).responseMode).toBe(
      'async',
    );
    // Webhook and chat triggers still need one.
    expect(problems(() => resolveTriggerConfig(noMode, null))).toEqual([
      { path: 'body.responseMode', message: 'is required for a webhook trigger' },
    ]);
  });

  it('refuses sync, a sync wait and debug runs on a cron trigger, naming each', () => {
    const cron = { ...base, type: 'cron' as const, cronExpression: '0 3 * * *' };
    expect(
      problems(() =>
        resolveTriggerConfig({ ...cron, responseMode: 'sync', responseTimeoutMs: 5000, allowDebug: true }, null),
      ),
    ).toEqual([
      { path: 'body.responseMode', message: expect.stringContaining('a cron trigger answers no caller') },
      { path: 'body.responseTimeoutMs', message: expect.stringContaining('got `5000`') },
      { path: 'body.allowDebug', message: expect.stringContaining('a scheduled run is never a debug run') },
    ]);
  });

  it('checks and canonicalizes the cron time zone', () => {
    const cron = { ...base, type: 'cron' as const, cronExpression: '0 3 * * *' };
    expect(resolveTriggerConfig({ ...cron, cronTimezone: 'europe/paris', cronEnabled: false }, null)).toMatchObject({
      cronTimezone: 'Europe/Paris',
      cronEnabled: false,
    });
    expect(paths(() => resolveTriggerConfig({ ...cron, cronTimezone: 'Mars/Olympus' }, null))).toEqual([
      'body.cronTimezone',
    ]);
  });

  it('requires team, channel and keyword on a chat trigger', () => {
    for (const type of ['slack', 'discord'] as const) {
      expect(paths(() => resolveTriggerConfig({ ...base, type }, null))).toEqual([
        'body.chatTeamId',
        'body.chatChannelId',
        'body.chatKeyword',
      ]);
      const config = resolveTriggerConfig(
        { ...base, type, chatTeamId: 'T1', chatChannelId: 'C1', chatKeyword: 'deploy' },
        null,
      );
      expect(config).toMatchObject({
        type,
        chatTeamId: 'T1',
        chatChannelId: 'C1',
        chatKeyword: 'deploy',
        cronExpression: null,
      });
    }
  });

  it('refuses a chat keyword no command could run: one with `=` or an opening quote', () => {
    const chat = { ...base, type: 'slack' as const, chatTeamId: 'T1', chatChannelId: 'C1' };
    for (const chatKeyword of ['deploy', 'Deploy-2', 'r&d', 'x”', 'ünïcode']) {
      expect(resolveTriggerConfig({ ...chat, chatKeyword }, null).chatKeyword).toBe(chatKeyword);
    }
    for (const chatKeyword of ["it's", 'a=b', '=x', '"go"', '“go”', '‘go’', '„go“', 'x"y"']) {
      expect(
        problems(() => resolveTriggerConfig({ ...chat, chatKeyword }, null)),
        chatKeyword,
      ).toEqual([
        {
          path: 'body.chatKeyword',
          message: expect.stringMatching(/^must not contain `=` or an opening quote .*, got /),
        },
      ]);
    }
    // A keyword stored before stays when other fields change.
    const stored = { ...resolveTriggerConfig({ ...chat, chatKeyword: 'deploy' }, null), chatKeyword: 'a=b' };
    expect(resolveTriggerConfig({ name: 'renamed' }, stored)).toMatchObject({ name: 'renamed', chatKeyword: 'a=b' });
  });

  it('refuses fields of another kind instead of storing them', () => {
    expect(paths(() => resolveTriggerConfig({ ...base, cronExpression: '* * * * *', chatKeyword: 'x' }, null))).toEqual(
      ['body.cronExpression', 'body.chatKeyword'],
    );
    expect(
      paths(() => resolveTriggerConfig({ ...base, type: 'cron', cronExpression: '* * * * *', chatTeamId: 'T1' }, null)),
    ).toEqual(['body.chatTeamId']);
    expect(
      paths(() =>
        resolveTriggerConfig(
          { ...base, type: 'slack', chatTeamId: 'T', chatChannelId: 'C', chatKeyword: 'k', cronEnabled: true },
          null,
        ),
      ),
    ).toEqual(['body.cronEnabled']);
    // null is "none", so it is accepted anywhere.
    expect(resolveTriggerConfig({ ...base, cronExpression: null, chatKeyword: null }, null).type).toBe('webhook');
  });

  it('reports every problem at once', () => {
    const details = problems(() =>
      resolveTriggerConfig({ ...base, name: ' ', scopeType: 'agent', type: 'cron', notifyOn: 'success' }, null),
    );
    expect(details.map((d) => d.path)).toEqual([
      'body.name',
      'body.workflowName',
      'body.notifyOn',
      'body.cronExpression',
      'body.scopeType',
    ]);
  });
});

describe('trigger configuration on update', () => {
  const cronTrigger = resolveTriggerConfig(
    {
      ...base,
      type: 'cron',
      cronExpression: '0 3 * * *',
      cronTimezone: 'Europe/Paris',
      notifyProvider: 'slack',
      notifyTeamId: 'T',
      notifyChannelId: 'C',
      notifyOn: 'failure',
    },
    null,
  );

  it('keeps every field the request leaves out', () => {
    expect(resolveTriggerConfig({ name: 'nightly' }, cronTrigger)).toEqual({ ...cronTrigger, name: 'nightly' });
    expect(resolveTriggerConfig({}, cronTrigger)).toEqual(cronTrigger);
  });

  it('clears the stored fields of the old kind when the kind changes', () => {
    const webhook = resolveTriggerConfig({ type: 'webhook' }, cronTrigger);
    expect(webhook).toMatchObject({ type: 'webhook', cronExpression: null, cronTimezone: null, cronEnabled: null });
  });

  it('drops the answer settings of a sync, debug webhook trigger that becomes a cron trigger', () => {
    const sync = resolveTriggerConfig(
      { ...base, responseMode: 'sync', responseTimeoutMs: 5000, allowDebug: true },
      null,
    );
    expect(resolveTriggerConfig({ type: 'cron', cronExpression: '0 3 * * *' }, sync)).toMatchObject({
      type: 'cron',
      responseMode: 'async',
      responseTimeoutMs: 30000,
      allowDebug: false,
    });
  });

  it('requires the fields of the new kind when the kind changes', () => {
    expect(paths(() => resolveTriggerConfig({ type: 'discord' }, cronTrigger))).toEqual([
      'body.chatTeamId',
      'body.chatChannelId',
      'body.chatKeyword',
    ]);
  });

  it('clears workflowName when the scope becomes agent, and requires one when it becomes workflow', () => {
    const agentScoped = resolveTriggerConfig({ type: 'webhook', scopeType: 'agent' }, cronTrigger);
    expect(agentScoped.workflowName).toBeNull();
    expect(paths(() => resolveTriggerConfig({ scopeType: 'workflow' }, agentScoped))).toEqual(['body.workflowName']);
    expect(resolveTriggerConfig({ scopeType: 'workflow', workflowName: 'build' }, agentScoped).workflowName).toBe(
      'build',
    );
  });

  it('keeps notifyOn when the provider stays and resets it when the provider goes', () => {
    expect(resolveTriggerConfig({ notifyProvider: 'discord' }, cronTrigger).notifyOn).toBe('failure');
    expect(resolveTriggerConfig({ notifyProvider: null }, cronTrigger)).toMatchObject({
      notifyProvider: null,
      notifyTeamId: null,
      notifyChannelId: null,
      notifyOn: 'none',
    });
  });

  it('refuses the update when the merged whole is invalid', () => {
    expect(paths(() => resolveTriggerConfig({ cronExpression: '0 0 31 2 *' }, cronTrigger))).toEqual([
      'body.cronExpression',
    ]);
    expect(paths(() => resolveTriggerConfig({ notifyChannelId: null }, cronTrigger))).toEqual(['body.notifyChannelId']);
  });

  it('lists the changed fields', () => {
    expect(
      changedFields(cronTrigger, resolveTriggerConfig({ name: 'x', allowedRefs: ['main'], ref: 'main' }, cronTrigger)),
    ).toEqual(['name', 'allowedRefs', 'ref']);
    expect(changedFields(cronTrigger, cronTrigger)).toEqual([]);
  });
});

describe('trigger agent and keyword checks', () => {
  const agent = { id: AGENT, status: 'connected' } as Agent;

  it('accepts an active agent and refuses a missing or revoked one naming agentId', () => {
    expect(() => checkTriggerAgent(AGENT, agent)).not.toThrow();
    expect(paths(() => checkTriggerAgent(AGENT, null))).toEqual(['body.agentId']);
    expect(problems(() => checkTriggerAgent(AGENT, { ...agent, status: 'revoked' }))[0]!.message).toMatch(/revoked/);
  });

  it('refuses a second chat trigger on the same keyword and channel, case-insensitively', () => {
    const config: TriggerConfig = resolveTriggerConfig(
      { ...base, type: 'slack', chatTeamId: 'T', chatChannelId: 'C', chatKeyword: 'Deploy' },
      null,
    );
    const existing = { ...config, id: 'a', chatKeyword: 'deploy' } as Trigger;
    expect(() => checkChatKeywordClash(config, [existing], null)).toThrow(
      expect.objectContaining({ code: 'conflict' }),
    );
    expect(() => checkChatKeywordClash(config, [existing], 'a')).not.toThrow();
    expect(() => checkChatKeywordClash(config, [{ ...existing, chatChannelId: 'other' }], null)).not.toThrow();
    expect(() => checkChatKeywordClash(config, [{ ...existing, type: 'discord' }], null)).not.toThrow();
  });
});
