import { afterEach, describe, expect, it } from 'vitest';
import { resetPlainHttpWarning, warnPlainHttp } from '../src/http/plain-http.js';

describe('a credential sent over plain HTTP', () => {
  afterEach(() => resetPlainHttpWarning());
  const warnings = (origin: string) => {
    resetPlainHttpWarning();
    const written: string[] = [];
    warnPlainHttp({ err: (text) => written.push(text) }, origin, 'the API token');
    return written;
  };

  it('is warned of, once, when the coordinator is another machine', () => {
    expect(warnings('http://drover.lan:8080')).toEqual([
      'drover: warning: http://drover.lan:8080 is plain HTTP: the API token crosses the network unencrypted; use https:// if the coordinator offers it\n',
    ]);
    const again: string[] = [];
    warnPlainHttp({ err: (text) => again.push(text) }, 'http://drover.lan:8080', 'the API token');
    expect(again).toEqual([]);
  });

  it('is not, over HTTPS or to this machine', () => {
    for (const origin of [
      'https://drover.example.com',
      'http://127.0.0.1:8080',
      'http://127.1.2.3',
      'http://localhost:8080',
      'http://[::1]:8080',
    ]) {
      expect(warnings(origin), origin).toEqual([]);
    }
    expect(warnings('http://10.0.0.5')).toHaveLength(1);
  });
});
