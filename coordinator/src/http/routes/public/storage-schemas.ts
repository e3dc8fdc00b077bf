import { FILE_STATUSES } from '../../../domain/model/files.js';
import {
  MAX_CONTENT_TYPE_LENGTH,
  MAX_FILENAME_LENGTH,
  MAX_TTL_SECONDS,
  MIN_TTL_SECONDS,
} from '../../../domain/files/file-input.js';
import { nullableTimestamp, timestamp, uuid } from '../../schemas/common.js';
import { EXAMPLE_IDS, downloadUrlExample, fileExample, presignUploadExample } from '../../schemas/examples.js';
import { named } from '../../schemas/named.js';
import { cursorQueryProperty } from '../../pagination.js';

/** JSON schemas of the public storage API (docs/storage.md: the file API and the stored file's fields). */

/** A stored file's public metadata; fast-json-stringify drops every internal field. */
export const FileViewSchema = named('StoredFile', {
  type: 'object',
  examples: [fileExample],
  required: [
    'id',
    'bindingId',
    'filename',
    'contentType',
    'size',
    'status',
    'cleanupRule',
    'expiresAt',
    'deletedAt',
    'createdAt',
  ],
  properties: {
    id: uuid,
    bindingId: uuid,
    filename: { type: 'string' },
    contentType: { type: 'string' },
    size: { type: 'integer', description: '0 until the upload is complete' },
    status: { type: 'string', enum: FILE_STATUSES },
    cleanupRule: { type: 'string', enum: ['ttl', 'persistent'] },
    expiresAt: nullableTimestamp,
    deletedAt: nullableTimestamp,
    createdAt: timestamp,
  },
} as const);

export const PresignUploadBodySchema = {
  type: 'object',
  examples: [
    {
      bindingId: EXAMPLE_IDS.binding,
      filename: 'build.tar.gz',
      contentType: 'application/gzip',
      cleanupRule: 'persistent',
    },
  ],
  additionalProperties: false,
  required: ['cleanupRule'],
  properties: {
    bindingId: { ...uuid, description: 'may be left out when the token may use exactly one binding' },
    filename: { type: 'string', maxLength: MAX_FILENAME_LENGTH, description: 'a label; default: the file id' },
    contentType: {
      type: 'string',
      maxLength: MAX_CONTENT_TYPE_LENGTH,
      description: 'MIME type; default application/octet-stream',
    },
    cleanupRule: { type: 'string', enum: ['ttl', 'persistent'], description: '`on_job_end` is not supported here' },
    ttlSeconds: {
      type: 'integer',
      description: `with ttl: ${MIN_TTL_SECONDS} to ${MAX_TTL_SECONDS} seconds after completion; default 86400`,
    },
  },
} as const;

export const PresignUploadResponseSchema = named('PresignedUpload', {
  type: 'object',
  examples: [presignUploadExample],
  required: ['fileId', 'uploadUrl', 'method', 'headers', 'expiresInSeconds'],
  properties: {
    fileId: uuid,
    uploadUrl: { type: 'string' },
    method: { type: 'string', enum: ['PUT'] },
    headers: { type: 'object', additionalProperties: { type: 'string' } },
    expiresInSeconds: { type: 'integer' },
  },
} as const);

export const DownloadUrlResponseSchema = named('DownloadUrl', {
  type: 'object',
  examples: [downloadUrlExample],
  required: ['downloadUrl', 'expiresInSeconds'],
  properties: { downloadUrl: { type: 'string' }, expiresInSeconds: { type: 'integer' } },
} as const);

export const ListQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    bindingId: uuid,
    status: { type: 'string', enum: FILE_STATUSES },
    cursor: cursorQueryProperty,
  },
} as const;
