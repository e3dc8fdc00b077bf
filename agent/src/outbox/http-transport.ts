import { signedCall, type SignedCaller } from '../http/client.js';
import type { Transport } from './report-sender.js';
import { reportPath } from './report.js';

/** Sends a report as a signed `POST /v1/agent/jobs/:jobId/<kind>` (signed afresh on each try). */
export function httpTransport(caller: SignedCaller): Transport {
  return (report) => signedCall(caller, 'POST', reportPath(report), 'body' in report ? report.body : undefined);
}
