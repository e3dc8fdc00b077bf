import type { EnrollmentTokenRefusal } from './agents.js';
import type { PlanBatchMessages, PlanJobMessages } from './chat-outbox.js';
import type { EvaluateBinding } from './device-bindings.js';
import type { PlanDeviceGroup } from './device-groups.js';
import type { PlanJobMove } from './jobs.js';
import type { RoleChangeRefusal } from './orgs.js';
import type { CheckArtifact, CheckReleaseSignature } from './releases.js';
import type { LimitDecision, ReadWindowCounts } from './rate-limits.js';
import type { ChoosePoolAgent, LimitedAdmission } from './trigger-runs.js';
import type { TriggerLimitRefusal } from './triggers.js';

/** The workflow's and the token's job limits on one admission, on counts the transaction reads. */
export type DecideLimits = (request: LimitedAdmission, readCounts: ReadWindowCounts) => LimitDecision;

/**
 * Decisions of the domain that must be atomic with the read they depend on and the write they
 * cause, so a repository runs them inside its own write transaction (or group-commit
 * operation): pure functions of what was read, handed to the repositories when they are made
 * (coordinator/src/sqlite-repositories.ts). So the rules stay in the domain, the transaction
 * stays where it was, and db/ never imports the domain's logic.
 */
export interface TransactionRules {
  /** An agent's report about one of its jobs: apply it, or answer that it is a repeat or impossible. */
  planJobMove: PlanJobMove;
  /** One evaluation of a device binding: what it cancels, issues and stores. */
  evaluateBinding: EvaluateBinding;
  /** Whether an enrollment token can be spent now. */
  enrollmentTokenRefusal: EnrollmentTokenRefusal;
  /** An organization keeps at least one owner. */
  roleChangeRefusal: RoleChangeRefusal;
  /** A release's artifact is an active, persistent file. */
  checkArtifact: CheckArtifact;
  /** A release's sequence and signature against its application's release keys. */
  checkReleaseSignature: CheckReleaseSignature;
  /** A trigger run's limits: refused or admitted, and which counters it adds to. */
  decideLimits: DecideLimits;
  /** A trigger job that ended: the chat messages it posts, if any (written with the job's end). */
  planJobMessages: PlanJobMessages;
  /** A batch that ended: its one chat message, if any (written with its end). */
  planBatchMessages: PlanBatchMessages;
  /** The agent a pool's job goes to (docs/fleets.md, "Pools"). */
  choosePoolAgent: ChoosePoolAgent;
  /** An organization's triggers stay within the server's limits. */
  triggerLimitRefusal: TriggerLimitRefusal;
  /** An application's device group: the agents its selector binds and the bindings it removes. */
  planDeviceGroup: PlanDeviceGroup;
}
