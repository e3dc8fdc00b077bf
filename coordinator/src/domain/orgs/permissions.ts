import { can, PERMISSIONS, roleWithArticle, roleWords, type Action, type Role } from '@drover/shared';
import { forbidden } from '../../errors.js';

export { can, type Action } from '@drover/shared';

/**
 * The check of every action of a member of an organization (docs/management.md, "Roles"):
 * 403 when `role` may not take `action`, saying who may.
 */
export function requirePermission(role: Role, action: Action): void {
  if (can(role, action)) return;
  const allowed = PERMISSIONS[action];
  throw forbidden(
    allowed.length === 1
      ? `Only ${roleWords(allowed)} of the organization can do this`
      : `Only ${roleWords(allowed)} of the organization can do this; you are ${roleWithArticle(role)}`,
  );
}
