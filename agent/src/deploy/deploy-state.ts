import fs from 'node:fs';
import path from 'node:path';
import { makeStateDir, readFileIfExists, writeFileAtomic } from '../state/files.js';
import { isObject } from '../util/is-object.js';

/** A release as the device names it. */
export interface InstalledRelease {
  releaseId: string;
  version: string;
  sequence: number;
  /** The release's channel (recorded at install since manifests are bound; absent in older records). */
  channel?: string;
}

/** An application's release keys as this agent pinned them (docs/ota.md, "Release keys"). */
export interface PinnedReleaseKeys {
  /** Standard base64 Ed25519 public keys, sorted. */
  keys: string[];
  /** The rotations that led to them (0: the first set). */
  generation: number;
  /**
   * The application's slug when the keys were pinned (it cannot change): release signatures name
   * the slug, so an entry under another slug could pass off a release signed for another
   * application that shares a key. Absent in pins of older agents (recorded at the next check).
   */
  slug?: string;
  /**
   * The update workflows that entries under these keys named (the built-in `drover-agent-update`
   * included): an entry of any application id that names one of them must pass these keys too, so
   * that a new application id cannot reach the same installer without them. Absent in pins of
   * older agents (recorded at the next accepted entry of the application).
   */
  workflows?: string[];
}

/** The last deployment of a release that did not install (kept so the pull fallback does not retry it at once). */
export interface FailedAttempt {
  releaseId: string;
  state: 'failed' | 'refused';
  error: string;
  at: string;
}

/** What the agent remembers about one application (docs/agent.md, "Over-the-air updates"). */
export interface AppDeployState {
  /** What the agent installed last (null: nothing installed by this agent). */
  current: InstalledRelease | null;
  /** `issued_at` (Unix seconds) of the last signed manifest entry accepted for this app (replay protection). */
  lastIssuedAt: number | null;
  /** An optional release the local policy postponed. */
  postponed?: InstalledRelease | null;
  lastFailure?: FailedAttempt | null;
  /** The application's release keys, pinned on first sight and changed only by a signed rotation. */
  releaseKeys?: PinnedReleaseKeys | null;
  /**
   * The coordinator binds this application's entries to the request they answer (`request_nonce`):
   * from then on an entry without it is refused as replayed (manifest-check.ts).
   */
  requestBound?: boolean;
  updatedAt: string;
}

interface DeployStateFile {
  version: 1;
  apps: Record<string, AppDeployState>;
}

const EMPTY: AppDeployState = { current: null, lastIssuedAt: null, postponed: null, lastFailure: null, updatedAt: '' };

/**
 * `<state-dir>/deploy/state.json` (0600, written atomically): per application id, the release the
 * agent installed, the last accepted manifest `issued_at`, a postponement and the last failure. A
 * damaged file is set aside (`state.json.damaged`) and the agent starts from nothing: it then
 * reports an unknown installation and the coordinator sends the desired release again.
 */
export class DeployStateStore {
  #apps = new Map<string, AppDeployState>();

  private constructor(readonly file: string) {}

  static open(stateDir: string, onDamaged: (file: string, reason: string) => void = () => {}): DeployStateStore {
    const dir = path.join(stateDir, 'deploy');
    makeStateDir(dir, 'the record of over-the-air updates');
    const store = new DeployStateStore(path.join(dir, 'state.json'));
    const text = readFileIfExists(store.file);
    if (text !== null) {
      const parsed = parseStateFile(text);
      if (typeof parsed === 'string') {
        let setAside = 'renamed state.json.damaged';
        try {
          fs.renameSync(store.file, `${store.file}.damaged`);
        } catch (error) {
          // A read-only file system, say: the agent starts all the same; the next record written replaces it.
          const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
          setAside = `it cannot be renamed state.json.damaged (${code}), so it stays until the next update replaces it`;
        }
        onDamaged(store.file, `${parsed} (${setAside}; starting without deployment history)`);
      } else {
        store.#apps = parsed;
      }
    }
    return store;
  }

  get(applicationId: string): AppDeployState {
    return this.#apps.get(applicationId) ?? EMPTY;
  }

