import os from 'node:os';
import type { KeyObject } from 'node:crypto';
import {
  generateEd25519KeyPair,
  privateKeyFromBase64,
  signRequest,
  type WorkflowDefinition,
} from '@drover/shared';
import type { ApiClient, ApiResponse } from './http.js';

/** An agent enrolled through the real protocol, able to make signed requests. */
export interface TestAgent {
  agentId: string;
  orgId: string;
  serverPublicKey: string;
  publicKey: string;
  privateKey: KeyObject;
  /** A signed request to `/v1/agent/...`; `path` starts with `/v1/`. */
  request<T = any>(method: string, path: string, body?: unknown, sign?: Partial<SignOverrides>): Promise<ApiResponse<T>>;
  /** Replaces the agent's workflow set (PUT /v1/agent/workflows). */
  putWorkflows(workflows: WorkflowDefinition[]): Promise<ApiResponse>;
}

export interface SignOverrides {
  now: number;
  nonce: string;
  agentId: string;
  privateKey: KeyObject;
  /** Replace the headers actually sent after signing. */
  headers: Record<string, string>;
}

/** Creates an enrollment token as `owner` (a session client) and enrolls a fresh key pair with it. */
export async function enrollTestAgent(
  owner: ApiClient,
  orgId: string,
  options: { hostname?: string; name?: string } = {},
): Promise<TestAgent> {
  const created = await owner.post<{ token: string }>(`/orgs/${orgId}/enrollment-tokens`, {
    body: options.name ? { name: options.name } : {},
  });
  if (created.status !== 201) throw new Error(`enrollment token: ${created.status} ${created.text}`);
  const keys = generateEd25519KeyPair();
  const enrolled = await owner.post<{ agentId: string; orgId: string; serverPublicKey: string }>('/agent/enroll', {
    token: null,
    body: {
      enrollmentToken: created.body.token,
      publicKey: keys.publicKey,
      hostname: options.hostname ?? os.hostname(),
      os: `${os.platform()} ${os.release()}`,
      agentVersion: '0.1.0-test',
    },
  });
  if (enrolled.status !== 201) throw new Error(`enroll: ${enrolled.status} ${enrolled.text}`);
  const privateKey = privateKeyFromBase64(keys.privateKey);
  const origin = owner.baseUrl.replace(/\/v1$/, '');
  const agent: TestAgent = {
    agentId: enrolled.body.agentId,
    orgId: enrolled.body.orgId,
    serverPublicKey: enrolled.body.serverPublicKey,
    publicKey: keys.publicKey,
    privateKey,
    async request(method, path, body, sign = {}) {
      const raw = body === undefined ? undefined : JSON.stringify(body);
      const headers: Record<string, string> = {
        ...signRequest({
          agentId: sign.agentId ?? agent.agentId,
          privateKey: sign.privateKey ?? privateKey,
          method,
          path,
          body: raw,
          ...(sign.now === undefined ? {} : { now: sign.now }),
          ...(sign.nonce === undefined ? {} : { nonce: sign.nonce }),
        }),
        ...(raw === undefined ? {} : { 'content-type': 'application/json' }),
        ...sign.headers,
      };
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

/** A minimal valid workflow definition. */
export function workflow(name: string, extra: Partial<WorkflowDefinition> = {}): WorkflowDefinition {
  return { name, description: `${name} workflow`, version: '1', paramsSchema: null, secretsKeys: [], steps: [{ run: 'true' }], ...extra };
}
