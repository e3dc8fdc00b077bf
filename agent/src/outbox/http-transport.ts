import { signedCall, type SignedCaller } from '../http/client.js';
import type { Transport } from './report-sender.js';
import { inCoordinatorTime, reportPath } from './report.js';

/**
 * Sends a report as a signed `POST /v1/agent/jobs/:jobId/<kind>` (signed afresh on each try),
 * its times in the coordinator's clock.
 */
export function httpTransport(caller: SignedCaller): Transport {
  return (report) => {
    const sent = caller.clock ? inCoordinatorTime(report, caller.clock.offsetMs) : report;
    return signedCall(caller, 'POST', reportPath(sent), 'body' in sent ? sent.body : undefined);
  };
}
