import type { FastifyInstance } from 'fastify';
import { MAX_PASSWORD_LENGTH, decoyPasswordHash, verifyPassword } from '../../domain/passwords.js';
import { unauthorized } from '../../errors.js';
import { errorResponses, timestamp, uuid } from '../schemas/common.js';

export const UserSchema = {
  type: 'object',
  required: ['id', 'email'],
  properties: { id: uuid, email: { type: 'string' }, createdAt: timestamp },
} as const;

export async function authRoutes(app: FastifyInstance): Promise<void> {
  app.post<{ Body: { email: string; password: string } }>(
    '/auth/login',
    {
      schema: {
        summary: 'Sign in to the dashboard; returns a session JWT',
        tags: ['dashboard'],
        security: [],
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['email', 'password'],
          properties: {
            email: { type: 'string', minLength: 1, maxLength: 320 },
            password: { type: 'string', minLength: 1, maxLength: MAX_PASSWORD_LENGTH },
          },
        },
        response: {
          200: {
            type: 'object',
            required: ['token', 'expiresAt', 'user'],
            properties: { token: { type: 'string' }, expiresAt: timestamp, user: UserSchema },
          },
          ...errorResponses(401, 422),
        },
      },
    },
    async (request) => {
      const { repos, sessions } = app.ctx;
      const user = await repos.users.findByEmail(request.body.email.trim());
      // Hash even for an unknown email, so timing does not reveal which emails exist.
      const ok = await verifyPassword(request.body.password, user?.passwordHash ?? (await decoyPasswordHash()));
      if (!user || !ok) throw unauthorized('Wrong email or password');
      const session = await sessions.issue(user.id);
      return {
        token: session.token,
        expiresAt: session.expiresAt,
        user: { id: user.id, email: user.email, createdAt: user.createdAt },
      };
    },
  );
}
