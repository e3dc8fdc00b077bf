import type { DownloadSettings } from '../../src/files/download.js';
import type { Logger } from 'pino';
import type { Masker } from '../../src/exec/secret-masker.js';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  generateEd25519KeyPair,
  privateKeyFromBase64,
  publicKeyFromBase64,
  signManifest,
  signRelease,
  sortedKeys,
  type DeployAssignment,
  type ReleaseKeyRotation,
  type DeployReportRequest,
  type ManifestEntry,
  type ManifestPayload,
} from '@drover/shared';
import type { DeployApi } from '../../src/deploy/deploy-api.js';
import { DeployStateStore } from '../../src/deploy/deploy-state.js';
import { ManifestSource } from '../../src/deploy/manifest-source.js';
import type { DeployContext } from '../../src/deploy/run-deploy-job.js';
import { AgentError } from '../../src/errors.js';
import { Backoff } from '../../src/util/backoff.js';
import { captureLogger } from '../log-capture.js';
import { sha256, type BlobServer } from '../files/blob-server.js';

/** One application the fake coordinator serves, with the release it wants installed. */
export interface FakeApp {
  applicationId: string;
  slug: string;
  channel: string;
  updateWorkflow: string;
  release: FakeRelease | null;
  forced: boolean;
}

export interface FakeRelease {
  releaseId: string;
  version: string;
  sequence: number;
  /** The artifact's bytes, served by the blob server under `blob/<releaseId>`. */
  content: Buffer;
  fileId: string;
}

/**
 * A stand-in for the coordinator's deployment endpoints: signs the desired manifest with its own
 * server key (the one the agent pinned), records the reports, and lets a test tamper with what it
 * answers.
 */
export class FakeDeployCoordinator {
  readonly keys = generateEd25519KeyPair();
  readonly serverKey = publicKeyFromBase64(this.keys.publicKey)!;
  readonly #privateKey = privateKeyFromBase64(this.keys.privateKey);
  readonly apps: FakeApp[] = [];
  readonly reports: DeployReportRequest[] = [];
  /** Changes each entry after signing (tampering in transit). */
  tamper: ((entry: ManifestEntry) => ManifestEntry) | null = null;
  /** Seconds added to `issued_at` and `expires_at` (a negative value replays an older manifest). */
  clockOffset = 0;
  /**
   * Whether entries carry back the nonce of the request they answer (`request_nonce`), as
   * coordinators since 2026-11-30 do; with `replayOf` set, they carry that request's instead (an
   * answer recorded earlier and replayed).
   */
  bindRequests = false;
  replayOf: string | null = null;
  /** The agent the manifest entries are bound to (`agent_id`): the agent under test. */
  readonly agentId = randomUUID();
  /** The applications' release keys, and the private key that signs their releases (null: unsigned). */
  releaseKeys: {
    keys: string[];
    signer: { privateKey: string } | null;
    generation?: number;
    rotations?: ReleaseKeyRotation[];
  } | null = null;
  /** Changes each payload before it is signed (what a coordinator signs: an older one, another agent's entry). */
  signing: ((payload: ManifestPayload) => ManifestPayload) | null = null;
  /** Errors the manifest call throws, one per call, before answering normally. */
  readonly fetchErrors: Error[] = [];
  fetches = 0;

  constructor(private readonly blobs: BlobServer) {}

  addApp(fields: Partial<FakeApp> = {}): FakeApp {
    const app: FakeApp = {
      applicationId: randomUUID(),
      slug: `app-${this.apps.length + 1}`,
      channel: 'stable',
      updateWorkflow: 'update',
      release: null,
      forced: false,
      ...fields,
    };
    this.apps.push(app);
    return app;
  }

  /** A new release of `app` that becomes its desired one; the blob server serves its bytes. */
  publish(app: FakeApp, version: string, content = `artifact ${version}`): FakeRelease {
    const sequence = (app.release?.sequence ?? 0) + 1;
    const release = { releaseId: randomUUID(), version, sequence, content: Buffer.from(content), fileId: randomUUID() };
    this.blobs.blobs.set(release.releaseId, release.content);
    app.release = release;
    return release;
  }

