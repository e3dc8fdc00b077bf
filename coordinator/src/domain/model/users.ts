export interface User {
  id: string;
  email: string;
  createdAt: string;
}

export interface UserWithPassword extends User {
  passwordHash: string;
}

/**
 * A stored user as the session check reads it: `sessionGeneration` moves on at every password
 * change and "sign out everywhere", and a session issued under another generation is refused.
 */
export interface StoredUser extends User {
  sessionGeneration: number;
}

/** A stored user as a sign-in reads it. */
export interface Account extends UserWithPassword, StoredUser {
  /**
   * The first password was chosen by whoever invited the email (the invitation made the account),
   * and the email has not been proved since: the account's first single sign-on removes the
   * password, changed since or not (whoever knew the first one could change it, the inviter too).
   */
  passwordByInviter: boolean;
}

export interface UserRepository {
  findByEmail(email: string): Promise<Account | null>;
  findById(id: string): Promise<StoredUser | null>;
  insert(user: UserWithPassword): Promise<void>;
  /**
   * Inserts the user only when there is no user at all (the bootstrap's owner); false when there
   * was one. Coordinators starting at once on one database insert one user between them.
   */
  insertIfNone(user: UserWithPassword): Promise<boolean>;
  count(): Promise<number>;
  /**
   * Replaces the password and moves the session generation on, in one statement; the new
   * generation, or null when there is no such user.
   */
  setPassword(id: string, passwordHash: string): Promise<number | null>;
  /**
   * Replaces a password the inviter chose (`passwordByInviter`) and moves the session generation
   * on, in one statement; the new generation, or null when the user has no such password (any more).
   */
  replaceInvitersPassword(id: string, passwordHash: string): Promise<number | null>;
  /** Moves the session generation on (every session issued before is refused); null: no such user. */
  endSessions(id: string): Promise<number | null>;
}
