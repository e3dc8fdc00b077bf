import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { HeaviestFirst } from './test/helpers/heaviest-first.js';

const src = (pkg: string) => fileURLToPath(new URL(`./${pkg}/src/index.ts`, import.meta.url));

const alias = {
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
};

/** How every test file runs, in either group of the pass below and in the PostgreSQL pass. */
export const fileOptions = {
  testTimeout: 30_000,
  hookTimeout: 30_000,
  // `expect.poll` waits for something a browser or a child process does next: its default of one
  // second was outlived by a Chromium redrawing a page on a loaded 2-core machine (the Jobs
  // filters after Back, once in a CI run). A poll that passes returns as soon as it holds.
  expect: { poll: { timeout: 5_000 } },
  pool: 'forks' as const,
  // Each worker imports the coordinator, the agent and their libraries once, not once per file:
  // with a fresh module graph per file importing took a fifth of a pass (217 of 1,080 s on 2
  // cores; 22 s without). Test files share a worker's modules, so they leave no global state
  // behind (environment variables, spies and fake timers are restored where they are set) and
  // mock no module (`vi.mock`): dependencies are injected instead (the outbox's `writeFile`).
  isolate: false,
};

export default defineConfig({
  resolve: { alias },
  test: {
    // The packages' JavaScript, for the commands the tests start as child processes (`tsc -b`); the
    // dashboard's build, for the tests that open it (made when missing or stale); one PostgreSQL
    // server for the run, started in the background (coordinator/test/postgres/). Once for the run:
    // the projects below do not inherit them.
    globalSetup: [
      'test/helpers/built-commands.ts',
      'test/helpers/dashboard-build.ts',
      'coordinator/test/postgres/global-setup.ts',
    ],
    ...fileOptions,
    // Two files at once where no project says otherwise (the PostgreSQL pass: its server shares
    // the cores, and three at a time took as long, 228 s against 232).
    maxWorkers: 2,
    reporters: ['default'],
    // The longest files first, whether or not Vitest has run here before (test/helpers/heaviest-first.ts).
    sequence: { sequencer: HeaviestFirst },
    // Two groups, one after the other, each with the number of files at once that keeps 2 cores
    // busy: the end-to-end files wait on child processes, sockets and timers, and three at a time
    // ran in 401 s where two took about 465 (their CPU 61% busy with two); the browser tests,
    // each driving a Chromium, and the unit tests keep two. The whole pass: 764 s against 823.
    projects: [
      {
        resolve: { alias },
        test: {
          ...fileOptions,
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          maxWorkers: 3,
          sequence: { groupOrder: 0 },
        },
      },
      {
        resolve: { alias },
        test: {
          ...fileOptions,
          name: 'unit+browser',
          include: [
            'shared/test/**/*.test.ts',
            'coordinator/test/**/*.test.ts',
            'agent/test/**/*.test.ts',
            'cli/test/**/*.test.ts',
            'test/browser/**/*.test.ts',
          ],
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
