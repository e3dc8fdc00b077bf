import { MAX_SELECTOR_LENGTH } from '@drover/shared';
import { UUID_PATTERN } from '../../util/ids.js';
import { ErrorCodes } from '../../errors.js';

/** JSON schemas shared by routes. Every route declares its request and response schemas. */

export const ErrorBodySchema = {
  $id: 'ErrorBody',
  type: 'object',
  required: ['statusCode', 'code', 'message'],
  properties: {
    statusCode: { type: 'integer' },
    code: { type: 'string', enum: Object.keys(ErrorCodes), description: 'docs/errors.md lists them' },
    message: { type: 'string' },
    details: {
      description:
        'validation_failed: the `{path, message}` of each problem; other codes: what the error is about (limit_reached: `limit`, `max`, `setting`)',
      anyOf: [
        {
          type: 'array',
          items: {
            type: 'object',
            required: ['path', 'message'],
            properties: { path: { type: 'string' }, message: { type: 'string' } },
          },
        },
        { type: 'object', additionalProperties: true },
      ],
    },
  },
} as const;

/** Standard error responses to spread into a route's `response` schema. */
export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, { $ref: 'ErrorBody#' }])) as Record<number, { $ref: string }>;

export const uuid = { type: 'string', pattern: UUID_PATTERN } as const;
/** No space nor other whitespace anywhere (a chat provider's ids, a chat keyword). */
export const NO_WHITESPACE_PATTERN = '^\\S+$';
export const timestamp = { type: 'string', format: 'date-time' } as const;
export const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;

export const idParams = (...names: string[]) =>
  ({
    type: 'object',
    required: names,
    properties: Object.fromEntries(names.map((n) => [n, uuid])),
  }) as const;

export const orgParams = idParams('orgId');

/** A body-less POST/DELETE: nothing (Fastify validates a missing body as null), or an empty JSON object. */
export const emptyBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  maxProperties: 0,
  examples: [{}],
} as const;

/** A label selector (docs/fleets.md) in a query string or a body; `nonEmpty` refuses `""` (422). */
export function selectorSchema(description: string, options: { nonEmpty?: boolean; examples?: string[] } = {}) {
  return {
    type: 'string' as const,
    ...(options.nonEmpty ? { minLength: 1 } : {}),
    maxLength: MAX_SELECTOR_LENGTH,
    description,
    ...(options.examples ? { examples: options.examples } : {}),
  };
}
