import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { filesKey, filesQuery, type StoredFile } from '../api/files';
import { humanSize } from './bytes';
import { FileUpload } from './FileUpload';
import { shortId } from '@drover/shared/short-id';

/**
 * The input of a workflow's `file` param: one of the organization's active files, newest first
 * (`GET /orgs/:orgId/files?status=active`), or a file uploaded on the spot, which is then chosen.
 * The value is the file's id ('' when none is chosen).
 */
export function FileParamPicker(props: {
  orgId: string;
  name: string;
  value: string;
  required?: boolean;
  inputProps: { id: string; 'aria-invalid'?: true; 'aria-describedby'?: string };
  onChange: (fileId: string) => void;
}) {
  const { orgId, name, value, required, inputProps, onChange } = props;
  const files = useQuery(filesQuery(orgId, { status: 'active' }));
  const [uploading, setUploading] = useState(false);
  const [uploaded, setUploaded] = useState<StoredFile | null>(null);
  const queryClient = useQueryClient();
  const listed = files.data ?? [];
  // A file just uploaded is shown before the list has been read again.
  const choices = uploaded && !listed.some((f) => f.id === uploaded.id) ? [uploaded, ...listed] : listed;
  return (
    <>
      <select {...inputProps} value={value} required={required} onChange={(e) => onChange(e.target.value)}>
        <option value="">{files.isPending ? 'reading the files…' : 'Choose a file…'}</option>
        {choices.map((f) => (
          <option key={f.id} value={f.id}>
            {f.filename} ({humanSize(f.size)}, {shortId(f.id)})
          </option>
        ))}
      </select>
      {files.error && <span className="field-error">The files cannot be listed: {files.error.message}</span>}
      {!files.isPending && !files.error && listed.length === 0 && (
        <span className="hint">The organization has no active file yet: upload one.</span>
      )}
      <button type="button" aria-expanded={uploading} onClick={() => setUploading((u) => !u)}>
        {uploading ? `Close the upload for ${name}` : `Upload a file for ${name}`}
      </button>
      {uploading && (
        <FileUpload
          embedded
          orgId={orgId}
          title={`Upload a file for ${name}`}
          onUploaded={(stored) => {
            setUploaded(stored);
            onChange(stored.id);
            void queryClient.invalidateQueries({ queryKey: filesKey(orgId) });
          }}
        />
      )}
    </>
  );
}
