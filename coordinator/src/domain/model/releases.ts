import type { CleanupRule, FileStatus } from './files.js';

/** A release of an application (migration 0005). */
export interface Release {
  id: string;
  applicationId: string;
  version: string;
  /** Application-wide, strictly increasing in creation order; orders releases. */
  sequence: number;
  channel: string;
  updatePolicy: UpdatePolicy;
  status: ReleaseStatus;
  artifactFileId: string;
  /** Of the artifact, copied at creation. */
  checksumSha256: string;
  size: number;
  notes: string | null;
  /** Its signature by one of the application's release keys (docs/ota.md, "Release keys"); null: unsigned. */
  signature: string | null;
  createdAt: string;
  publishedAt: string | null;
  yankedAt: string | null;
}

export interface NewRelease {
  id: string;
  orgId: string;
  applicationId: string;
  version: string;
  channel: string;
  updatePolicy: UpdatePolicy;
  artifactFileId: string;
  notes: string | null;
  /** The sequence the signer chose (null: the next one). */
  sequence: number | null;
  signature: string | null;
  createdAt: string;
}

/** Why an artifact cannot back a release. */
export type ArtifactProblem = 'not_found' | 'not_active' | 'not_persistent';

/** A release's artifact as stored: a file of the organization in a binding not deleted (null: none). */
export type StoredArtifact = {
  status: FileStatus;
  cleanupRule: CleanupRule;
  size: number | null;
  sha256: string | null;
} | null;

/**
 * Whether the file can back a release, and then the size and checksum the release copies
 * (domain/ota/releases.ts); run inside the release's creation.
 */
export type CheckArtifact = (
  file: StoredArtifact,
) => { ok: true; size: number; sha256: string } | { ok: false; problem: ArtifactProblem; status?: string };

/** What a release's signature is checked against, read in its creation's transaction. */
export interface ReleaseToSign {
  /** The application's slug and release keys (null: releases are not signed). */
  app: { slug: string; releaseKeys: string[] | null };
  version: string;
  /** The sequence given (null: none). */
  sequence: number | null;
  signature: string | null;
  /** The highest sequence of the application's releases (0: none). */
  maxSequence: number;
  sha256: string;
  size: number;
}

/** Why a release cannot be created as given: a 422 on a field, or a 409 on its sequence. */
export type ReleaseSignatureRefusal =
  { kind: 'invalid'; path: string; message: string } | { kind: 'conflict'; message: string; maxSequence: number };

/** A release's sequence and signature against its application's keys (domain/ota/release-signature.ts). */
export type CheckReleaseSignature = (release: ReleaseToSign) => ReleaseSignatureRefusal | null;

export type CreateReleaseResult =
  | { outcome: 'created'; release: Release }
  | { outcome: 'bad_artifact'; problem: ArtifactProblem; status?: string }
  | { outcome: 'refused'; refusal: ReleaseSignatureRefusal }
  /** The application was deleted meanwhile: nothing created. */
  | { outcome: 'not_found' };

/** `applied`: moved now; `conflict`: not possible from the release's status; `not_found`. */
export type ReleaseChange = { outcome: 'applied' | 'conflict'; release: Release } | { outcome: 'not_found' };

export interface DraftPatch {
  version?: string | undefined;
  channel?: string | undefined;
  updatePolicy?: UpdatePolicy | undefined;
  notes?: string | null | undefined;
}

export interface ReleaseListFilter {
  channel?: string | undefined;
  status?: ReleaseStatus | undefined;
}

export interface ReleaseRepository {
  /**
   * Creates a draft in one transaction: checks the artifact (a file of the organization, in a
   * binding not deleted, `active` and `persistent`), copies its checksum and size, and assigns
   * the next sequence of the application (strictly increasing, also under concurrent calls).
   */
  create(release: NewRelease): Promise<CreateReleaseResult>;
  findInApp(applicationId: string, id: string): Promise<Release | null>;
  /** Highest sequence first. */
  list(applicationId: string, filter?: ReleaseListFilter): Promise<Release[]>;
  /** draft → published. */
  publish(applicationId: string, id: string, at: string): Promise<ReleaseChange>;
  /** Changes a draft; a published or yanked release is immutable (`conflict`). */
  updateDraft(applicationId: string, id: string, patch: DraftPatch): Promise<ReleaseChange>;
}

export const RELEASE_STATUSES = ['draft', 'published', 'yanked'] as const;
export type ReleaseStatus = (typeof RELEASE_STATUSES)[number];
export const UPDATE_POLICIES = ['mandatory', 'optional'] as const;
export type UpdatePolicy = (typeof UPDATE_POLICIES)[number];

/** What the rules need of a release. */
export interface ReleaseFacts {
  id: string;
  version: string;
  sequence: number;
  channel: string;
  status: ReleaseStatus;
  updatePolicy: UpdatePolicy;
}
