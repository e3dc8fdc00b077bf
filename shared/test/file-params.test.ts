import { describe, expect, it } from 'vitest';
import { fileRefProblem, looksLikeFileRef, paramsSchemaProblems } from '../src/index.js';

describe('a `file` parameter definition', () => {
  it('is valid with name, type and required', () => {
    expect(paramsSchemaProblems([{ name: 'bundle', type: 'file', required: true }], 'p')).toEqual([]);
  });

  it('refuses a default and keywords of other types', () => {
    expect(paramsSchemaProblems([{ name: 'f', type: 'file', default: 'x', pattern: '^a$' }], 'p')).toEqual([
      { path: 'p.0.pattern', message: 'does not apply to a parameter of type `file`' },
      { path: 'p.0.default', message: 'does not apply to a parameter of type `file` (a file has no default)' },
    ]);
  });
});

describe('looksLikeFileRef and fileRefProblem', () => {
  it('recognise an object whose __type is FileRef', () => {
    expect(looksLikeFileRef({ __type: 'FileRef', id: 'x' })).toBe(true);
    expect(looksLikeFileRef({ __type: 'Other' })).toBe(false);
    expect(looksLikeFileRef([{ __type: 'FileRef' }])).toBe(false);
    expect(looksLikeFileRef('FileRef')).toBe(false);
    expect(looksLikeFileRef(null)).toBe(false);
  });

  it('accept only __type, a UUID id and an optional string downloadUrl', () => {
    const id = '0b6c3c5e-1f9b-4e0e-9a0e-2f6f3b8d8d11';
    expect(fileRefProblem({ __type: 'FileRef', id })).toBeNull();
    expect(fileRefProblem({ __type: 'FileRef', id, downloadUrl: 'u' })).toBeNull();
    expect(fileRefProblem({ __type: 'FileRef', id, path: '/etc/passwd' })).toContain('unknown key `path`');
    expect(fileRefProblem({ __type: 'FileRef', id: 'x'.repeat(100) })).toContain('got `xxxxxxxx');
  });
});
