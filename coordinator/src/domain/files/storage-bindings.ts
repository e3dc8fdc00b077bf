import type { Repositories } from '../model/repositories.js';
import type { StorageBackend, StorageBinding } from '../model/storage-bindings.js';
import { conflict, describeValue, notFound, validationFailed, type ValidationDetail } from '../../errors.js';
import { newId } from '../../util/ids.js';
import { shownUrl } from '../../config/database-config.js';
import { nameProblem } from '../names.js';
import { EndpointGuard, type AllowedHosts } from '../../storage/endpoint-guard.js';

export const STORAGE_BACKENDS: readonly StorageBackend[] = ['local', 's3'];
export const S3_SETTINGS = [
  'endpoint',
  'bucket',
  'region',
  'accessKeyId',
  'secretAccessKey',
  'forcePathStyle',
] as const;
type S3Setting = (typeof S3_SETTINGS)[number];

/** The body of `POST /orgs/:orgId/storage-bindings`, after its JSON schema (types and lengths). */
export type StorageBindingInput = { name: string; backend: StorageBackend } & Partial<Record<S3Setting, unknown>>;

/** Settings of an `s3` binding as stored in `config`; `secretAccessKey` is never returned. */
export interface S3Config {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: boolean;
}

/** S3 bucket naming rules (3 to 63 lower-case letters, digits, dots and hyphens, alphanumeric ends). */
export const S3_BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
export const S3_REGION = /^[A-Za-z0-9_-]{1,64}$/;
const KEY = /^[\x21-\x7e]{1,256}$/; // printable ASCII, no spaces

/**
 * Checks a binding's backend settings and returns what is stored. `local` takes no settings; `s3`
 * needs an http(s) endpoint, a bucket, a region and a key pair, `forcePathStyle` being optional.
 * Every problem is reported at once, without ever echoing the secret key.
 */
export function parseStorageBindingInput(input: StorageBindingInput): {
  name: string;
  backend: StorageBackend;
  config: Record<string, unknown>;
} {
  const details: ValidationDetail[] = [];
  const problem = nameProblem(input.name);
  if (problem) details.push({ path: 'body.name', message: problem });
  let config: Record<string, unknown> = {};
  if (input.backend === 'local') {
    for (const key of S3_SETTINGS) {
      if (input[key] !== undefined)
        details.push({ path: `body.${key}`, message: 'is not a setting of the local backend' });
    }
  } else {
    const s3 = checkS3(input, details);
    if (s3) config = { ...s3 };
  }
  if (details.length > 0) throw validationFailed(details);
  return { name: input.name.trim(), backend: input.backend, config };
}

function checkS3(input: StorageBindingInput, details: ValidationDetail[]): S3Config | null {
  const before = details.length;
  const text = (key: S3Setting): string | null => {
    const value = input[key];
    if (value === undefined) {
      details.push({ path: `body.${key}`, message: 'is required for the s3 backend' });
      return null;
    }
    if (typeof value !== 'string') {
      details.push({ path: `body.${key}`, message: `must be a string, got ${describeValue(value)}` });
      return null;
    }
    return value;
  };
  const endpoint = text('endpoint');
  if (endpoint !== null && !isHttpUrl(endpoint)) {
    details.push({
      path: 'body.endpoint',
      message: `must be an http or https URL without credentials, got ${describeValue(shownUrl(endpoint))}`,
    });
  }
  const bucket = text('bucket');
  if (bucket !== null && !S3_BUCKET.test(bucket)) {
    details.push({
      path: 'body.bucket',
      message: `must be an S3 bucket name (3 to 63 of a-z 0-9 . -), got ${describeValue(bucket)}`,
    });
  }
  const region = text('region');
  if (region !== null && !S3_REGION.test(region)) {
    details.push({
      path: 'body.region',
      message: `must be a region name such as us-east-1, got ${describeValue(region)}`,
    });
  }
  const accessKeyId = text('accessKeyId');
  if (accessKeyId !== null && !KEY.test(accessKeyId)) {
    details.push({ path: 'body.accessKeyId', message: 'must be 1 to 256 printable characters without spaces' });
  }
  const secretAccessKey = text('secretAccessKey');
  if (secretAccessKey !== null && !KEY.test(secretAccessKey)) {
    // Never describe the value: it is a secret.
    details.push({ path: 'body.secretAccessKey', message: 'must be 1 to 256 printable characters without spaces' });
  }
  const forcePathStyle = input.forcePathStyle ?? false;
  if (typeof forcePathStyle !== 'boolean') {
    details.push({ path: 'body.forcePathStyle', message: `must be a boolean, got ${describeValue(forcePathStyle)}` });
  }
  if (details.length > before) return null;
  return {
    endpoint: endpoint!.replace(/\/+$/, ''),
    bucket: bucket!,
    region: region!,
    accessKeyId: accessKeyId!,
    secretAccessKey: secretAccessKey!,
    forcePathStyle: forcePathStyle as boolean,
  };
}

function isHttpUrl(value: string): boolean {
  if (value.length > 2048) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    url.hostname !== '' &&
    url.username === '' &&
    url.password === '' &&
    url.search === '' &&
    url.hash === ''
  );
}

/**
 * Creates a (non-default) binding; a name already used in the organization is 409, an endpoint in
 * the coordinator's own networks that the operator did not allow 422 (endpoint-guard.ts).
 */
export async function createStorageBinding(
  repos: Repositories,
  orgId: string,
  input: StorageBindingInput,
  at: string,
  allowedHosts: AllowedHosts,
): Promise<StorageBinding> {
  const parsed = parseStorageBindingInput(input);
  if (parsed.backend === 's3') {
    const problem = await new EndpointGuard(allowedHosts).problem((parsed.config as unknown as S3Config).endpoint);
    if (problem) throw validationFailed([{ path: 'body.endpoint', message: `may not be used: ${problem}` }]);
  }
  const binding: StorageBinding = { id: newId(), orgId, ...parsed, isDefault: false, createdAt: at };
  if (!(await repos.storageBindings.insertIfNameFree(binding))) {
    throw conflict(`The organization already has a storage binding named ${JSON.stringify(parsed.name)}`);
  }
  return binding;
}

/**
 * Deletes a binding; the organization's default binding, and a binding that holds files not
 * `deleted`, cannot be deleted (409).
 */
export async function deleteStorageBinding(
  repos: Repositories,
  orgId: string,
  id: string,
  at: string,
): Promise<StorageBinding> {
  const binding = await repos.storageBindings.findInOrg(orgId, id);
  if (!binding) throw notFound('Storage binding');
  if (binding.isDefault) throw conflict('The default storage binding of an organization cannot be deleted');
  const deleted = await repos.storageBindings.softDeleteIfEmpty(orgId, id, at);
  if (deleted.outcome === 'not_found') throw notFound('Storage binding');
  if (deleted.outcome === 'holds_files') {
    throw conflict(`The storage binding still holds ${deleted.files} file(s) not deleted; delete them first`);
  }
  return binding;
}

/** Non-secret settings worth recording in the audit log. */
export function auditableSettings(binding: StorageBinding): Record<string, unknown> {
  if (binding.backend !== 's3') return {};
  const { endpoint, bucket, region } = binding.config as Partial<S3Config>;
  return { endpoint, bucket, region };
}
