import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { api, apiPath } from '../api/client';
import { appsQuery, type App } from '../api/ota';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';
import { FieldError, fieldErrors, FormError } from '../components/FieldErrors';
import { dateTime } from '../components/time';
import { NotFoundPage } from './NotFoundPage';
import { allows, useOrg } from './use-org';

const APP_FIELDS = ['slug', 'updateWorkflowName', 'defaultChannel'] as const;

/** The organization's OTA applications: list, create, change, delete (owners). */
export function AppsPage() {
  const { orgId, org, loaded } = useOrg();
  const apps = useQuery(appsQuery(orgId));
  if (loaded && !org) return <NotFoundPage />;
  const mayManage = allows(org, 'apps.delete');
  const mayEdit = allows(org, 'apps.edit');
  return (
    <section aria-labelledby="apps-heading">
      <h1 id="apps-heading">Updates</h1>
      <p className="hint">
        An application has releases (a version and its artifact file, on a channel) and devices: agents bound to it. The
        coordinator tells each device which release to run and the device installs it with the application&apos;s update
        workflow.
      </p>
      <ErrorMessage error={apps.error} />
      {apps.data && apps.data.length === 0 && <p>No application yet. Create one below, then bind agents to it.</p>}
      {apps.data && apps.data.length > 0 && (
        <div className="table-scroll">
          <table className="ota">
            <thead>
              <tr>
                <th scope="col">Application</th>
                <th scope="col">Update workflow</th>
                <th scope="col">Default channel</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {apps.data.map((app) => (
                <AppRow key={app.id} orgId={orgId} app={app} mayManage={mayManage} mayEdit={mayEdit} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!apps.data && !apps.error && <p className="loading">Loading…</p>}
      {mayEdit && <NewApp orgId={orgId} />}
    </section>
  );
}

function AppRow(props: { orgId: string; app: App; mayManage: boolean; mayEdit: boolean }) {
  const { orgId, app, mayManage, mayEdit } = props;
  const [mode, setMode] = useState<'idle' | 'edit' | 'delete'>('idle');
  const editButton = useReturnFocus(mode === 'edit');
  const deleteButton = useReturnFocus(mode === 'delete');
  return (
    <tr aria-label={app.slug}>
      <th scope="row">
        <Link to={`/orgs/${orgId}/apps/${app.id}`}>{app.slug}</Link>
      </th>
      <td>
        <code>{app.updateWorkflowName}</code>
      </td>
      <td>{app.defaultChannel}</td>
      <td>{dateTime(app.createdAt)}</td>
      <td>
        {mode === 'edit' && <EditApp orgId={orgId} app={app} onDone={() => setMode('idle')} />}
        {mode === 'delete' && <DeleteApp orgId={orgId} app={app} onDone={() => setMode('idle')} />}
        {mode === 'idle' && (
          <div className="actions">
            <button
              type="button"
              ref={editButton}
              onClick={() => setMode('edit')}
              aria-label={`Edit ${app.slug}`}
              disabled={!mayEdit}
            >
              Edit
            </button>
            {mayManage && (
              <button
                type="button"
                ref={deleteButton}
                onClick={() => setMode('delete')}
                aria-label={`Delete ${app.slug}`}
              >
                Delete
              </button>
            )}
          </div>
        )}
      </td>
    </tr>
  );
}

function NewApp({ orgId }: { orgId: string }) {
  const [slug, setSlug] = useState('');
  const [workflow, setWorkflow] = useState('');
  const [channel, setChannel] = useState('');
  const queryClient = useQueryClient();
  const create = useMutation({
    mutationFn: () => {
      const body: Record<string, string> = { slug, updateWorkflowName: workflow };
      if (channel.trim() !== '') body.defaultChannel = channel.trim();
      return api<App>('POST', apiPath`/orgs/${orgId}/apps`, { body });
    },
    onSuccess: () => {
      setSlug('');
      setWorkflow('');
      setChannel('');
      void queryClient.invalidateQueries({ queryKey: appsQuery(orgId).queryKey });
    },
  });
  const errors = fieldErrors(create.error, APP_FIELDS, 'body', 'app');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <form className="panel" onSubmit={submit} noValidate aria-labelledby="new-app-heading">
      <h2 id="new-app-heading">New application</h2>
      <FormError error={create.error} errors={errors} />
      <div className="form-grid">
        <div className="field">
          <label htmlFor={errors.props('slug').id}>Slug</label>
          <input {...errors.props('slug')} value={slug} onChange={(e) => setSlug(e.target.value)} />
          <span className="hint">lower-case letters, digits and dashes; it cannot be changed</span>
          <FieldError errors={errors} field="slug" idPrefix="app" />
        </div>
        <div className="field">
          <label htmlFor={errors.props('updateWorkflowName').id}>Update workflow</label>
          <input
            {...errors.props('updateWorkflowName')}
            value={workflow}
            onChange={(e) => setWorkflow(e.target.value)}
          />
          <span className="hint">the workflow that installs a release on the device</span>
          <FieldError errors={errors} field="updateWorkflowName" idPrefix="app" />
        </div>
        <div className="field">
          <label htmlFor={errors.props('defaultChannel').id}>Default channel</label>
          <input
            {...errors.props('defaultChannel')}
            value={channel}
            onChange={(e) => setChannel(e.target.value)}
            placeholder="stable"
          />
          <span className="hint">empty: stable</span>
          <FieldError errors={errors} field="defaultChannel" idPrefix="app" />
        </div>
      </div>
      <button type="submit" disabled={create.isPending}>
        Create application
      </button>
    </form>
  );
}

function EditApp({ orgId, app, onDone }: { orgId: string; app: App; onDone: () => void }) {
  const [workflow, setWorkflow] = useState(app.updateWorkflowName);
  const [channel, setChannel] = useState(app.defaultChannel);
  const queryClient = useQueryClient();
  const save = useMutation({
    mutationFn: () =>
      api<App>('PATCH', apiPath`/orgs/${orgId}/apps/${app.id}`, {
        body: { updateWorkflowName: workflow, defaultChannel: channel },
      }),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: appsQuery(orgId).queryKey });
      onDone();
    },
  });
  const idPrefix = `edit-${app.id.slice(0, 8)}`;
  const errors = fieldErrors(save.error, APP_FIELDS, 'body', idPrefix);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  return (
    <Confirm onSubmit={submit} onCancel={onDone} noValidate className="inline-form">
      <FormError error={save.error} errors={errors} />
      <div className="field">
        <label htmlFor={errors.props('updateWorkflowName').id}>Update workflow of {app.slug}</label>
        <input {...errors.props('updateWorkflowName')} value={workflow} onChange={(e) => setWorkflow(e.target.value)} />
        <FieldError errors={errors} field="updateWorkflowName" idPrefix={idPrefix} />
      </div>
      <div className="field">
        <label htmlFor={errors.props('defaultChannel').id}>Default channel of {app.slug}</label>
        <input {...errors.props('defaultChannel')} value={channel} onChange={(e) => setChannel(e.target.value)} />
        <FieldError errors={errors} field="defaultChannel" idPrefix={idPrefix} />
      </div>
      <button type="submit" disabled={save.isPending}>
        Save
      </button>
      <button type="button" onClick={onDone}>
        Cancel
      </button>
    </Confirm>
  );
}

function DeleteApp({ orgId, app, onDone }: { orgId: string; app: App; onDone: () => void }) {
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: () => api<void>('DELETE', apiPath`/orgs/${orgId}/apps/${app.id}`),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: appsQuery(orgId).queryKey });
      onDone();
    },
  });
  return (
    <Confirm label={`Delete ${app.slug}`} onCancel={onDone}>
      <p>
        Delete {app.slug}? Its releases and device bindings are deleted, update jobs not yet taken by a device are
        cancelled, and the artifact files are no longer in use. Devices keep what they installed.
      </p>
      <button type="button" className="danger" onClick={() => remove.mutate()} disabled={remove.isPending}>
        Delete application
      </button>
      <button type="button" onClick={onDone}>
        Keep it
      </button>
      <ErrorMessage error={remove.error} />
    </Confirm>
  );
}
