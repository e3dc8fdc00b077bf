import { S3_BUCKET, S3_REGION } from '../domain/files/storage-bindings.js';
import type { AllowedHosts } from '../domain/model/storage-bindings.js';
import { shownUrl } from './database-config.js';

/**
 * Where the coordinator keeps its own files (docs/storage.md, "Where files are kept"):
 * `DROVER_STORAGE_URL` / `--storage-url`. Unset: the data directory. `s3://<bucket>[/<prefix>]
 * ?endpoint=<http(s) url>&region=<region>&forcePathStyle=true` : an S3-compatible bucket, with the
 * keys from the AWS SDK's usual sources (`AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`, a profile,
 * an instance role).
 */
export type StorageConfig = { readonly kind: 'disk' } | ({ readonly kind: 's3' } & S3StorageLocation);

export interface S3StorageLocation {
  readonly bucket: string;
  /** Prepended to every object key: `prefix/`, or empty. */
  readonly prefix: string;
  /** The store's address; null: AWS S3 of the region. */
  readonly endpoint: string | null;
  readonly region: string;
  readonly forcePathStyle: boolean;
  /** From AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; null: the SDK finds them (profile, instance role). */
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string } | null;
}

const PREFIX = /^[A-Za-z0-9!_.*'()/-]{1,512}$/;
const QUERY_KEYS = ['endpoint', 'region', 'forcePathStyle'];

/** Parses the setting; each problem is pushed to `problems`, naming `source`. */
export function parseStorageUrl(
  raw: { value: string; source: string } | undefined,
  env: Record<string, string | undefined>,
  problems: string[],
): StorageConfig {
  if (!raw) return { kind: 'disk' };
  const expected = `${raw.source}: expected s3://<bucket>[/<prefix>]?endpoint=<http(s) URL>&region=<region>&forcePathStyle=true`;
  let url: URL;
  try {
    url = new URL(raw.value.trim());
  } catch {
    problems.push(`${expected}, got \`${raw.value}\``);
    return { kind: 'disk' };
  }
  if (url.protocol !== 's3:') {
    problems.push(`${expected}, got the scheme \`${url.protocol}\``);
    return { kind: 'disk' };
  }
  const before = problems.length;
  if (url.username || url.password) {
    problems.push(
      `${raw.source}: keys do not belong in the URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead`,
    );
  }
  const bucket = url.hostname;
  if (!S3_BUCKET.test(bucket)) {
    problems.push(`${raw.source}: expected a bucket name (3 to 63 of a-z 0-9 . -), got \`${bucket}\``);
  }
  const path = decodeURIComponent(url.pathname).replace(/^\/+|\/+$/g, '');
  if (path !== '' && !PREFIX.test(path)) {
    problems.push(`${raw.source}: expected a key prefix of letters, digits and !_.*'()/-, got \`${path}\``);
  }
  for (const key of url.searchParams.keys()) {
    if (!QUERY_KEYS.includes(key)) {
      problems.push(`${raw.source}: unknown parameter \`${key}\` (known: ${QUERY_KEYS.join(', ')})`);
    }
  }
  const endpointText = url.searchParams.get('endpoint');
  let endpoint: string | null = null;
  if (endpointText !== null) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(endpointText);
    } catch {
      parsed = null;
    }
    if (
      !parsed ||
      (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') ||
      parsed.username ||
      parsed.password ||
      parsed.search
    ) {
      problems.push(
        `${raw.source}: expected endpoint to be an http(s) URL without credentials, got \`${shownUrl(endpointText)}\``,
      );
    } else {
      endpoint = parsed.toString().replace(/\/+$/, '');
    }
  }
  const region = url.searchParams.get('region') ?? 'us-east-1';
  if (!S3_REGION.test(region)) problems.push(`${raw.source}: expected a region such as us-east-1, got \`${region}\``);
  const pathStyle = url.searchParams.get('forcePathStyle') ?? 'false';
  if (pathStyle !== 'true' && pathStyle !== 'false') {
    problems.push(`${raw.source}: expected forcePathStyle to be true or false, got \`${pathStyle}\``);
  }
  const accessKeyId = env.AWS_ACCESS_KEY_ID ?? '';
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY ?? '';
  if ((accessKeyId === '') !== (secretAccessKey === '')) {
    problems.push(
      `AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together (for ${raw.source}); only ${accessKeyId ? 'the first' : 'the second'} is set`,
    );
  }
  if (problems.length > before) return { kind: 'disk' };
  return Object.freeze({
    kind: 's3',
    bucket,
    prefix: path === '' ? '' : `${path}/`,
    endpoint,
    region,
    forcePathStyle: pathStyle === 'true',
    credentials: accessKeyId ? Object.freeze({ accessKeyId, secretAccessKey }) : null,
  });
}

/**
 * The origin the bucket's presigned URLs point at (what a browser connects to): the endpoint's
 * host with path-style addressing, the bucket as a subdomain of it otherwise; AWS S3's regional
 * address without an endpoint.
 */
export function bucketOrigin(
  location: Pick<S3StorageLocation, 'bucket' | 'endpoint' | 'region' | 'forcePathStyle'>,
): string {
  const base = new URL(location.endpoint ?? `https://s3.${location.region}.amazonaws.com`);
  if (!location.forcePathStyle) base.hostname = `${location.bucket}.${base.hostname}`;
  return base.origin;
}

const ALLOWED_HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/;

/**
 * DROVER_STORAGE_ALLOWED_HOSTS: the hosts of the coordinator's own networks that organizations'
 * `s3` bindings may use (docs/storage.md, "Storage bindings"): `*` for any, or a comma-separated
 * list of `host` (any port) and `host:port`; unset, none (public addresses only).
 */
export function parseStorageAllowedHosts(
  raw: { value: string; source: string } | undefined,
  problems: string[],
): AllowedHosts {
  if (!raw) return new Set();
  const text = raw.value.trim();
  if (text === '*') return 'any';
  const hosts = new Set<string>();
  for (const entry of text.split(',').map((e) => e.trim())) {
    const match = ALLOWED_HOST.exec(entry);
    const port = match?.[2] === undefined ? null : Number(match[2]);
    let host: string | null = null;
    try {
      host = match ? new URL(`http://${match[1]}`).hostname : null;
    } catch {
      host = null;
    }
    if (host === null || (port !== null && (port < 1 || port > 65535))) {
      problems.push(
        `${raw.source}: expected * or a comma-separated list of host or host:port (an IPv6 address in brackets), got \`${entry}\``,
      );
      continue;
    }
    hosts.add(port === null ? host : `${host}:${port}`);
  }
  return hosts;
}
