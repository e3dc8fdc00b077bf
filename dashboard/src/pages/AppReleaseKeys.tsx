import { useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type FormEvent } from 'react';
import { api, apiPath } from '../api/client';
import type { App } from '../api/ota';
import { FieldError, fieldErrors, FormError } from '../components/FieldErrors';

const FIELDS = ['releaseKeys', 'releaseKeyRotation'] as const;

/** The keys of a text area: one per line, blank lines left out. */
const keysOf = (text: string): string[] =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');

/**
 * An application's release keys (docs/ota.md, "Release keys"): the public keys one of which signs
 * every release, off the coordinator. The first ones are set here; after that they change only
 * through a rotation statement signed by a current key (`drover release rotate-keys`), pasted here.
 */
export function AppReleaseKeys({ orgId, app }: { orgId: string; app: App }) {
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState('');
  const queryClient = useQueryClient();
  const keys = app.releaseKeys;
  const field = keys === null ? 'releaseKeys' : 'releaseKeyRotation';
  const save = useMutation({
    mutationFn: () => {
      let body: Record<string, unknown>;
      if (keys === null) body = { releaseKeys: keysOf(text) };
      else {
        let rotation: unknown;
        try {
          rotation = JSON.parse(text);
        } catch {
          rotation = text; // the coordinator says what is wrong with it
        }
        body = { releaseKeyRotation: rotation };
      }
      return api<App>('PATCH', apiPath`/orgs/${orgId}/apps/${app.id}`, { body });
    },
    onSuccess: () => {
      setEditing(false);
      setText('');
      void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'apps'] });
    },
  });
  const errors = fieldErrors(save.error, FIELDS, 'body', 'keys');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  return (
    <section aria-labelledby="release-keys-heading" className="panel">
      <h2 id="release-keys-heading">Release keys</h2>
      {keys === null ? (
        <p>
          None: releases are not signed. With keys, every release must be signed off the coordinator by one of them, and
          devices install only what the keys signed.
        </p>
      ) : (
        <>
          <p>
            Every release must carry a signature by one of these keys (generation {app.releaseKeyGeneration}); devices
            pin them and refuse anything else.
          </p>
          <ul aria-label="Release keys">
            {keys.map((key) => (
              <li key={key}>
                <code>{key}</code>
              </li>
            ))}
          </ul>
        </>
      )}
      {editing ? (
        <form onSubmit={submit} noValidate aria-label="Release keys">
          <FormError error={save.error} errors={errors} />
          <div className="field wide">
            <label htmlFor={errors.props(field).id}>
              {keys === null ? 'Public keys, one per line' : 'Rotation statement (JSON)'}
            </label>
            <textarea
              {...errors.props(field)}
              rows={keys === null ? 3 : 8}
              value={text}
              onChange={(e) => {
                save.reset();
                setText(e.target.value);
              }}
              spellCheck={false}
            />
            <span className="hint">
              {keys === null ? (
                <>
                  <code>drover release keygen --out release.key</code> prints one; devices pin the keys they see first
                </>
              ) : (
                <>
                  made with <code>drover release rotate-keys</code>, signed by a current key
                </>
              )}
            </span>
            <FieldError errors={errors} field={field} idPrefix="keys" />
          </div>
          <button type="submit" disabled={save.isPending}>
            {keys === null ? 'Save keys' : 'Rotate keys'}
          </button>
          <button type="button" onClick={() => setEditing(false)}>
            Cancel
          </button>
        </form>
      ) : (
        <div className="actions">
          <button type="button" onClick={() => setEditing(true)}>
            {keys === null ? 'Set release keys' : 'Rotate release keys'}
          </button>
        </div>
      )}
    </section>
  );
}
