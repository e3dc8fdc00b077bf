import { describe, expect, it } from 'vitest';
import { servedContentType } from '../../src/storage/local-transfer.js';

describe('servedContentType', () => {
  it("serves a script's or a style sheet's type as octet-stream: a stored file is never one of the dashboard's", () => {
    for (const type of [
      'text/javascript',
      'application/javascript; charset=utf-8',
      'application/x-javascript',
      'text/ecmascript',
      'TEXT/JAVASCRIPT',
      'text/javascript1.5',
      'text/jscript',
      'text/css',
      'text/css;charset=utf-8',
    ]) {
      expect(servedContentType(type), type).toBe('application/octet-stream');
    }
  });

  it('keeps every other type as uploaded', () => {
    for (const type of [
      'text/csv',
      'application/json',
      'text/html',
      'image/svg+xml',
      'text/javascriptx',
      'text/cssx',
    ]) {
      expect(servedContentType(type), type).toBe(type);
    }
  });
});
