import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fastifyStatic from '@fastify/static';
import { AppError } from '../../../errors.js';
import { prefersHtml } from './accepts-html.js';
import type { DashboardBuild } from './dashboard-build.js';
import { setPageHeaders } from './page-headers.js';

/**
 * The addresses of the dashboard's pages (its client-side routes, dashboard/src/router.tsx),
 * each answered with index.html. None is under /v1, /api or /docs: the API keeps its paths.
 */
export const DASHBOARD_PAGE_PATHS = [
  '/',
  '/login',
  '/account',
  '/device',
  '/orgs/:orgId',
  '/orgs/:orgId/*',
  '/chat/:provider/finish',
] as const;

/** Hashed file names (Vite's build): an asset never changes under its name. */
const ASSET_MAX_AGE_SECONDS = 365 * 24 * 3600;
/** The compressed copies of the build's files, sent in their place (`preCompressed`). */
const PRECOMPRESSED = ['**/*.br', '**/*.gz'];

const notBuilt = () =>
  new AppError('not_found', 'The dashboard is not built on this coordinator: run `pnpm build` and restart it');

/** Answers index.html: the page the dashboard's router then draws for the address. */
export function sendDashboardPage(build: DashboardBuild, reply: FastifyReply): FastifyReply {
  const html = build.indexHtml;
  if (!html) throw notBuilt();
  setPageHeaders(reply);
  // Revalidated each time: a new build's index.html names its new assets.
  return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(html);
}

/**
 * The `onRequest` hook that gives a browser opening an API address of a page (the `statusUrl`
 * `/api/jobs/:id`) the dashboard instead of the JSON, before any session is asked for: the
 * dashboard signs the user in and reads the JSON itself. Clients asking for JSON are untouched.
 */
export function dashboardForBrowsers(build: DashboardBuild) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    if (!prefersHtml(request) || !build.built) return undefined;
    return sendDashboardPage(build, reply); // answered: the session hook and the route do not run
  };
}

const HIDDEN = { hide: true } as const;

/** The dashboard: its pages and its static assets, served from the coordinator's own origin. */
export function dashboardRoutes(build: DashboardBuild) {
  return async (app: FastifyInstance): Promise<void> => {
    app.addHook('onSend', async (_request, reply) => {
      setPageHeaders(reply);
    });
    for (const url of DASHBOARD_PAGE_PATHS) {
      app.get(url, { schema: HIDDEN }, async (_request, reply) => sendDashboardPage(build, reply));
    }
    if (!build.built) {
      app.get('/assets/*', { schema: HIDDEN }, async () => {
        throw notBuilt();
      });
      return;
    }
    await app.register(fastifyStatic, {
      root: build.assetsDir,
      prefix: '/assets/',
      schemaHide: true,
      decorateReply: false,
      // One route per file found at start (hashed names): an unknown asset is a plain 404. The
      // build's compressed copies are no addresses of their own.
      wildcard: false,
      globIgnore: PRECOMPRESSED,
      index: false,
      list: false,
      dotfiles: 'deny',
      immutable: true,
      maxAge: ASSET_MAX_AGE_SECONDS * 1000,
      // The build writes file.br and file.gz beside each file (dashboard/precompress.ts): the
      // copy the request's Accept-Encoding prefers is sent, with Content-Encoding and Vary.
      preCompressed: true,
    });
    // The build's files beside index.html (dashboard/public: /favicon.ico, which browsers and
    // other clients ask for on their own): names without a hash, so revalidated each time.
    await app.register(fastifyStatic, {
      root: build.dir,
      prefix: '/',
      schemaHide: true,
      decorateReply: false,
      wildcard: false,
      globIgnore: ['assets/**', 'index.html', ...PRECOMPRESSED],
      index: false,
      list: false,
      dotfiles: 'deny',
      cacheControl: false,
      setHeaders: (reply) => void reply.header('cache-control', 'no-cache'),
    });
  };
}
