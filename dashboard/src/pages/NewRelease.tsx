import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import type { RequestBody } from '@drover/shared/api';
import { useState, type FormEvent } from 'react';
import { api, ApiError, apiPath } from '../api/client';
import { artifactFilesQuery, byteSize, storageBindingsQuery, type App, type Release } from '../api/ota';
import { FieldError, fieldErrors, FormError, unreadableNumbers } from '../components/FieldErrors';
import { ChannelField } from '../components/ChannelField';
import { FileUpload } from '../components/FileUpload';
import { shortId } from '@drover/shared/short-id';

const FIELDS = ['version', 'artifactFileId', 'channel', 'updatePolicy', 'notes', 'sequence', 'signature'] as const;

/**
 * A new release (a draft) from an artifact: a file uploaded here (stored as a persistent file of
 * the organization, with the upload's progress bar and cancel), then chosen among the stored
 * files, or one already stored, active and persistent.
 */
export function NewRelease({ orgId, app }: { orgId: string; app: App }) {
  const [version, setVersion] = useState('');
  const [channel, setChannel] = useState('');
  const [policy, setPolicy] = useState<'optional' | 'mandatory'>('optional');
  const [notes, setNotes] = useState('');
  const [sequence, setSequence] = useState('');
  const [signature, setSignature] = useState('');
  const signed = app.releaseKeys !== null;
  const [source, setSource] = useState<'upload' | 'stored'>('upload');
  const [fileId, setFileId] = useState('');
  const [bindingId, setBindingId] = useState('');
  const files = useQuery({ ...artifactFilesQuery(orgId), enabled: source === 'stored' });
  const bindings = useQuery(storageBindingsQuery(orgId));
  const usable = bindings.data ?? [];
  const chosenBinding = bindingId || usable.find((b) => b.isDefault)?.id || usable[0]?.id;
  const queryClient = useQueryClient();
  const create = useMutation({
    mutationFn: async (unreadable: ApiError | null) => {
      // A sequence the browser cannot read would be sent as none: refused as missing, not as typed.
      if (unreadable) throw unreadable;
      if (source === 'upload' || fileId === '') {
        const message =
          source === 'upload' ? 'upload the file first (Upload), or use a stored file' : 'choose a stored file';
        throw new ApiError(422, 'validation_failed', message, [{ path: 'body.artifactFileId', message }]);
      }
      const body: RequestBody<'createRelease'> = { version, artifactFileId: fileId, updatePolicy: policy };
      if (channel.trim() !== '') body.channel = channel.trim();
      if (notes.trim() !== '') body.notes = notes;
      // An application with release keys: the sequence and signature made by `drover release sign`.
      if (sequence.trim() !== '') body.sequence = Number(sequence);
      if (signature.trim() !== '') body.signature = signature.trim();
      return api<Release>('POST', apiPath`/orgs/${orgId}/apps/${app.id}/releases`, { body });
    },
    onSuccess: () => {
      setVersion('');
      setNotes('');
      setSequence('');
      setSignature('');
      setFileId('');
      setSource('upload');
    },
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'apps', app.id, 'releases'] });
      void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'files'] });
    },
  });
  const errors = fieldErrors(create.error, FIELDS, 'body', 'rel');
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    create.mutate(unreadableNumbers(event.currentTarget, 'body', 'rel'));
  };
  return (
    <form className="panel" onSubmit={submit} noValidate aria-labelledby="new-release-heading">
      <h2 id="new-release-heading">New release</h2>
      <p className="hint">A release starts as a draft: no device gets it until it is published.</p>
      <FormError error={create.error} errors={errors} />
      <div className="form-grid">
        <div className="field">
          <label htmlFor={errors.props('version').id}>Version</label>
          <input {...errors.props('version')} value={version} onChange={(e) => setVersion(e.target.value)} />
          <span className="hint">a label such as 1.4.0; releases are ordered by their sequence, not by it</span>
          <FieldError errors={errors} field="version" idPrefix="rel" />
        </div>
        <ChannelField
          value={channel}
          onChange={setChannel}
          defaultChannel={app.defaultChannel}
          errors={errors}
          idPrefix="rel"
        />
        <div className="field">
          <label htmlFor={errors.props('updatePolicy').id}>Update policy</label>
          <select
            {...errors.props('updatePolicy')}
            value={policy}
            onChange={(e) => setPolicy(e.target.value as 'optional' | 'mandatory')}
          >
            <option value="optional">optional: a device may postpone it</option>
            <option value="mandatory">mandatory: devices below it must install it</option>
          </select>
          <FieldError errors={errors} field="updatePolicy" idPrefix="rel" />
        </div>
        <fieldset className="field wide">
          <legend>Artifact</legend>
          <label className="check">
            <input
              type="radio"
              name="artifact-source"
              checked={source === 'upload'}
              onChange={() => setSource('upload')}
            />
            Upload a file
          </label>
          <label className="check">
            <input
              type="radio"
              name="artifact-source"
              checked={source === 'stored'}
              onChange={() => setSource('stored')}
            />
            Use a stored file (active, persistent)
          </label>
          {source === 'upload' ? (
            <>
              <span className="hint">
                stored as a persistent file of the organization, then chosen as the release&apos;s artifact
              </span>
              {usable.length > 1 && (
                <>
                  <label htmlFor="rel-bindingId">Storage binding</label>
                  <select id="rel-bindingId" value={chosenBinding} onChange={(e) => setBindingId(e.target.value)}>
                    {usable.map((b) => (
                      <option key={b.id} value={b.id}>
                        {b.name}
                        {b.isDefault ? ' (default)' : ''}
                      </option>
                    ))}
                  </select>
                </>
              )}
              <FileUpload
                embedded
                orgId={orgId}
                bindingId={chosenBinding}
                cleanupRule="persistent"
                title="Upload the artifact"
                fileLabel="File to upload"
                onUploaded={(stored) => {
                  // Stored now: the release points at it (and a refused release keeps it chosen).
                  setFileId(stored.id);
                  setSource('stored');
                  void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'files'] });
                }}
              />
            </>
          ) : (
            <>
              <label htmlFor={errors.props('artifactFileId').id}>Stored file</label>
              <select {...errors.props('artifactFileId')} value={fileId} onChange={(e) => setFileId(e.target.value)}>
                <option value="">Choose a file…</option>
                {(files.data ?? []).map((f) => (
                  <option key={f.id} value={f.id}>
                    {f.filename} ({byteSize(f.size)}, {shortId(f.id)})
                  </option>
                ))}
              </select>
              {files.error && (
                <span className="field-error">The stored files cannot be listed: {files.error.message}</span>
              )}
            </>
          )}
          <FieldError errors={errors} field="artifactFileId" idPrefix="rel" />
        </fieldset>
        {signed && (
          <>
            <div className="field">
              <label htmlFor={errors.props('sequence').id}>Sequence</label>
              <input
                {...errors.props('sequence')}
                type="number"
                min={1}
                step={1}
                value={sequence}
                onChange={(e) => setSequence(e.target.value)}
              />
              <span className="hint">the sequence the release was signed with, above every release</span>
              <FieldError errors={errors} field="sequence" idPrefix="rel" />
            </div>
            <div className="field">
              <label htmlFor={errors.props('signature').id}>Signature</label>
              <input
                {...errors.props('signature')}
                value={signature}
                onChange={(e) => setSignature(e.target.value)}
                autoComplete="off"
                spellCheck={false}
              />
              <span className="hint">
                by a release key, made off the coordinator: <code>drover release sign</code>
              </span>
              <FieldError errors={errors} field="signature" idPrefix="rel" />
            </div>
          </>
        )}
        <div className="field wide">
          <label htmlFor={errors.props('notes').id}>Notes</label>
          <textarea {...errors.props('notes')} rows={2} value={notes} onChange={(e) => setNotes(e.target.value)} />
          <FieldError errors={errors} field="notes" idPrefix="rel" />
        </div>
      </div>
      <button type="submit" disabled={create.isPending}>
        Create release
      </button>
    </form>
  );
}
