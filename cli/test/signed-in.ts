import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeSession } from '../src/session/store.js';

/** The user the sessions below are of, unless a test names another. */
export const SIGNED_IN_USER = '3f0c1d52-0000-4000-8000-000000000000';

/** Writes the session `drover login` leaves for the coordinator at `url` under `configHome` (XDG_CONFIG_HOME). */
export function writeSignedIn(configHome: string, url: string, userId = SIGNED_IN_USER): void {
  writeSession(path.join(configHome, 'drover'), {
    url,
    token: 'eyJ.x.y',
    expiresAt: '2099-01-01T00:00:00.000Z',
    email: 'ops@example.com',
    userId,
  });
}

/** A new config home signed in to the coordinator at `url`; the test removes it. */
export function signedInHome(url: string, userId?: string): string {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cli-home-'));
  writeSignedIn(home, url, userId);
  return home;
}
