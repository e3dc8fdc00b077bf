import { describe, expect, it } from 'vitest';
import { parseCoordinatorUrl } from '../../src/http/coordinator-url.js';

describe('the coordinator URL', () => {
  it('is stored as the origin, whether given as the root or the /v1 base URL', () => {
    for (const input of [
      'https://drover.example.com',
      'https://drover.example.com/',
      'https://drover.example.com/v1',
      'https://drover.example.com/v1/',
      ' https://Drover.Example.com ',
    ]) {
      expect(parseCoordinatorUrl(input), input).toBe('https://drover.example.com');
    }
    expect(parseCoordinatorUrl('http://127.0.0.1:8080/v1')).toBe('http://127.0.0.1:8080');
  });

  it('refuses what is not an http(s) URL of the server root', () => {
    const cases: [string, RegExp][] = [
      ['drover.example.com', /is not a URL/],
      ['', /is not a URL/],
      ['ftp://drover.example.com', /http:\/\/ or https:\/\//],
      ['https://user:pw@drover.example.com', /credentials/],
      ['https://drover.example.com/?a=1', /query or fragment/],
      ['https://drover.example.com/#x', /query or fragment/],
      ['https://drover.example.com/drover/v1', /server root or its \/v1 base URL/],
      ['https://drover.example.com/v2', /server root or its \/v1 base URL/],
    ];
    for (const [input, message] of cases) {
      expect(() => parseCoordinatorUrl(input), input).toThrow(message);
    }
  });
});
