import { describe, expect, it } from 'vitest';
import { foldCase, nameSearch } from '../../src/util/name-search.js';

describe('nameSearch', () => {
  it('finds names whatever their case, Unicode included', () => {
    const named = nameSearch('STRASSE')!;
    expect(named('Hauptstraße 5')).toBe(true);
    expect(nameSearch('straße')!('HAUPTSTRASSE-5')).toBe(true);
    expect(nameSearch('ÉCOLE')!('kiosk-école-2')).toBe(true);
    expect(nameSearch('office')!('ＯＦＦＩＣＥ-1')).toBe(true); // full-width letters
    expect(nameSearch('fi')!('ﬁeld-unit')).toBe(true); // the ﬁ ligature
    expect(nameSearch('kiosk')!('berlin-gw', 'kiosk-7.local')).toBe(true); // any of the names
    expect(nameSearch('kiosk')!('berlin-gw', 'gw.local')).toBe(false);
  });

  it('matches everything when nothing is typed', () => {
    expect(nameSearch(undefined)).toBeNull();
    expect(nameSearch('')).toBeNull();
  });

  it('folds ASCII as it lowers', () => {
    expect(foldCase('Kiosk-01')).toBe('kiosk-01');
    expect(foldCase('Straße')).toBe('strasse');
  });
});
