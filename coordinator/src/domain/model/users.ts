export interface User {
  id: string;
  email: string;
  createdAt: string;
}

export interface UserWithPassword extends User {
  passwordHash: string;
}

export interface UserRepository {
  findByEmail(email: string): Promise<UserWithPassword | null>;
  findById(id: string): Promise<User | null>;
  insert(user: UserWithPassword): Promise<void>;
  /**
   * Inserts the user only when there is no user at all (the bootstrap's owner); false when there
   * was one. Coordinators starting at once on one database insert one user between them.
   */
  insertIfNone(user: UserWithPassword): Promise<boolean>;
  count(): Promise<number>;
}
