import { MAX_WORKFLOW_NAME_LENGTH } from '../triggers/triggers.js';

/**
 * Input rules of the OTA dashboard endpoints (docs/ota.md, "Bodies"). The JSON schemas of the
 * routes enforce them; the constants live here so that docs, schemas and tests agree.
 */

/** docs/ota.md, "Desired state". */
export const SLUG_PATTERN = '^[a-z0-9][a-z0-9-]{0,62}$';
/** Channels: lower-case names such as `stable`, `beta`, `canary-2`, `lts.1`. */
export const CHANNEL_PATTERN = '^[a-z0-9][a-z0-9._-]{0,62}$';
export const DEFAULT_CHANNEL = 'stable';
/** The update workflow: a workflow name as agents report them. */
export const UPDATE_WORKFLOW_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]*$';
/**
 * A release's version: a free label (ordering is by sequence), a text others read (the dashboard,
 * `drover`'s tables, chat messages, the agent's log), so without control characters (C0, DEL, C1:
 * U+009B starts a terminal's escape sequence as ESC [ does) and without the bidirectional
 * formatting characters that make it show in another order than it is written (names.ts).
 */
export const VERSION_PATTERN = '^[^\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]+$';
export const MAX_VERSION_LENGTH = 128;
export const MAX_NOTES_LENGTH = 10_000;
/** Agents bound by one call. */
export const MAX_BIND_AGENTS = 1_000;

export const slugSchema = { type: 'string', minLength: 1, maxLength: 63, pattern: SLUG_PATTERN } as const;
export const channelSchema = { type: 'string', minLength: 1, maxLength: 63, pattern: CHANNEL_PATTERN } as const;
export const workflowNameSchema = {
  type: 'string',
  minLength: 1,
  maxLength: MAX_WORKFLOW_NAME_LENGTH,
  pattern: UPDATE_WORKFLOW_PATTERN,
} as const;
export const versionSchema = {
  type: 'string',
  minLength: 1,
  maxLength: MAX_VERSION_LENGTH,
  pattern: VERSION_PATTERN,
} as const;
export const notesSchema = { type: ['string', 'null'], maxLength: MAX_NOTES_LENGTH } as const;
