import { enrollmentTokenRefusal } from './agents/agent-enrollment.js';
import { planBatchMessages, planJobMessages } from './chat/notifications/plan.js';
import { planJobMove } from './jobs/job-state.js';
import { roleChangeRefusal } from './orgs/members.js';
import type { TransactionRules } from './model/transaction-rules.js';
import { evaluateBinding } from './ota/evaluate-binding.js';
import { planDeviceGroup } from './ota/device-group-rule.js';
import { checkArtifact } from './ota/releases.js';
import { checkReleaseSignature } from './ota/release-signature.js';
import { decideLimits } from './trigger-run/rate-windows.js';
import { triggerLimitRefusal } from './triggers/trigger-limits.js';
import { choosePoolAgent } from './fleet/pool-choice.js';

/** The domain's decisions that repositories run inside their write transactions. */
export const transactionRules: TransactionRules = {
  planJobMove,
  evaluateBinding,
  enrollmentTokenRefusal,
  roleChangeRefusal,
  checkArtifact,
  checkReleaseSignature,
  decideLimits,
  planJobMessages,
  planBatchMessages,
  choosePoolAgent: (loads) => choosePoolAgent(loads),
  triggerLimitRefusal,
  planDeviceGroup,
};
