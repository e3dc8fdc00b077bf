import type { FastifyInstance } from 'fastify';
import { MAX_PASSWORD_LENGTH } from '../../domain/passwords.js';
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
          ...errorResponses(401, 422, 429),
        },
      },
    },
    async (request) => app.ctx.signIn.signIn(request.body.email, request.body.password, request.ip),
  );
}
