import { describe, expect, it } from 'vitest';
import type { ParamDefinition } from '@drover/shared';
import type { StoredFile } from '../../../src/domain/model/files.js';
import type { FileCaller } from '../../../src/domain/files/access.js';
import type { FileRefLookup } from '../../../src/domain/files/file-service.js';
import { checkRunFileRefs, type FileRefLookups } from '../../../src/domain/trigger-run/file-refs.js';
import { resolveRunParams } from '../../../src/domain/trigger-run/params.js';
import { AppError } from '../../../src/errors.js';

const ACTIVE = '11111111-1111-4111-8111-111111111111';
const PENDING = '22222222-2222-4222-8222-222222222222';
const UNREADABLE = '33333333-3333-4333-8333-333333333333';
const UNKNOWN = '44444444-4444-4444-8444-444444444444';

const caller: FileCaller = { orgId: 'org', scopes: [], tokenId: 'token', userId: null };

function file(id: string, status: StoredFile['status']): StoredFile {
  return { id, status } as StoredFile;
}

/** Lookups as the files service answers them, recording the ids asked. */
function lookups(): FileRefLookups & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async lookupForToken(_caller, fileId): Promise<FileRefLookup> {
      asked.push(fileId);
      if (fileId === ACTIVE) return { outcome: 'ok', file: file(ACTIVE, 'active') };
      if (fileId === PENDING) return { outcome: 'not_active', file: file(PENDING, 'pending') };
      if (fileId === UNREADABLE) return { outcome: 'forbidden', file: file(UNREADABLE, 'active') };
      return { outcome: 'not_found' };
    },
  };
}

const schema: ParamDefinition[] = [
  { name: 'bundle', type: 'file', required: true },
  { name: 'extra', type: 'file' },
  { name: 'who', type: 'string', default: 'world' },
];

const ref = (id: string, extra: Record<string, unknown> = {}) => ({ __type: 'FileRef', id, ...extra });

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected a refusal');
}

describe('checkRunFileRefs', () => {
  it('stores a readable active file as {__type, id}, dropping a downloadUrl sent by the caller', async () => {
    const l = lookups();
    const params = resolveRunParams(schema, { bundle: ref(ACTIVE.toUpperCase(), { downloadUrl: 'https://x' }) });
    expect(await checkRunFileRefs(schema, params, caller, l)).toEqual({
      bundle: { __type: 'FileRef', id: ACTIVE },
      who: 'world',
    });
    expect(l.asked).toEqual([ACTIVE]);
  });

  it('leaves params without file parameters untouched and asks nothing', async () => {
    const l = lookups();
    const params = { a: 1, nested: { list: [1, { b: 'c' }] } };
    expect(await checkRunFileRefs(null, params, caller, l)).toBe(params);
    expect(l.asked).toEqual([]);
  });

  it('answers 422 naming the parameter for a file the token cannot see, and for one not active', async () => {
    const error = await refusal(
      checkRunFileRefs(schema, { bundle: ref(UNKNOWN), extra: ref(PENDING) }, caller, lookups()),
    );
    expect(error.statusCode).toBe(422);
    expect(error.details).toEqual([
      {
        path: 'params.bundle',
        message: `file ${UNKNOWN} not found among the files this API token can read (its storage grant must cover the file's binding)`,
      },
      {
        path: 'params.extra',
        message: `file ${PENDING} is pending; only an active file (uploaded and completed) can be given to a job`,
      },
    ]);
  });

  it('answers 403 when the grant covers the file but lacks read, before any 422', async () => {
    const error = await refusal(
      checkRunFileRefs(schema, { bundle: ref(UNKNOWN), extra: ref(UNREADABLE) }, caller, lookups()),
    );
    expect(error.statusCode).toBe(403);
    expect(error.message).toBe(
      `This API token's storage grant lacks the \`read\` permission needed to give file ${UNREADABLE} to a job (params.extra)`,
    );
  });

  it('refuses a FileRef given to an undeclared parameter, or nested inside a value', async () => {
    const l = lookups();
    const error = await refusal(
      checkRunFileRefs(
        schema,
        { bundle: ref(ACTIVE), loose: ref(ACTIVE), deep: { list: [1, { inner: ref(ACTIVE) }] } },
        caller,
        l,
      ),
    );
    expect(error.statusCode).toBe(422);
    expect(error.details).toEqual([
      {
        path: 'params.loose',
        message: 'is a FileRef, but the workflow does not declare this parameter with `type: file`',
      },
      {
        path: 'params.deep',
        message: 'contains a FileRef; files are accepted only as the whole value of a `type: file` parameter',
      },
    ]);
  });

  it('refuses a FileRef when the workflow has no params schema', async () => {
    const error = await refusal(checkRunFileRefs(null, { any: ref(ACTIVE) }, caller, lookups()));
    expect(error.details).toEqual([{ path: 'params.any', message: expect.stringContaining('type: file') }]);
  });
});

describe('a `file` parameter in resolveRunParams', () => {
  const problems = (value: unknown) => {
    try {
      resolveRunParams(schema, { bundle: value });
      return [];
    } catch (error) {
      return (error as AppError).details as { path: string; message: string }[];
    }
  };

  it('accepts {__type: FileRef, id} with an optional downloadUrl', () => {
    expect(problems(ref(ACTIVE))).toEqual([]);
    expect(problems(ref(ACTIVE, { downloadUrl: 'https://example.test/x' }))).toEqual([]);
  });

  it.each([
    [
      'a string',
      ACTIVE,
      'must be a FileRef `{"__type": "FileRef", "id": "<file id>"}`, got `11111111-1111-4111-8111-111111111111` (string)',
    ],
    ['null', null, 'got `null`'],
    ['an array', [ref(ACTIVE)], 'got an array'],
    ['a wrong __type', { __type: 'File', id: ACTIVE }, '`__type` must be `FileRef`'],
    ['an unknown key', ref(ACTIVE, { size: 3 }), 'unknown key `size`'],
    ['a missing id', { __type: 'FileRef' }, '`id` must be a file id (a UUID), got nothing'],
    ['an id that is not a UUID', ref('../../etc'), '`id` must be a file id (a UUID), got `../../etc` (string)'],
    [
      'a downloadUrl that is not a string',
      ref(ACTIVE, { downloadUrl: 7 }),
      '`downloadUrl`, when sent, must be a string',
    ],
  ])('refuses %s with a 422 naming the parameter', (_name, value, message) => {
    expect(problems(value)).toEqual([{ path: 'params.bundle', message: expect.stringContaining(message) }]);
  });

  it('says what a missing required file parameter must be', () => {
    expect(() => resolveRunParams(schema, {})).toThrow(
      'params.bundle: is required (a FileRef `{"__type": "FileRef", "id": "<file id>"}`)',
    );
  });
});