  applicationIds(): string[] {
    return [...this.#apps.keys()];
  }

  /** Changes one application's record and writes the file (throws when it cannot be written). */
  update(applicationId: string, patch: Partial<Omit<AppDeployState, 'updatedAt'>>): AppDeployState {
    const next: AppDeployState = { ...this.get(applicationId), ...patch, updatedAt: new Date().toISOString() };
    const apps = new Map(this.#apps).set(applicationId, next);
    const content: DeployStateFile = { version: 1, apps: Object.fromEntries(apps) };
    // `deploy/` removed while the agent runs (the file may be deleted: docs/agent.md) is made again.
    makeStateDir(path.dirname(this.file), 'the record of over-the-air updates');
    writeFileAtomic(this.file, `${JSON.stringify(content, null, 2)}\n`);
    this.#apps = apps;
    return next;
  }
}

/**
 * The deployment state as `drover-agent status` shows it: read only (a damaged file is reported,
 * not set aside). Null when the agent never deployed anything.
 */
export function readDeployState(
  stateDir: string,
): { apps: Map<string, AppDeployState>; problem: null } | { apps: null; problem: string } | null {
  const file = path.join(stateDir, 'deploy', 'state.json');
  let text: string | null;
  try {
    text = readFileIfExists(file);
  } catch (error) {
    return { apps: null, problem: `${file} cannot be read: ${(error as Error).message}` };
  }
  if (text === null) return null;
  const parsed = parseStateFile(text);
  return typeof parsed === 'string'
    ? { apps: null, problem: `${file} is damaged: ${parsed}` }
    : { apps: parsed, problem: null };
}

function parseStateFile(text: string): Map<string, AppDeployState> | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'not valid JSON';
  }
  if (!isObject(value) || value.version !== 1 || !isObject(value.apps)) return 'not a deployment state file';
  const apps = new Map<string, AppDeployState>();
  for (const [id, raw] of Object.entries(value.apps)) {
    if (!isObject(raw)) return `the entry of application ${id} is not an object`;
    const current = raw.current === null ? null : parseRelease(raw.current);
    if (current === undefined) return `the installed release of application ${id} is damaged`;
    const lastIssuedAt = raw.lastIssuedAt;
    if (lastIssuedAt !== null && !Number.isSafeInteger(lastIssuedAt)) {
      return `lastIssuedAt of application ${id} is not a number`;
    }
    // Keys that do not read are damage, said as such: dropped in silence, the next manifest's
    // keys would be pinned as if on first sight.
    const releaseKeys =
      raw.releaseKeys === undefined || raw.releaseKeys === null ? null : parsePinnedKeys(raw.releaseKeys);
    if (releaseKeys === undefined) return `the pinned release keys of application ${id} are damaged`;
    apps.set(id, {
      current,
      lastIssuedAt: lastIssuedAt as number | null,
      postponed: parseRelease(raw.postponed) ?? null,
      lastFailure: parseFailure(raw.lastFailure),
      releaseKeys,
      ...(raw.requestBound === true ? { requestBound: true } : {}),
      updatedAt: typeof raw.updatedAt === 'string' ? raw.updatedAt : '',
    });
  }
  return apps;
}

function parseRelease(value: unknown): InstalledRelease | undefined {
  if (!isObject(value)) return undefined;
  const { releaseId, version, sequence, channel } = value;
  if (typeof releaseId !== 'string' || typeof version !== 'string' || !Number.isSafeInteger(sequence)) return undefined;
  return { releaseId, version, sequence: sequence as number, ...(typeof channel === 'string' ? { channel } : {}) };
}

function parsePinnedKeys(value: unknown): PinnedReleaseKeys | undefined {
  if (!isObject(value)) return undefined;
  const { keys, generation, slug, workflows } = value;
  if (!Array.isArray(keys) || !keys.every((k) => typeof k === 'string') || !Number.isSafeInteger(generation)) {
    return undefined;
  }
  const names = Array.isArray(workflows) ? workflows.filter((w): w is string => typeof w === 'string') : null;
  return {
    keys: keys as string[],
    generation: generation as number,
    ...(typeof slug === 'string' ? { slug } : {}),
    ...(names ? { workflows: names } : {}),
  };
}

function parseFailure(value: unknown): FailedAttempt | null {
  if (!isObject(value)) return null;
  const { releaseId, state, error, at } = value;
  if (typeof releaseId !== 'string' || (state !== 'failed' && state !== 'refused')) return null;
  return { releaseId, state, error: typeof error === 'string' ? error : '', at: typeof at === 'string' ? at : '' };
}