  payload(app: FakeApp): ManifestPayload {
    const r = app.release;
    const issuedAt = Math.floor(Date.now() / 1000) + this.clockOffset;
    const payload: ManifestPayload = {
      agent_id: this.agentId,
      application_id: app.applicationId,
      slug: app.slug,
      channel: app.channel,
      update_workflow: app.updateWorkflow,
      current: null,
      desired: r && {
        release_id: r.releaseId,
        version: r.version,
        sequence: r.sequence,
        channel: app.channel,
        workflow_name: app.updateWorkflow,
        checksum_sha256: sha256(r.content),
        size: r.content.length,
        download_url: `${this.blobs.url}/blob/${r.releaseId}`,
        download_expires_in: 900,
      },
      min_version: '',
      min_sequence: 0,
      forced: app.forced,
      issued_at: issuedAt,
      expires_at: issuedAt + 3600,
      nonce: randomBytes(16).toString('base64url'),
    };
    const withKeys = this.releaseKeys && r ? this.#withReleaseKeys(payload, app, r) : payload;
    return this.signing ? this.signing(withKeys) : withKeys;
  }

  #withReleaseKeys(payload: ManifestPayload, app: FakeApp, r: FakeRelease): ManifestPayload {
    const { keys, signer, generation, rotations } = this.releaseKeys!;
    const d = payload.desired!;
    const signature = signer
      ? signRelease(
          { app: app.slug, version: r.version, sequence: r.sequence, sha256: d.checksum_sha256, size: d.size },
          privateKeyFromBase64(signer.privateKey),
        )
      : null;
    return {
      ...payload,
      desired: { ...d, signature },
      release_keys: sortedKeys(keys),
      release_key_generation: generation ?? 0,
      ...(rotations ? { release_key_rotations: rotations } : {}),
    };
  }

  /** The agent's manifest source against this coordinator (`now`: the agent's corrected clock, Unix ms). */
  manifests(store: DeployStateStore, logger: Logger, now: () => number = Date.now): ManifestSource {
    return new ManifestSource({ api: this.api, store, serverKey: this.serverKey, agentId: this.agentId, now, logger });
  }

  /** The `deploy` event of the app's desired release. */
  event(app: FakeApp, fields: Partial<DeployAssignment> = {}): DeployAssignment {
    const r = app.release!;
    return {
      jobId: randomUUID(),
      kind: 'update',
      applicationId: app.applicationId,
      workflowName: app.updateWorkflow,
      params: {
        artifact: {
          __type: 'FileRef',
          id: r.fileId,
          downloadUrl: `${this.blobs.url}/blob/${r.releaseId}`,
          size: r.content.length,
          sha256: sha256(r.content),
          filename: `${app.slug}-${r.version}.tar.gz`,
        },
        release_id: r.releaseId,
        version: r.version,
        channel: app.channel,
        sequence: r.sequence,
        forced: app.forced,
        checksum_sha256: sha256(r.content),
      },
      ref: null,
      debug: false,
      timeoutMs: null,
      status: 'pending',
      createdAt: new Date().toISOString(),
      ...fields,
    };
  }

  readonly api: DeployApi = {
    fetchDesired: () => {
      this.fetches += 1;
      const error = this.fetchErrors.shift();
      if (error) return Promise.reject(error);
      const requestNonce = randomBytes(16).toString('base64url');
      const bound = (payload: ManifestPayload): ManifestPayload =>
        this.bindRequests ? { ...payload, request_nonce: this.replayOf ?? requestNonce } : payload;
      return Promise.resolve({
        entries: this.apps.map((app) => {
          const entry = signManifest(bound(this.payload(app)), this.#privateKey);
          return this.tamper ? this.tamper(entry) : entry;
        }),
        requestNonce,
      });
    },
    report: (body) => {
      this.reports.push(body);
      return Promise.resolve({
        applicationId: body.applicationId,
        current: null,
        desired: null,
        forced: false,
        state: body.state ?? null,
        activeJobId: null,
      });
    },
  };

  /** The states reported for an application, in order. */
  states(app: FakeApp): (string | undefined)[] {
    return this.reports.filter((r) => r.applicationId === app.applicationId).map((r) => r.state);
  }
}

export const unreachable = () => new AgentError('unreachable', 'Cannot reach the coordinator: connection refused');

/** The agent's deployment context against a fake coordinator. */
export function deployContext(
  fake: FakeDeployCoordinator,
  stateDir: string,
  options: { postponeOptional?: boolean; masker?: () => Masker; downloads?: DownloadSettings; now?: () => number } = {},
): DeployContext {
  const store = DeployStateStore.open(stateDir);
  const { logger } = captureLogger();
  return {
    api: fake.api,
    manifests: fake.manifests(store, logger, options.now),
    store,
    postponeOptional: options.postponeOptional ?? false,
    downloadAttempts: 2,
    downloadBackoff: new Backoff({ baseMs: 10, capMs: 10 }),
    ...(options.masker ? { masker: options.masker } : {}),
    ...(options.downloads ? { downloads: options.downloads } : {}),
  };
}
