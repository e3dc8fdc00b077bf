import type { FastifyInstance } from 'fastify';
import { requireSession, sessionHook } from '../auth/session.js';
import { SESSION_SECURITY } from './route-group.js';
import { errorResponses, timestamp } from '../schemas/common.js';
import { named } from '../schemas/named.js';
import { noQuery } from '../schemas/management.js';
import { defaultRunBody } from '../run-answer.js';
import { SignInAnswerSchema } from './auth.js';

const userCodeExample = 'WDJB-MJHT';
const expiresAtExample = '2026-11-29T21:40:00.000Z';

const DeviceSignInStartSchema = named('DeviceSignInStart', {
  type: 'object',
  required: ['deviceCode', 'userCode', 'verificationUri', 'verificationUriComplete', 'expiresAt', 'interval'],
  properties: {
    deviceCode: { type: 'string', description: "the command line's secret for `POST /v1/auth/device/token`" },
    userCode: { type: 'string', description: 'what its user checks on the page, `XXXX-XXXX`' },
    verificationUri: { type: 'string', description: "the dashboard's page where a signed-in user approves" },
    verificationUriComplete: { type: 'string', description: 'the page with the code filled in' },
    expiresAt: timestamp,
    interval: { type: 'integer', description: 'seconds to wait between polls' },
  },
  examples: [
    {
      deviceCode: 'GmRhmhcxhwAzkoEqiMEg_DnyEysNkuNhszIySk9eS',
      userCode: userCodeExample,
      verificationUri: 'https://drover.example.com/device',
      verificationUriComplete: `https://drover.example.com/device?code=${userCodeExample}`,
      expiresAt: expiresAtExample,
      interval: 5,
    },
  ],
} as const);

const DeviceSignInSchema = named('DeviceSignIn', {
  type: 'object',
  required: ['userCode', 'status', 'client', 'requestedFrom', 'requestedAt', 'expiresAt'],
  properties: {
    userCode: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'approved', 'denied'] },
    client: { type: ['string', 'null'], description: 'how the client described itself: its own words' },
    requestedFrom: { type: 'string', description: 'the client address that started the sign-in' },
    requestedAt: timestamp,
    expiresAt: timestamp,
  },
  examples: [
    {
      userCode: userCodeExample,
      status: 'pending',
      client: 'drover 1.4.0 on build-7',
      requestedFrom: '203.0.113.7',
      requestedAt: '2026-11-29T21:30:00.000Z',
      expiresAt: expiresAtExample,
    },
  ],
} as const);

const DeviceSignInPendingSchema = named('DeviceSignInPending', {
  type: 'object',
  required: ['status', 'expiresAt', 'interval'],
  properties: { status: { type: 'string', enum: ['pending'] }, expiresAt: timestamp, interval: { type: 'integer' } },
  examples: [{ status: 'pending', expiresAt: expiresAtExample, interval: 5 }],
} as const);

const userCodeParams = {
  type: 'object',
  required: ['userCode'],
  properties: { userCode: { type: 'string', minLength: 1, maxLength: 32 } },
} as const;

/**
 * Signing the command line in through the browser (domain/auth/device-sign-in.ts): the command
 * line starts and polls without credentials; a signed-in user looks the code up and approves or
 * denies it from the dashboard's /device page.
 */
