import { useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type FormEvent } from 'react';
import { ApiError } from '../api/client';
import { bindingsQuery, createBinding, type NewBinding } from '../api/storage-bindings';
import { FieldError, fieldErrors, FormError } from '../components/FieldErrors';

const FIELDS = ['name', 'backend', 'endpoint', 'bucket', 'region', 'accessKeyId', 'secretAccessKey', 'forcePathStyle'];
const ID = 'binding';

interface Draft {
  name: string;
  backend: 'local' | 's3';
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: boolean;
}

const EMPTY: Draft = {
  name: '',
  backend: 'local',
  endpoint: '',
  bucket: '',
  region: '',
  accessKeyId: '',
  secretAccessKey: '',
  forcePathStyle: false,
};

const toBody = (d: Draft): NewBinding =>
  d.backend === 'local'
    ? { name: d.name, backend: 'local' }
    : // A setting left empty is not sent: the coordinator then says it is required.
      (Object.fromEntries(
        Object.entries({
          name: d.name,
          backend: 's3',
          endpoint: d.endpoint,
          bucket: d.bucket,
          region: d.region,
          accessKeyId: d.accessKeyId,
          secretAccessKey: d.secretAccessKey,
          forcePathStyle: d.forcePathStyle || undefined,
        }).filter(([key, value]) => key === 'name' || (value !== '' && value !== undefined)),
      ) as NewBinding);

/**
 * The API's 409 `conflict` for a new binding (a name the organization has already) as a refusal of
 * its name, said at the field as the other fields' refusals are; anything else as it came.
 */
function atName(error: unknown): unknown {
  if (!(error instanceof ApiError) || error.statusCode !== 409 || error.code !== 'conflict') return error;
  return new ApiError(error.statusCode, error.code, error.message, [{ path: 'body.name', message: error.message }]);
}

/** An owner creates a binding: local (no settings) or s3 with its endpoint, bucket, region and keys. */
export function NewBindingForm({ orgId }: { orgId: string }) {
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const queryClient = useQueryClient();
  const create = useMutation({
    mutationFn: async () => {
      try {
        return await createBinding(orgId, toBody(draft));
      } catch (error) {
        throw atName(error);
      }
    },
    onSuccess: () => {
      setDraft(EMPTY);
      void queryClient.invalidateQueries({ queryKey: bindingsQuery(orgId).queryKey });
    },
  });
  const errors = fieldErrors(create.error, FIELDS, 'body', ID);
  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => setDraft((d) => ({ ...d, [key]: value }));
  const text = (key: 'endpoint' | 'bucket' | 'region' | 'accessKeyId', label: string, hint?: string) => (
    <label>
      {label}
      <input {...errors.props(key)} value={draft[key]} onChange={(e) => set(key, e.target.value)} />
      {hint && <span className="hint">{hint}</span>}
      <FieldError errors={errors} field={key} idPrefix={ID} />
    </label>
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <form className="panel" onSubmit={submit} noValidate aria-labelledby="new-binding-heading">
      <h2 id="new-binding-heading">New storage binding</h2>
      <div className="form-grid">
        <label>
          Name
          <input {...errors.props('name')} value={draft.name} onChange={(e) => set('name', e.target.value)} />
          <FieldError errors={errors} field="name" idPrefix={ID} />
        </label>
        <label>
          Backend
          <select
            {...errors.props('backend')}
            value={draft.backend}
            onChange={(e) => set('backend', e.target.value as Draft['backend'])}
          >
            <option value="local">local (the coordinator&apos;s own storage)</option>
            <option value="s3">s3 (an S3-compatible bucket)</option>
          </select>
          <FieldError errors={errors} field="backend" idPrefix={ID} />
        </label>
        {draft.backend === 's3' && (
          <>
            {text('endpoint', 'Endpoint', 'https://s3.eu-west-1.amazonaws.com')}
            {text('bucket', 'Bucket')}
            {text('region', 'Region')}
            {text('accessKeyId', 'Access key id')}
            <label>
              Secret access key
              <input
                {...errors.props('secretAccessKey')}
                type="password"
                autoComplete="off"
                value={draft.secretAccessKey}
                onChange={(e) => set('secretAccessKey', e.target.value)}
              />
              <span className="hint">stored, never shown again</span>
              <FieldError errors={errors} field="secretAccessKey" idPrefix={ID} />
            </label>
            <label className="check">
              <input
                type="checkbox"
                checked={draft.forcePathStyle}
                onChange={(e) => set('forcePathStyle', e.target.checked)}
              />
              Path-style addresses (MinIO and most S3-compatible stores)
            </label>
          </>
        )}
      </div>
      {draft.backend === 's3' && (
        <p className="hint">This version keeps s3 bindings but cannot store files in them yet.</p>
      )}
      <FormError error={create.error} errors={errors} />
      <p role="status" className="hint">
        {create.data && `Created the binding ${create.data.name}.`}
      </p>
      <div className="form-actions">
        <button type="submit" disabled={create.isPending}>
          Create binding
        </button>
      </div>
    </form>
  );
}
