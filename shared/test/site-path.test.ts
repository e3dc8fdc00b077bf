import { describe, expect, it } from 'vitest';
import { sitePath } from '../src/site-path.js';

describe('sitePath', () => {
  it('keeps a path of this site, normalized, with its query and fragment', () => {
    expect(sitePath('/orgs?x=1#top')).toBe('/orgs?x=1#top');
    expect(sitePath('/orgs/./a/../b')).toBe('/orgs/b');
    expect(sitePath('/')).toBe('/');
  });

  it('refuses another site, given so or made so by the normalization', () => {
    for (const next of [
      '//evil.test/x',
      'https://evil.test/',
      '/\\evil.test',
      'orgs',
      '/.//evil.test',
      '/a/..//evil.test',
      '/%2e//evil.test/x',
      'javascript:alert(1)',
    ]) {
      expect(sitePath(next), next).toBeNull();
    }
  });
});
