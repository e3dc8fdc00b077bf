import type { FastifyReply } from 'fastify';
import type { FileListFilter } from '../../../domain/files/file-service.js';
import type { FileListPosition, FileStatus } from '../../../domain/model/files.js';
import type { FileView } from '../../../domain/files/view.js';
import { NEXT_CURSOR_HEADER, parsePositionCursor, positionCursor } from '../../pagination.js';

/** The query of the files lists (GET /v1/storage/files, GET /v1/orgs/:orgId/files). */
export interface ListQuery {
  bindingId?: string;
  status?: FileStatus;
  cursor?: string;
}

/** The filter a list's query asks for; 422 for a cursor that no page gave. */
export function listFilter({ cursor, ...filter }: ListQuery): FileListFilter {
  return { ...filter, after: parsePositionCursor(cursor) };
}

/** A page's files (the body stays an array), with the next page's cursor in its header when more follow. */
export function sendFilePage(
  reply: FastifyReply,
  page: { files: FileView[]; next: FileListPosition | null },
): FileView[] {
  if (page.next) void reply.header(NEXT_CURSOR_HEADER, positionCursor(page.next));
  return page.files;
}
