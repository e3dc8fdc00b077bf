import { useInfiniteQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState } from 'react';
import { ApiError } from '../api/client';
import { deleteFile, FILE_STATUSES, filePagesQuery, filesKey, type StoredFile } from '../api/files';
import type { StorageBinding } from '../api/storage-bindings';
import { humanSize } from '../components/bytes';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';
import { FileDownload } from '../components/FileDownload';
import { FileUpload } from '../components/FileUpload';
import { ShowOlder } from '../components/ShowOlder';
import { Ago } from '../components/Ago';

const CLEANUP_WORDS: Record<StoredFile['cleanupRule'], string> = {
  ttl: 'deleted when it expires',
  persistent: 'kept until deleted',
};

/** The files of one binding, newest first, filtered by status; upload, download, delete. */
export function StorageFiles(props: {
  orgId: string;
  binding: StorageBinding;
  status: string;
  onStatus: (status: string) => void;
  /** Whether the user's role uploads and deletes files. */
  mayWrite: boolean;
}) {
  const { orgId, binding, status, mayWrite } = props;
  const queryClient = useQueryClient();
  const pages = useInfiniteQuery(filePagesQuery(orgId, { bindingId: binding.id, status: status || undefined }));
  const files = { data: pages.data?.pages.flatMap((p) => p.items), error: pages.error };
  const refresh = () => void queryClient.invalidateQueries({ queryKey: filesKey(orgId) });
  return (
    <section aria-labelledby="files-heading">
      <h2 id="files-heading">Files in {binding.name}</h2>
      {binding.backend === 's3' && (
        <p className="hint">
          Its files are in its own bucket. The dashboard sends files straight to a bucket only at the address of the
          coordinator&apos;s own storage, and only when the bucket&apos;s CORS rules allow this page; otherwise upload
          with the API or the drover command line.
        </p>
      )}
      {mayWrite && (
        <FileUpload
          orgId={orgId}
          bindingId={binding.id}
          title={`Upload a file to ${binding.name}`}
          onUploaded={refresh}
        />
      )}
      <form className="inline-form filters" aria-label="Filter files" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select value={status} onChange={(e) => props.onStatus(e.target.value)}>
            <option value="">any</option>
            {FILE_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s.replace('_', ' ')}
              </option>
            ))}
          </select>
        </label>
      </form>
      <ErrorMessage error={files.error} />
      {!files.data && !files.error && <p className="loading">Loading…</p>}
      {files.data && files.data.length === 0 && (
        <p>
          {status ? `No ${status.replace('_', ' ')} file in ${binding.name}.` : `${binding.name} holds no file yet.`}
        </p>
      )}
      {files.data && files.data.length > 0 && (
        <div className="table-scroll">
          <table className="files">
            <caption className="hint">Newest first, 200 at a time; the list refreshes every few seconds.</caption>
            <thead>
              <tr>
                <th scope="col">File</th>
                <th scope="col">Status</th>
                <th scope="col">Size</th>
                <th scope="col">Cleanup</th>
                <th scope="col">Expires</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {files.data.map((f) => (
                <FileRow key={f.id} orgId={orgId} file={f} onChange={refresh} mayWrite={mayWrite} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ShowOlder pages={pages} what="files" />
    </section>
  );
}

function FileRow(props: { orgId: string; file: StoredFile; onChange: () => void; mayWrite: boolean }) {
  const { orgId, file, onChange, mayWrite } = props;
  return (
    <tr aria-label={file.filename}>
      <th scope="row">
        {file.filename}
        <br />
        <code className="hint">{file.id}</code>
      </th>
      <td>
        <span className={`status status-file-${file.status}`}>{file.status.replace('_', ' ')}</span>
      </td>
      <td title={`${file.size} bytes`}>{file.size === 0 && file.status !== 'active' ? '—' : humanSize(file.size)}</td>
      <td>{CLEANUP_WORDS[file.cleanupRule]}</td>
      <td>
        {file.deletedAt ? (
          <span className="hint">deleted</span>
        ) : file.expiresAt ? (
          <Ago at={file.expiresAt} />
        ) : (
          'never'
        )}
      </td>
      <td>
        <Ago at={file.createdAt} />
      </td>
      <td>
        <div className="actions">
          {file.status === 'active' && (
            <FileDownload orgId={orgId} fileId={file.id} label={`Download ${file.filename}`} />
          )}
          {file.status !== 'deleted' && mayWrite && <DeleteFile orgId={orgId} file={file} onDeleted={onChange} />}
        </div>
      </td>
    </tr>
  );
}

function DeleteFile({ orgId, file, onDeleted }: { orgId: string; file: StoredFile; onDeleted: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const opener = useReturnFocus(confirming);
  const remove = useMutation({
    mutationFn: () => deleteFile(orgId, file.id),
    onSuccess: () => {
      setConfirming(false);
      onDeleted();
    },
  });
  if (!confirming) {
    return (
      <button type="button" ref={opener} onClick={() => setConfirming(true)} aria-label={`Delete ${file.filename}`}>
        Delete
      </button>
    );
  }
  const inUse = remove.error instanceof ApiError && remove.error.code === 'file_in_use';
  return (
    <Confirm label={`Delete ${file.filename}`} onCancel={() => setConfirming(false)}>
      <p>Delete {file.filename}? Its bytes are removed now, and its download links stop working.</p>
      <button type="button" className="danger" onClick={() => remove.mutate()} disabled={remove.isPending}>
        Delete file
      </button>
      <button type="button" onClick={() => setConfirming(false)}>
        Keep it
      </button>
      {inUse ? (
        <div role="alert" className="error">
          <p>
            This file is the artifact of a release that is not yanked: devices may still be updated with it, so it
            cannot be deleted. Yank the release first, then delete the file.
          </p>
        </div>
      ) : (
        <ErrorMessage error={remove.error} />
      )}
    </Confirm>
  );
}
