import { planJobMove } from './job-state.js';
import type { TransactionRules } from './model/transaction-rules.js';
import { evaluateBinding } from './ota/evaluate-binding.js';

/** The domain's decisions that repositories run inside their write transactions. */
export const transactionRules: TransactionRules = { planJobMove, evaluateBinding };
