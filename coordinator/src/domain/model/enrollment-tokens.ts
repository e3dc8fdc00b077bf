export interface EnrollmentToken {
  id: string;
  orgId: string;
  name: string | null;
  expiresAt: string;
  usedAt: string | null;
  usedByAgentId: string | null;
  createdBy: string | null;
  createdAt: string;
}

export interface EnrollmentTokenRepository {
  insert(token: EnrollmentToken, tokenHash: string): Promise<void>;
}
