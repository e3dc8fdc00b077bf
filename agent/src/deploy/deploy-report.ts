import type { Logger } from 'pino';
import { shorten, type DeployReportRequest, type DeployReportResponse, type DeviceState } from '@drover/shared';
import type { Masker } from '../exec/secret-masker.js';
import type { DeployApi } from './deploy-api.js';
import type { DeployStateStore, InstalledRelease } from './deploy-state.js';

/** The coordinator's limit on a report's `error`. */
const MAX_ERROR = 2000;

/** The report body for a state: the installation when known, the error (null clears the previous one). */
export function deployReport(
  applicationId: string,
  state: DeviceState,
  current: InstalledRelease | null,
  error: string | null = null,
): DeployReportRequest {
  return {
    applicationId,
    ...(current
      ? {
          currentReleaseId: current.releaseId,
          ...(current.version !== '' ? { currentVersion: current.version.slice(0, 255) } : {}),
          currentSequence: current.sequence,
        }
      : {}),
    state,
    error: error === null ? null : shorten(error, MAX_ERROR),
  };
}

/**
 * Reports an application's deployment state, with the installation recorded in `store`. Reports
 * are progress information: one that cannot be delivered is logged and not retried (the pull
 * fallback reports the installation again at the next connect or poll), so it never holds up an
 * installation. Resolves with the coordinator's view, or null.
 */
export async function reportDeployState(
  deploy: { api: DeployApi; store: DeployStateStore; masker?: (() => Masker) | undefined },
  logger: Logger,
  applicationId: string,
  state: DeviceState,
  error: string | null = null,
): Promise<DeployReportResponse | null> {
  const { api, store } = deploy;
  // Masked before deployReport shortens it: a secret value is never cut in two unmasked.
  const shown = error === null || !deploy.masker ? error : deploy.masker()(error);
  const body = deployReport(applicationId, state, store.get(applicationId).current, shown);
  try {
    const answer = await api.report(body);
    logger.debug({ applicationId: body.applicationId, state: body.state }, `reported deployment state ${body.state}`);
    return answer;
  } catch (error) {
    logger.warn(
      { applicationId: body.applicationId, state: body.state, err: error },
      `could not report the deployment state \`${body.state}\` to the coordinator (${(error as Error).message}); it is reported again at the next check`,
    );
    return null;
  }
}

/**
 * What a refusal reports: the reason, and that nothing was installed. The same words whether the
 * update job or a poll of the manifest refused it, so the device shows one error for one refusal.
 */
export function refusedMessage(reason: string): string {
  return reason.includes('nothing was installed') ? reason : `${reason}; nothing was installed`;
}
