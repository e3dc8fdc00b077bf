import { describe, expect, it } from 'vitest';
import { emailKey, isEmailAddress, MAX_EMAIL_LENGTH, sameEmail } from '../../src/domain/emails.js';

describe('emails name the same account', () => {
  it('when equal once their ASCII letters are in lower case', () => {
    expect(emailKey('Ada.Lovelace@Example.TEST')).toBe('ada.lovelace@example.test');
    expect(sameEmail('EMILE@x.test', 'emile@x.test')).toBe(true);
  });

  it('and not when only the case of another letter differs, as neither database folds it', () => {
    expect(emailKey('ÉMILE@x.test')).toBe('Émile@x.test');
    expect(sameEmail('ÉMILE@x.test', 'émile@x.test')).toBe(false);
    expect(sameEmail('ÖRJAN@x.test', 'örjan@X.TEST')).toBe(false);
    // Letters whose Unicode lower or upper case is ASCII: the Kelvin sign, the dotted capital I,
    // the dotless small ı; and ß, whose upper case is SS.
    expect(sameEmail('\u212Aim@x.test', 'kim@x.test')).toBe(false);
    expect(sameEmail('\u0130van@x.test', 'ivan@x.test')).toBe(false);
    expect(sameEmail('\u0131van@x.test', 'Ivan@x.test')).toBe(false);
    expect(sameEmail('strasse@x.test', 'straße@x.test')).toBe(false);
    expect(emailKey('\u212A\u0130\u0131ß@x.test')).toBe('\u212A\u0130\u0131ß@x.test');
  });
});

describe('an email address', () => {
  it('is something on each side of one @, without spaces, control or invisible formatting characters', () => {
    for (const ok of ['a@b', 'ada.lovelace+ops@example.test', 'émile@exämple.test'])
      expect(isEmailAddress(ok), ok).toBe(true);
    for (const bad of [
      'a@',
      '@b',
      'a@b@c',
      'a b@c',
      'a\u0007@example.test',
      'a@ex\u001bample',
      'a\u202e@b',
      'a\u200b@b',
    ])
      expect(isEmailAddress(bad), JSON.stringify(bad)).toBe(false);
    expect(isEmailAddress(`${'a'.repeat(MAX_EMAIL_LENGTH - 2)}@b`)).toBe(true);
    expect(isEmailAddress(`${'a'.repeat(MAX_EMAIL_LENGTH - 1)}@b`)).toBe(false);
  });
});
