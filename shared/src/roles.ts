/**
 * The roles of a member of an organization and what each may do (docs/management.md, "Roles"):
 * the one table every check reads, the coordinator's (which enforces it) and the dashboard's
 * (which only hides the controls a role cannot use).
 */

/** From the most to the least rights. */
export const ROLES = ['owner', 'operator', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

const EVERYONE = ROLES;
const MEMBERS = ['owner', 'operator', 'member'] as const;
const OPERATORS = ['owner', 'operator'] as const;
const OWNERS = ['owner'] as const;

/** Each action a member may take in an organization, with the roles that may take it. */
export const PERMISSIONS = {
  /** Read agents, triggers, jobs and their logs, files' metadata, apps, releases, rollouts, members, API tokens, settings. */
  'org.read': EVERYONE,
  /** Issue enrollment tokens for new agents. */
  'agents.enroll': MEMBERS,
  /** Rename an agent, set its labels. */
  'agents.edit': MEMBERS,
  /** Revoke an agent. */
  'agents.revoke': OPERATORS,
  /** Create and change triggers. */
  'triggers.edit': MEMBERS,
  /** Delete a trigger. */
  'triggers.delete': OPERATORS,
  /** Run a trigger by hand. */
  'triggers.run': MEMBERS,
  /** Force a run past the workflow's rate limits. */
  'runs.force': OWNERS,
  /** Cancel a job or a batch. */
  'jobs.cancel': MEMBERS,
  /** Upload and delete files. */
  'files.write': MEMBERS,
  /** Issue API tokens and revoke one's own. */
  'api_tokens.issue': MEMBERS,
  /** Revoke another member's API token. */
  'api_tokens.revoke_any': OWNERS,
  /** Create and change apps, their device groups and devices. */
  'apps.edit': MEMBERS,
  /** Delete an app. */
  'apps.delete': OWNERS,
  /** Create, publish and yank releases; start, pause, resume and abort rollouts. */
  'releases.publish': MEMBERS,
  /** Set a workflow's rate limits. */
  'workflows.limits': OWNERS,
  /** Add and delete storage bindings. */
  'storage.bindings': OWNERS,
  /** Invite, change and remove members; see and revoke invitations. */
  'members.manage': OWNERS,
  /** Connect and disconnect chat workspaces. */
  'chat.integrations': OWNERS,
  /** Change the organization's retention. */
  'org.retention': OWNERS,
  /** Read the audit log. */
  'audit.read': OWNERS,
} as const satisfies Record<string, readonly Role[]>;

export type Action = keyof typeof PERMISSIONS;
export const ACTIONS = Object.keys(PERMISSIONS) as Action[];

/** Whether `role` may take `action`. */
export function can(role: Role, action: Action): boolean {
  return (PERMISSIONS[action] as readonly Role[]).includes(role);
}

/** Whether `value` is a role. */
export function isRole(value: unknown): value is Role {
  return (ROLES as readonly unknown[]).includes(value);
}

const ARTICLE: Record<Role, string> = {
  owner: 'an owner',
  operator: 'an operator',
  member: 'a member',
  viewer: 'a viewer',
};

/** "an owner", "an owner or an operator", "an owner, an operator or a member". */
export function roleWords(roles: readonly Role[]): string {
  const words = roles.map((r) => ARTICLE[r]);
  return words.length <= 1 ? (words[0] ?? 'nobody') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

/** The role with its article: "an owner", "a viewer". */
export function roleWithArticle(role: Role): string {
  return ARTICLE[role];
}