export async function deviceAuthRoutes(app: FastifyInstance): Promise<void> {
  app.post<{ Body: { client?: string } }>(
    '/auth/device',
    {
      schema: {
        operationId: 'startDeviceSignIn',
        summary: 'Start signing a command line in through the browser',
        description:
          'The command line keeps `deviceCode` and polls `POST /v1/auth/device/token` with it every `interval` ' +
          'seconds; its user opens `verificationUriComplete` in a browser where they are signed in (password or ' +
          'single sign-on), checks that it shows `userCode`, and approves. A sign-in waits 10 minutes; one client ' +
          'address may have 10 waiting (429 beyond); 503 with `Retry-After` when 10,000 from all addresses are ' +
          'stored.',
        tags: ['dashboard'],
        querystring: noQuery,
        security: [],
        body: {
          type: 'object',
          additionalProperties: false,
          examples: [{ client: 'drover 1.4.0 on build-7' }],
          properties: {
            client: {
              type: 'string',
              minLength: 1,
              maxLength: 120,
              description:
                'how the client describes itself, shown on the approval page as its own words: no control or ' +
                'invisible formatting characters (which could make it read as something else there)',
            },
          },
        },
        response: { 201: DeviceSignInStartSchema, ...errorResponses(422, 429, 503) },
      },
      preValidation: defaultRunBody, // its one field is optional: no body at all is {}
    },
    async (request, reply) => {
      const started = await app.ctx.deviceSignIn.start(request.body.client ?? null, request.ip);
      return reply.status(201).send(started);
    },
  );

  app.post<{ Body: { deviceCode: string } }>(
    '/auth/device/token',
    {
      schema: {
        operationId: 'finishDeviceSignIn',
        summary: "The command line's poll: its session once approved",
        description:
          'Answers 202 while nobody has approved; once approved, the session as `POST /v1/auth/login` answers it ' +
          '(200, once: then 410); 403 `device_sign_in_denied` when denied; 410 `device_sign_in_expired` when ' +
          'expired; 429 with `Retry-After` for a poll sooner than `interval` seconds after the previous one. ' +
          'No cookie is set.',
        tags: ['dashboard'],
        querystring: noQuery,
        security: [],
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['deviceCode'],
          examples: [{ deviceCode: 'GmRhmhcxhwAzkoEqiMEg_DnyEysNkuNhszIySk9eS' }],
          properties: { deviceCode: { type: 'string', minLength: 1, maxLength: 128 } },
        },
        response: {
          200: SignInAnswerSchema,
          202: DeviceSignInPendingSchema,
          ...errorResponses(403, 404, 410, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const answer = await app.ctx.deviceSignIn.finish(request.body.deviceCode);
      return 'status' in answer ? reply.status(202).send(answer) : answer;
    },
  );

  app.get<{ Params: { userCode: string } }>(
    '/auth/device/:userCode',
    {
      schema: {
        operationId: 'getDeviceSignIn',
        summary: 'A command-line sign-in waiting for the code, as the approval page shows it',
        description:
          'The code in any case, with or without its hyphen. 404 for a wrong, expired or used code; after 10 wrong ' +
          'codes within an hour (looked up, approved or denied), each further one locks the user out of these ' +
          'pages for a while: 429 with `Retry-After`.',
        tags: ['dashboard'],
        querystring: noQuery,
        security: SESSION_SECURITY,
        params: userCodeParams,
        response: { 200: DeviceSignInSchema, ...errorResponses(401, 404, 429) },
      },
      onRequest: sessionHook,
    },
    async (request) => {
      const { userId } = await requireSession(request);
      return app.ctx.deviceSignIn.describe(request.params.userCode, userId);
    },
  );

  for (const [action, status] of [
    ['approve', 'approved'],
    ['deny', 'denied'],
  ] as const) {
    app.post<{ Params: { userCode: string } }>(
      `/auth/device/:userCode/${action}`,
      {
        schema: {
          operationId: action === 'approve' ? 'approveDeviceSignIn' : 'denyDeviceSignIn',
          summary:
            action === 'approve'
              ? 'Approve a command-line sign-in: the command line gets a session of yours'
              : 'Deny a command-line sign-in',
          description:
            '404 for a wrong, expired or used code; 409 when it was already approved or denied; 429 with ' +
            '`Retry-After` while the user is locked out for wrong codes (as `GET /v1/auth/device/{userCode}`).',
          tags: ['dashboard'],
          querystring: noQuery,
          security: SESSION_SECURITY,
          params: userCodeParams,
          response: { 200: DeviceSignInSchema, ...errorResponses(401, 403, 404, 409, 429) },
        },
        onRequest: sessionHook,
      },
      async (request) => {
        const { userId } = await requireSession(request);
        return app.ctx.deviceSignIn.decide(request.params.userCode, status, userId);
      },
    );
  }
}
