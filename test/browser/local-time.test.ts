import { describe, expect, it } from 'vitest';
import { fromLocalInput, toLocalInput } from '../../dashboard/src/components/local-time.js';

/** The jobs' and the audit log's "Created from/before" pickers (datetime-local, the browser's zone). */
describe('fromLocalInput', () => {
  it('gives the ISO time of a local time, nothing for an empty picker', () => {
    expect(fromLocalInput('')).toBeUndefined();
    const iso = fromLocalInput('2026-03-01T10:00') as string;
    expect(iso).toBe(new Date(2026, 2, 1, 10, 0).toISOString());
    expect(toLocalInput(iso)).toBe('2026-03-01T10:00');
  });

  it('sends a year the picker takes but a Date cannot hold as typed, rather than throwing', () => {
    // Chromium's picker takes years up to 275760; `new Date('10000-01-01T00:00')` is invalid.
    expect(fromLocalInput('10000-01-01T00:00')).toBe('10000-01-01T00:00');
    expect(fromLocalInput('275760-09-13T00:00')).toBe('275760-09-13T00:00');
  });
});
