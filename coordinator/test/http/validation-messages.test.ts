import fs from 'node:fs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { PATTERN_MEANINGS, validationDetails } from '../../src/http/error-handler.js';
import { VERSION_PATTERN } from '../../src/domain/ota/inputs.js';
import { UUID_PATTERN } from '../../src/util/ids.js';

const OPENAPI = new URL('../../../shared/openapi/openapi.json', import.meta.url);

/**
 * The `pattern`s of the document's request bodies and parameters (not of its answers, nor of its
 * examples, which quote workflows' own param patterns), each with one place it stands.
 */
function requestPatterns(doc: unknown): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (node: unknown, where: string, inRequest: boolean): void => {
    if (Array.isArray(node)) {
      node.forEach((item, i) => walk(item, `${where}/${i}`, inRequest));
      return;
    }
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'examples' || key === 'example' || key === 'responses') continue;
      if (key === 'pattern' && typeof value === 'string') {
        if (inRequest && !found.has(value)) found.set(value, where);
        continue;
      }
      walk(value, `${where}/${key}`, inRequest || key === 'requestBody' || key === 'parameters');
    }
  };
  const { paths, components } = doc as { paths: object; components: { schemas: Record<string, unknown> } };
  walk(paths, '#/paths', false);
  // Named schemas are referenced from requests and answers alike: each is a request's until shown otherwise.
  walk(components.schemas, '#/components/schemas', true);
  return found;
}

const issue = (keyword: string, params: Record<string, unknown>, message = 'ajv says') => ({
  keyword,
  instancePath: '/version',
  message,
  params,
});

describe('validation messages', () => {
  it('speak of lengths in words, and an empty string only as empty', () => {
    expect(
      validationDetails(
        [issue('minLength', { limit: 1 }), issue('pattern', { pattern: VERSION_PATTERN }, 'must match pattern "x"')],
        'body',
      ),
    ).toEqual([{ path: 'body.version', message: 'must not be empty' }]);
    expect(validationDetails([issue('minLength', { limit: 3 })], 'body')).toEqual([
      { path: 'body.version', message: 'must be at least 3 characters long' },
    ]);
    expect(validationDetails([issue('maxLength', { limit: 128 })], 'body')).toEqual([
      { path: 'body.version', message: 'must be at most 128 characters long' },
    ]);
  });

  it('say what a known pattern means, and keep ajv’s words for the others', () => {
    expect(validationDetails([issue('pattern', { pattern: VERSION_PATTERN })], 'body')).toEqual([
      {
        path: 'body.version',
        message:
          'must not contain control characters or bidirectional formatting characters (U+202A to U+202E, U+2066 to U+2069)',
      },
    ]);
    expect(validationDetails([issue('pattern', { pattern: UUID_PATTERN })], 'querystring')).toEqual([
      { path: 'querystring.version', message: 'must be a UUID' },
    ]);
    expect(validationDetails([issue('pattern', { pattern: '^a+$' }, 'must match pattern "^a+$"')], 'body')).toEqual([
      { path: 'body.version', message: 'must match pattern "^a+$"' },
    ]);
  });

  it('know the meaning of every pattern a request is checked against (the OpenAPI document’s)', () => {
    const patterns = requestPatterns(JSON.parse(fs.readFileSync(OPENAPI, 'utf8')) as unknown);
    expect(patterns.size).toBeGreaterThan(10);
    const unexplained = [...patterns].filter(([pattern]) => PATTERN_MEANINGS[pattern] === undefined);
    expect(unexplained, 'add each to PATTERN_MEANINGS (coordinator/src/http/error-handler.ts)').toEqual([]);
  });

  it('name types and bounds in words', () => {
    expect(validationDetails([issue('type', { type: 'integer' })], 'body')).toEqual([
      { path: 'body.version', message: 'must be an integer' },
    ]);
    expect(validationDetails([issue('type', { type: 'integer,null' })], 'body')).toEqual([
      { path: 'body.version', message: 'must be an integer or null' },
    ]);
    expect(validationDetails([issue('minimum', { limit: 1, comparison: '>=' })], 'body')).toEqual([
      { path: 'body.version', message: 'must be at least 1' },
    ]);
    expect(validationDetails([issue('maximum', { limit: 168, comparison: '<=' })], 'body')).toEqual([
      { path: 'body.version', message: 'must be at most 168' },
    ]);
  });

  it('say that a body must name a field, and how many fields an object takes, in words', () => {
    // PATCH /orgs/:orgId/workflows/:workflowId with {}: ajv said "must NOT have fewer than 1 properties".
    expect(validationDetails([{ keyword: 'minProperties', instancePath: '', params: { limit: 1 } }], 'body')).toEqual([
      { path: 'body', message: 'must have at least one field' },
    ]);
    expect(validationDetails([issue('minProperties', { limit: 2 })], 'body')).toEqual([
      { path: 'body.version', message: 'must have at least 2 fields' },
    ]);
    expect(validationDetails([issue('maxProperties', { limit: 256 })], 'body')).toEqual([
      { path: 'body.version', message: 'must have at most 256 fields' },
    ]);
    expect(validationDetails([issue('maxProperties', { limit: 0 })], 'body')).toEqual([
      { path: 'body.version', message: 'must be empty' },
    ]);
  });

  it('say what a date-time looks like', () => {
    // GET /orgs/:orgId/audit?createdAfter=yesterday: ajv said must match format "date-time".
    expect(
      validationDetails([issue('format', { format: 'date-time' }, 'must match format "date-time"')], 'querystring'),
    ).toEqual([
      {
        path: 'querystring.version',
        message: 'must be a date and time with its offset, such as 2026-11-25T10:00:00Z or 2026-11-25T11:00:00+01:00',
      },
    ]);
    expect(validationDetails([issue('format', { format: 'der' }, 'must match format "der"')], 'body')).toEqual([
      { path: 'body.version', message: 'must match format "der"' },
    ]);
  });

  it('say how many items a list takes, in words', () => {
    // GET /orgs/:orgId/agents with 201 ids: ajv said "must NOT have more than 200 items".
    expect(validationDetails([issue('maxItems', { limit: 200 })], 'querystring')).toEqual([
      { path: 'querystring.version', message: 'must have at most 200 items' },
    ]);
    expect(validationDetails([issue('minItems', { limit: 1 })], 'body')).toEqual([
      { path: 'body.version', message: 'must not be empty' },
    ]);
    expect(validationDetails([issue('minItems', { limit: 2 })], 'body')).toEqual([
      { path: 'body.version', message: 'must have at least 2 items' },
    ]);
  });

  it('say which items of a list repeat, from what ajv reports', () => {
    // A bulk relabel's `remove: ["ring", "ring"]`: ajv said "must NOT have duplicate items".
    const validate = new Ajv({ allErrors: true }).compile({ type: 'array', uniqueItems: true });
    expect(validate(['site', 'ring', 'ring'])).toBe(false);
    expect(validationDetails(validate.errors!, 'body.remove')).toEqual([
      { path: 'body.remove', message: 'must not list the same value twice (items 1 and 2 are the same)' },
    ]);
  });
});
