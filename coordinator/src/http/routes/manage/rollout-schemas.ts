import { PAUSED_REASONS, ROLLOUT_EVENTS, ROLLOUT_STATUSES, type RolloutPlan } from '../../../domain/model/rollouts.js';
import { MAX_MIN_ATTEMPTS, MAX_SOAK_SECONDS, MAX_WAVES } from '../../../domain/ota/rollout-rules.js';
import { nullableTimestamp, timestamp, uuid } from '../../schemas/common.js';
import { named } from '../../schemas/named.js';

/** Staged rollouts (docs/ota.md, "Staged rollouts"): the publish body's plan and the rollout's view. */

export interface PublishBody {
  rollout?: Omit<RolloutPlan, 'minAttempts'> & { minAttempts?: number };
}

export const PublishBodySchema = {
  type: ['object', 'null'],
  additionalProperties: false,
  description: 'Without a body (or without `rollout`) the release is published to every device of its channel at once.',
  examples: [{}, { rollout: { waves: [1, 10, 50, 100], soakSeconds: 600, maxFailureRate: 0.05, minAttempts: 3 } }],
  properties: {
    rollout: {
      type: 'object',
      additionalProperties: false,
      required: ['waves', 'soakSeconds', 'maxFailureRate'],
      properties: {
        waves: {
          type: 'array',
          items: { type: 'number' },
          description: `increasing percentages of the channel's devices, the last 100 (at most ${MAX_WAVES})`,
        },
        soakSeconds: {
          type: 'integer',
          description: `seconds to wait after a wave's last update ended before the next wave (0 to ${MAX_SOAK_SECONDS})`,
        },
        maxFailureRate: {
          type: 'number',
          description:
            'from 0 to 1: the rollout pauses by itself when failed ÷ ended updates of the current wave is strictly above it',
        },
        minAttempts: {
          type: 'integer',
          description: `updates of the wave that must have ended before its failure rate is judged (default 1, at most ${MAX_MIN_ATTEMPTS})`,
        },
      },
    },
  },
} as const;

export interface RolloutMoveBody {
  wave?: number;
}

/** The body of a move (pause, resume, advance, abort): none, or the wave the caller saw. */
export const RolloutMoveBodySchema = {
  type: ['object', 'null'],
  additionalProperties: false,
  description:
    'Without a body (or without `wave`) the move applies to the rollout as it is. With `wave`, only if the rollout is still at that wave (else 409): a repeated or retried move does not move it again.',
  examples: [{}, { wave: 1 }],
  properties: {
    wave: {
      type: 'integer',
      minimum: 0,
      description: "the rollout's `currentWave` (0-based) as the caller saw it",
    },
  },
} as const;

const count = { type: 'integer', minimum: 0 } as const;

export const RolloutSchema = named('Rollout', {
  type: 'object',
  examples: [
    {
      releaseId: '019ac3e2-6b1f-7c4e-9d2a-3f5b6c7d8e9f',
      applicationId: '5b1c0d2e-3f4a-4b5c-8d6e-7f8091a2b3c4',
      channel: 'stable',
      status: 'running',
      currentWave: 1,
      deviceCount: 200,
      soakSeconds: 600,
      maxFailureRate: 0.05,
      minAttempts: 1,
      waves: [
        {
          percent: 1,
          devices: 2,
          succeeded: 2,
          failed: 0,
          pending: 0,
          startedAt: '2026-11-28T09:00:00.000Z',
          endedAt: '2026-11-28T09:04:10.000Z',
        },
        {
          percent: 10,
          devices: 20,
          succeeded: 7,
          failed: 0,
          pending: 11,
          startedAt: '2026-11-28T09:14:10.000Z',
          endedAt: null,
        },
        { percent: 100, devices: 200, succeeded: 0, failed: 0, pending: 180, startedAt: null, endedAt: null },
      ],
      pausedReason: null,
      soakEndsAt: null,
      history: [
        {
          at: '2026-11-28T09:00:00.000Z',
          event: 'start',
          by: '8c2f1a3b-4d5e-4f60-9a7b-8c9d0e1f2a3b',
          detail: '200 devices in waves of 1, 10, 100 %',
        },
        {
          at: '2026-11-28T09:04:10.000Z',
          event: 'wave_end',
          by: 'system',
          detail: 'wave 1: every update ended (2 succeeded, 0 failed); soak of 600 s',
        },
        { at: '2026-11-28T09:14:10.000Z', event: 'advance', by: 'system', detail: 'wave 2 of 3' },
      ],
      createdAt: '2026-11-28T09:00:00.000Z',
      endedAt: null,
    },
  ],
  required: [
    'releaseId',
    'applicationId',
    'channel',
    'status',
    'currentWave',
    'deviceCount',
    'soakSeconds',
    'maxFailureRate',
    'minAttempts',
    'waves',
    'pausedReason',
    'soakEndsAt',
    'history',
    'createdAt',
    'endedAt',
  ],
  properties: {
    releaseId: uuid,
    applicationId: uuid,
    channel: { type: 'string' },
    status: {
      type: 'string',
      enum: ROLLOUT_STATUSES,
      description:
        'running, paused (pausedReason says why), then completed (every wave went through), aborted (by an operator or a yank) or superseded (another release of the channel was published)',
    },
    currentWave: { type: 'integer', description: 'the current wave, 0-based' },
    deviceCount: { ...count, description: "the channel's devices when the release was published" },
    soakSeconds: count,
    maxFailureRate: { type: 'number' },
    minAttempts: { type: 'integer' },
    waves: {
      type: 'array',
      items: {
        type: 'object',
        required: ['percent', 'devices', 'succeeded', 'failed', 'pending', 'startedAt', 'endedAt'],
        properties: {
          percent: { type: 'number' },
          devices: { ...count, description: 'the devices the waves up to this one hold (cumulative)' },
          succeeded: { ...count, description: 'of the devices new in this wave: those that run the release' },
          failed: { ...count, description: 'of the devices new in this wave: those whose update to it failed' },
          pending: { ...count, description: 'of the devices new in this wave: the others' },
          startedAt: nullableTimestamp,
          endedAt: { ...nullableTimestamp, description: "the wave's last update ended (the soak follows)" },
        },
      },
    },
    pausedReason: { type: ['string', 'null'], enum: [...PAUSED_REASONS, null] },
    soakEndsAt: {
      ...nullableTimestamp,
      description:
        "when the current wave's soak ends (null: its updates have not all ended, or the rollout is not running)",
    },
    history: {
      type: 'array',
      items: {
        type: 'object',
        required: ['at', 'event', 'by', 'detail'],
        properties: {
          at: timestamp,
          event: { type: 'string', enum: ROLLOUT_EVENTS },
          by: { type: 'string', description: "a user id, or 'system'" },
          detail: { type: ['string', 'null'] },
        },
      },
    },
    createdAt: timestamp,
    endedAt: nullableTimestamp,
  },
} as const);
