import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (pkg: string) => fileURLToPath(new URL(`./${pkg}/src/index.ts`, import.meta.url));

export default defineConfig({
  resolve: {
    alias: {
      // A subpath before its package, which would match it too: the dashboard's modules tests import.
      '@drover/shared/labels': fileURLToPath(new URL('./shared/src/labels.ts', import.meta.url)),
      '@drover/shared/roles': fileURLToPath(new URL('./shared/src/roles.ts', import.meta.url)),
      '@drover/shared/percent-words': fileURLToPath(new URL('./shared/src/percent-words.ts', import.meta.url)),
      '@drover/shared/counted': fileURLToPath(new URL('./shared/src/counted.ts', import.meta.url)),
      '@drover/shared/job-messages': fileURLToPath(new URL('./shared/src/job-messages.ts', import.meta.url)),
      '@drover/shared': src('shared'),
      '@drover/coordinator': src('coordinator'),
      // A subpath before its package, which would match it too.
      '@drover/agent/client': fileURLToPath(new URL('./agent/src/client.ts', import.meta.url)),
      '@drover/agent': src('agent'),
    },
  },
  test: {
    include: [
      'shared/test/**/*.test.ts',
      'coordinator/test/**/*.test.ts',
      'agent/test/**/*.test.ts',
      'cli/test/**/*.test.ts',
      'test/e2e/**/*.test.ts',
      'test/browser/**/*.test.ts',
    ],
    // The packages' JavaScript, for the commands the tests start as child processes (`tsc -b`); the
    // dashboard's build, for the tests that open it (made when missing or stale); one PostgreSQL
    // server for the run, started in the background (coordinator/test/postgres/).
    globalSetup: [
      'test/helpers/built-commands.ts',
      'test/helpers/dashboard-build.ts',
      'coordinator/test/postgres/global-setup.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // `expect.poll` waits for something a browser or a child process does next: its default of one
    // second was outlived by a Chromium redrawing a page on a loaded 2-core machine (the Jobs
    // filters after Back, once in a CI run). A poll that passes returns as soon as it holds.
    expect: { poll: { timeout: 5_000 } },
    pool: 'forks',
    // Each worker imports the coordinator, the agent and their libraries once, not once per file:
    // with a fresh module graph per file importing took a fifth of a pass (217 of 1,080 s on 2
    // cores; 22 s without). Test files share a worker's modules, so they leave no global state
    // behind (environment variables, spies and fake timers are restored where they are set) and
    // mock no module (`vi.mock`): dependencies are injected instead (the outbox's `writeFile`).
    isolate: false,
    // Most end-to-end files wait on timers, sockets and child processes more than they compute:
    // two files at once shorten a pass by about a third on a 2-core machine, where Vitest's
    // default is one.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
