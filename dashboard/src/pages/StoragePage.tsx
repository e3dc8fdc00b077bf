import { Confirm, useReturnFocus } from '../components/Confirm';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { filesKey } from '../api/files';
import { bindingsQuery, deleteBinding, type StorageBinding } from '../api/storage-bindings';
import { ErrorMessage, plainWords } from '../components/ErrorMessage';
import { dateTime } from '../components/time';
import { NewBindingForm } from './NewBindingForm';
import { NotFoundPage } from './NotFoundPage';
import { StorageFiles } from './StorageFiles';
import { allows, useOrg } from './use-org';

/**
 * The organization's storage: its bindings (owners create and delete them) and the files of the
 * binding chosen in the address (`?binding=<id>`, the default binding otherwise).
 */
export function StoragePage() {
  const { orgId, org, loaded } = useOrg();
  const [search, setSearch] = useSearchParams();
  const bindings = useQuery(bindingsQuery(orgId));
  if (loaded && !org) return <NotFoundPage />;
  const mayManage = allows(org, 'storage.bindings');
  const list = bindings.data ?? [];
  const selected = list.find((b) => b.id === search.get('binding')) ?? list.find((b) => b.isDefault) ?? list[0];
  const status = search.get('status') ?? '';
  const show = (bindingId: string, nextStatus: string) => {
    const params = new URLSearchParams({ binding: bindingId });
    if (nextStatus) params.set('status', nextStatus);
    setSearch(params);
  };
  return (
    <section aria-labelledby="storage-heading">
      <h1 id="storage-heading">Storage</h1>
      <p className="hint">
        Files are kept in storage bindings. Jobs&apos; output files go to the default binding; API tokens with a storage
        grant and every member of the organization can use the files.
      </p>
      <ErrorMessage error={bindings.error} />
      {!bindings.data && !bindings.error && <p className="loading">Loading…</p>}
      {list.length > 0 && (
        <div className="table-scroll">
          <table className="storage-bindings">
            <caption>Storage bindings</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Backend</th>
                <th scope="col">Default</th>
                <th scope="col">Created</th>
                {mayManage && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {list.map((b) => (
                <tr key={b.id} aria-label={b.name}>
                  <th scope="row">
                    <Link
                      to={`?binding=${b.id}`}
                      aria-current={b.id === selected?.id ? 'true' : undefined}
                      aria-label={`Files of ${b.name}`}
                    >
                      {b.name}
                    </Link>
                  </th>
                  <td>{b.backend}</td>
                  <td>{b.isDefault ? 'default' : ''}</td>
                  <td>
                    <time dateTime={b.createdAt}>{dateTime(b.createdAt)}</time>
                  </td>
                  {mayManage && <td>{!b.isDefault && <DeleteBinding orgId={orgId} binding={b} />}</td>}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {selected && (
        <StorageFiles
          key={selected.id}
          orgId={orgId}
          binding={selected}
          status={status}
          onStatus={(next) => show(selected.id, next)}
          mayWrite={allows(org, 'files.write')}
        />
      )}
      {mayManage && <NewBindingForm orgId={orgId} />}
    </section>
  );
}

/** Delete a binding (owner), after a confirmation; the API's refusals (it holds files) in words. */
function DeleteBinding({ orgId, binding }: { orgId: string; binding: StorageBinding }) {
  const [confirming, setConfirming] = useState(false);
  const opener = useReturnFocus(confirming);
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: () => deleteBinding(orgId, binding.id),
    onSuccess: () => {
      setConfirming(false);
      void queryClient.invalidateQueries({ queryKey: bindingsQuery(orgId).queryKey });
      void queryClient.invalidateQueries({ queryKey: filesKey(orgId) });
    },
  });
  if (!confirming) {
    return (
      <button type="button" ref={opener} onClick={() => setConfirming(true)} aria-label={`Delete ${binding.name}`}>
        Delete
      </button>
    );
  }
  return (
    <Confirm label={`Delete ${binding.name}`} onCancel={() => setConfirming(false)}>
      <p>
        Delete the binding {binding.name}? Only a binding without files can be deleted; API tokens whose grant names it
        can no longer use it.
      </p>
      <button type="button" className="danger" onClick={() => remove.mutate()} disabled={remove.isPending}>
        Delete binding
      </button>
      <button type="button" onClick={() => setConfirming(false)}>
        Keep it
      </button>
      {remove.error && (
        <div role="alert" className="error">
          <p>The binding was not deleted: {plainWords(remove.error)}</p>
        </div>
      )}
    </Confirm>
  );
}
