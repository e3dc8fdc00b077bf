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
  count(): Promise<number>;
}
