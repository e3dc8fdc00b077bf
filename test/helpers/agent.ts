import { randomUUID, type KeyObject } from 'node:crypto';
import os from 'node:os';
import {
  generateEd25519KeyPair,
  privateKeyFromBase64,
  signRequest,
  type EnrollResponse,
  type WorkflowDefinition,
} from '@drover/shared';
import { hashBearerSecret, newBearerSecret } from '../../coordinator/src/util/secrets.js';
import type { ApiClient, ApiResponse } from './http.js';
import type { TestCoordinator } from './coordinator.js';

/** An agent enrolled through the real protocol, able to make signed requests. */
export interface TestAgent {
  agentId: string;
  orgId: string;
  serverPublicKey: string;
  publicKey: string;
  privateKey: KeyObject;
  /** A signed request to `/v1/agent/...`; `path` starts with `/v1/`. */
  request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    sign?: Partial<SignOverrides>,
  ): Promise<ApiResponse<T>>;
  /** Replaces the agent's workflow set (PUT /v1/agent/workflows). */
  putWorkflows(workflows: WorkflowDefinition[]): Promise<ApiResponse>;
}

export interface SignOverrides {
  now: number;
  nonce: string;
  agentId: string;
  privateKey: KeyObject;
  /** Sign this path instead of the one sent (tampering tests). */
  signPath: string;
  /** Sign this body text instead of the one sent (tampering tests). */
  signBody: string;
  /** Send this raw body text instead of `JSON.stringify(body)`; it is also what gets signed. */
  rawBody: string;
  /** Replace the headers actually sent after signing. */
  headers: Record<string, string>;
  /** Drop these headers (lower-case names) after signing. */
  omitHeaders: string[];
}

export interface EnrollOptions {
  hostname?: string;
  /** The enrollment token's name. */
  name?: string;
  /** Enroll with this token instead of issuing one through the API. */
  enrollmentToken?: string;
}

/**
 * Creates an enrollment token as `owner` (a session client) through the API, unless one is
 * given, and enrolls a fresh key pair with it.
 */
export async function enrollTestAgent(
  owner: ApiClient,
  orgId: string,
  options: EnrollOptions = {},
): Promise<TestAgent> {
  let token = options.enrollmentToken;
  if (token === undefined) {
    const created = await owner.post<{ token: string }>(`/orgs/${orgId}/enrollment-tokens`, {
      body: options.name ? { name: options.name } : {},
    });
    if (created.status !== 201) throw new Error(`enrollment token: ${created.status} ${created.text}`);
    token = created.body.token;
  }
  const keys = generateEd25519KeyPair();
  const enrolled = await owner.post<EnrollResponse>('/agent/enroll', {
    token: null,
    body: {
      enrollmentToken: token,
      publicKey: keys.publicKey,
      hostname: options.hostname ?? os.hostname(),
      os: `${os.platform()} ${os.release()}`,
      agentVersion: '0.1.0-test',
    },
  });
  if (enrolled.status !== 201) throw new Error(`enroll: ${enrolled.status} ${enrolled.text}`);
  return signedAgentClient(owner.baseUrl, enrolled.body, keys);
}

/** A signed-request client for an already enrolled key pair. */
export function signedAgentClient(
  baseUrl: string,
  enrolled: EnrollResponse,
  keys: { publicKey: string; privateKey: string },
): TestAgent {
  const privateKey = privateKeyFromBase64(keys.privateKey);
  const origin = baseUrl.replace(/\/v1$/, '');
  const agent: TestAgent = {
    agentId: enrolled.agentId,
    orgId: enrolled.orgId,
    serverPublicKey: enrolled.serverPublicKey,
    publicKey: keys.publicKey,
    privateKey,
    async request(method, path, body, sign = {}) {
      const raw = sign.rawBody ?? (body === undefined ? undefined : JSON.stringify(body));
      const headers: Record<string, string> = {
        ...signRequest({
          agentId: sign.agentId ?? agent.agentId,
          privateKey: sign.privateKey ?? privateKey,
          method,
          path: sign.signPath ?? path,
          body: sign.signBody ?? raw,
          ...(sign.now === undefined ? {} : { now: sign.now }),
          ...(sign.nonce === undefined ? {} : { nonce: sign.nonce }),
        }),
        ...(raw === undefined ? {} : { 'content-type': 'application/json' }),
        ...sign.headers,
      };
      for (const name of sign.omitHeaders ?? []) delete headers[name];
      const res = await fetch(`${origin}${path}`, { method, headers, body: raw });
      const text = await res.text();
      const parsed = (res.headers.get('content-type') ?? '').includes('json') && text ? JSON.parse(text) : text;
      return { status: res.status, headers: res.headers, body: parsed, text };
    },
    putWorkflows(workflows) {
      return agent.request('PUT', '/v1/agent/workflows', { workflows });
    },
  };
  return agent;
}

/** The same enrolled agent talking to another coordinator (one that shares the database). */
export function agentVia(agent: TestAgent, baseUrl: string): TestAgent {
  const { d } = agent.privateKey.export({ format: 'jwk' }) as { d: string };
  return signedAgentClient(
    baseUrl,
    { agentId: agent.agentId, orgId: agent.orgId, serverPublicKey: agent.serverPublicKey },
    { publicKey: agent.publicKey, privateKey: Buffer.from(d, 'base64url').toString('base64') },
  );
}

/**
 * Creates an enrollment token directly in the coordinator's store (for states the API cannot
 * produce, such as an already expired token). Returns the plaintext.
 */
export async function insertEnrollmentToken(
  t: TestCoordinator,
  options: { orgId?: string; expiresAt?: string; name?: string | null } = {},
): Promise<string> {
  const plain = newBearerSecret('drve_');
  const now = Date.now();
  await t.coordinator.ctx.repos.enrollmentTokens.insert(
    {
      id: randomUUID(),
      orgId: options.orgId ?? t.orgId,
      name: options.name ?? null,
      expiresAt: options.expiresAt ?? new Date(now + 3_600_000).toISOString(),
      usedAt: null,
      usedByAgentId: null,
      createdBy: null,
      createdAt: new Date(now).toISOString(),
    },
    hashBearerSecret(plain),
  );
  return plain;
}

/** A minimal valid workflow definition. */
export function workflow(name: string, extra: Partial<WorkflowDefinition> = {}): WorkflowDefinition {
  return {
    name,
    description: `${name} workflow`,
    version: '1',
    paramsSchema: null,
    secretsKeys: [],
    steps: [{ run: 'true' }],
    ...extra,
  };
}
