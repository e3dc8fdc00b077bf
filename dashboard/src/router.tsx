import { createBrowserRouter } from 'react-router';
import { AccountPage } from './pages/AccountPage';
import { AgentPage } from './pages/AgentPage';
import { AgentsPage } from './pages/AgentsPage';
import { ApiTokensPage } from './pages/ApiTokensPage';
import { AppPage } from './pages/AppPage';
import { AppsPage } from './pages/AppsPage';
import { AuditPage } from './pages/AuditPage';
import { BatchesPage } from './pages/BatchesPage';
import { BatchPage } from './pages/BatchPage';
import { ChatConnectFinishPage } from './pages/ChatConnectFinishPage';
import { DeviceSignInPage } from './pages/DeviceSignInPage';
import { HomePage } from './pages/HomePage';
import { IntegrationsPage } from './pages/IntegrationsPage';
import { JobPage } from './pages/JobPage';
import { JobsPage } from './pages/JobsPage';
import { MembersPage } from './pages/MembersPage';
import { NotFoundPage } from './pages/NotFoundPage';
import { OrgRedirect } from './pages/OrgRedirect';
import { SettingsPage } from './pages/SettingsPage';
import { Shell } from './pages/Shell';
import { SignInPage } from './pages/SignInPage';
import { StoragePage } from './pages/StoragePage';
import { TriggerFormPage } from './pages/TriggerFormPage';
import { TriggerPage } from './pages/TriggerPage';
import { TriggersPage } from './pages/TriggersPage';

/**
 * The dashboard's addresses. The coordinator answers each of these paths with index.html
 * (DASHBOARD_PAGE_PATHS in coordinator/src/http/routes/dashboard/index.ts); keep the two in step.
 */
export function createAppRouter() {
  return createBrowserRouter([
    { path: '/login', element: <SignInPage /> },
    {
      element: <Shell />,
      children: [
        { path: '/', element: <OrgRedirect /> },
        { path: '/account', element: <AccountPage /> },
        { path: '/device', element: <DeviceSignInPage /> },
        { path: '/orgs/:orgId', element: <HomePage /> },
        { path: '/orgs/:orgId/agents', element: <AgentsPage /> },
        { path: '/orgs/:orgId/agents/:agentId', element: <AgentPage /> },
        { path: '/orgs/:orgId/triggers', element: <TriggersPage /> },
        { path: '/orgs/:orgId/triggers/new', element: <TriggerFormPage /> },
        { path: '/orgs/:orgId/triggers/:triggerId', element: <TriggerPage /> },
        { path: '/orgs/:orgId/triggers/:triggerId/edit', element: <TriggerFormPage /> },
        { path: '/orgs/:orgId/jobs', element: <JobsPage /> },
        { path: '/orgs/:orgId/batches', element: <BatchesPage /> },
        { path: '/orgs/:orgId/apps', element: <AppsPage /> },
        { path: '/orgs/:orgId/apps/:appId', element: <AppPage /> },
        { path: '/orgs/:orgId/storage', element: <StoragePage /> },
        { path: '/orgs/:orgId/integrations', element: <IntegrationsPage /> },
        { path: '/orgs/:orgId/api-tokens', element: <ApiTokensPage /> },
        { path: '/orgs/:orgId/members', element: <MembersPage /> },
        { path: '/orgs/:orgId/audit', element: <AuditPage /> },
        { path: '/orgs/:orgId/settings', element: <SettingsPage /> },
        { path: '/api/jobs/:jobId', element: <JobPage /> },
        { path: '/api/batches/:batchId', element: <BatchPage /> },
        { path: '/chat/:provider/finish', element: <ChatConnectFinishPage /> },
        { path: '*', element: <NotFoundPage /> },
      ],
    },
  ]);
}
