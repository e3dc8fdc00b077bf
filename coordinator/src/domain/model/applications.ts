import type { ReleaseKeyRotation } from '@drover/shared';
import type { ChatProvider } from './triggers.js';

/** The chat channel an application's rollouts post to when they pause by themselves. */
export interface AppNotify {
  provider: ChatProvider;
  teamId: string;
  channelId: string;
}

/** An OTA application (migration 0005). Deleted ones are kept as tombstones (`deletedAt`). */
export interface Application {
  id: string;
  orgId: string;
  slug: string;
  updateWorkflowName: string;
  defaultChannel: string;
  /** Where its rollouts' pauses are posted (migration 0034); null: nowhere. */
  notify: AppNotify | null;
  /**
   * The device group's label selector, canonical (docs/ota.md, "Device groups"): the agents it
   * matches are bound to the application. Null: none.
   */
  deviceSelector: string | null;
  /** Optional updates start only inside this window (docs/ota.md, "Maintenance windows"); null: at once. */
  maintenanceWindow: MaintenanceWindow | null;
  /**
   * The Ed25519 public keys (standard base64) that must sign every release (migration 0036;
   * docs/ota.md, "Release keys"); null: releases are not signed.
   */
  releaseKeys: string[] | null;
  /** The rotations that changed the keys, oldest first (each signed by a key of the set before it). */
  releaseKeyRotations: ReleaseKeyRotation[];
  createdAt: string;
  deletedAt: string | null;
}

/**
 * A maintenance window (migration 0031): it opens at each occurrence of `cron` (5 fields, as a
 * cron trigger's) in `timezone` (an IANA zone) and stays open `durationMinutes`.
 */
export interface MaintenanceWindow {
  cron: string;
  timezone: string;
  durationMinutes: number;
}

export interface ApplicationPatch {
  updateWorkflowName?: string | undefined;
  defaultChannel?: string | undefined;
  /** null: post nowhere. */
  notify?: AppNotify | null | undefined;
  /** null removes the window. */
  maintenanceWindow?: MaintenanceWindow | null | undefined;
  /**
   * The new release keys, with the rotations that lead to them (the domain checked them), written
   * only if the stored keys are still `from` (what the check read): otherwise nothing of the patch
   * is written, and the answer shows the keys as they are.
   */
  releaseKeys?: { keys: string[]; rotations: ReleaseKeyRotation[]; from: string[] | null } | undefined;
}

/** The application after an update: `updated`, or `keys_changed` with nothing written. */
export interface ApplicationUpdate {
  outcome: 'updated' | 'keys_changed';
  app: Application;
}

export interface DeletedApplication {
  app: Application;
  /** Pending update jobs of its bindings, cancelled with it. */
  cancelledJobIds: string[];
}

export interface ApplicationRepository {
  /** `duplicate_slug` when another application of the organization (not deleted) has the slug. */
  insert(app: Application): Promise<'created' | 'duplicate_slug'>;
  /** An application of the organization that is not deleted. */
  findInOrg(orgId: string, id: string): Promise<Application | null>;
  findById(id: string): Promise<Application | null>;
  /** Oldest first. */
  listByOrg(orgId: string): Promise<Application[]>;
  /**
   * Writes the patch whole, or nothing of it: `keys_changed` (the application as it is) when its
   * release keys are no longer the patch's `from`. Null when not found.
   */
  update(orgId: string, id: string, patch: ApplicationPatch): Promise<ApplicationUpdate | null>;
  /**
   * Deletes the application in one transaction: it becomes a tombstone (its slug free again),
   * its releases and device bindings are removed (their artifacts are no longer in use), and the
   * bindings' update jobs still `pending` are cancelled with `message`. Null when not found.
   */
  delete(orgId: string, id: string, at: string, message: string): Promise<DeletedApplication | null>;
}
