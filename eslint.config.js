// ESLint 9 flat config: typescript-eslint's recommended rules plus three type-aware promise rules
// (about 3 s more than the untyped set on 2 cores), the layer rules (imports point one way), with
// formatting left to Prettier.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

const root = import.meta.dirname;

/**
 * Layers point one way (docs/architecture.md, "Layers"). Each entry forbids imports whose path
 * matches `regex` in the files of one folder; `types: true` still allows `import type` (and
 * imports of types only), which is how db/ and storage/ implement the domain's interfaces.
 */
const layer = (what, regex, types = false) => ({
  regex,
  allowTypeImports: types,
  message: `${what} (docs/architecture.md, "Layers")`,
});
// The composition root: the only modules that may import every layer.
const composition = layer(
  'Only the composition root (coordinator.ts, server.ts, store.ts, sqlite-repositories.ts, postgres-repositories.ts, cli/, copy-data/) wires the layers',
  '(^|/)(cli|copy-data)/|^(\\.\\./)+(coordinator|server|store|sqlite-repositories|postgres-repositories|index)\\.js$',
);
const noHttp = layer('Only http/ and the composition root import http/', '(^|/)http/');
const noDb = layer('db/ is reached through the repository interfaces in domain/model/, never imported', '(^|/)db/');
const noStorage = layer('storage/ is used by the domain (the files service), not by this layer', '(^|/)storage/');
const domainTypesOnly = (under = '') =>
  layer(
    'db/ and storage/ may import types from domain/, never its logic: pass a decision in (domain/model/transaction-rules.ts)',
    `(^|/)domain/${under}`,
    true,
  );
const noDomain = layer('This module is below the domain', '(^|/)domain/');
const modelOnly = layer(
  'db/ implements the repository interfaces of domain/model/ and imports nothing else of the domain: a type it needs belongs in domain/model/',
  '(^|/)domain/(?!model/)',
);
// domain/model/ is the bottom of the domain (entity types, enums, repository interfaces): it
// imports its own files and util/, never a feature folder, so db/ reading it closes no cycle.
const modelBelowFeatures = layer(
  'domain/model/ imports nothing of the domain outside domain/model/: move the type here instead',
  '^\\.\\./(?!\\.\\./)',
);
const restrict = (files, patterns) => ({
  files,
  rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] },
});
const otherPackages = (...names) =>
  layer(
    'The packages point one way: coordinator and agent use @drover/shared, never each other; the command line (cli) uses shared and @drover/agent/client; shared uses none',
    `^@drover/(${names.join('|')})(/|$)|(^|/)(${names.join('|')})/(src|dist)/`,
  );
// The dashboard runs in a browser: @drover/shared's root entry is Node's (node:crypto, files).
const dashboardShared = layer(
  'The dashboard takes from @drover/shared only its browser entries (@drover/shared/api, @drover/shared/params, @drover/shared/labels), never another package',
  '^@drover/(shared$|(?!shared/)[^/]+)|(^|/)(coordinator|agent|cli|shared)/(src|dist)/',
);
// Every TypeScript file belongs to one of two programs: the Node.js code (the packages' sources, the
// tests, the scripts and the benchmarks: tsconfig.eslint.json, the tests' options, the packages'
// sources read as the tests read them) and the dashboard's (the browser's types). One program for
// the Node.js code instead of one per package: 53 s instead of 70 on 2 cores, each package's
// program being built again inside the next.
const projects = ['./tsconfig.eslint.json', './dashboard/tsconfig.json'];

export default defineConfig(
  { ignores: ['**/dist/', '**/node_modules/', 'coverage/', 'data/', 'bench/results/', 'coordinator/dashboard-dist/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        fetch: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'prefer-const': 'error',
    },
  },
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parserOptions: { project: projects, tsconfigRootDir: root } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  {
    // Tests and benchmarks handle parsed JSON bodies; `any` is the honest type there.
    files: ['test/**/*.ts', '*/test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Test files share their worker's modules (vitest.config.ts: `isolate: false`): a module mock
    // would leak into the files after it, or miss a module an earlier file loaded.
    files: ['test/**/*.ts', '*/test/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        ...['mock', 'doMock', 'unmock', 'doUnmock'].map((property) => ({
          object: 'vi',
          property,
          message: 'Inject the dependency instead: test files share their modules (vitest.config.ts).',
        })),
      ],
    },
  },
  restrict(['coordinator/src/http/**/*.ts'], [composition, noDb, otherPackages('agent', 'cli')]),
  restrict(['coordinator/src/domain/**/*.ts'], [composition, noHttp, noDb, otherPackages('agent', 'cli')]),
  restrict(
    ['coordinator/src/domain/model/**/*.ts'],
    [composition, noHttp, noDb, modelBelowFeatures, otherPackages('agent', 'cli')],
  ),
  restrict(
    ['coordinator/src/db/**/*.ts'],
    [composition, noHttp, noStorage, modelOnly, domainTypesOnly('model/'), otherPackages('agent', 'cli')],
  ),
  restrict(
    ['coordinator/src/storage/**/*.ts'],
    [composition, noHttp, noDb, domainTypesOnly(), otherPackages('agent', 'cli')],
  ),
  restrict(
    ['coordinator/src/util/**/*.ts', 'coordinator/src/{errors,logger,version}.ts'],
    [composition, noHttp, noDb, noStorage, noDomain, otherPackages('agent', 'cli')],
  ),
  // The metrics' edge implements the domain's Metrics with prom-client: it reads the domain's types and enums.
  restrict(['coordinator/src/metrics/**/*.ts'], [composition, noHttp, noDb, noStorage, otherPackages('agent')]),
  // Configuration validates with the domain's constants (password lengths), nothing more.
  restrict(['coordinator/src/config/**/*.ts'], [composition, noHttp, noDb, noStorage, otherPackages('agent', 'cli')]),
  restrict(
    [
      'coordinator/src/{cli/**/*,copy-data/**/*,coordinator,server,store,sqlite-repositories,postgres-repositories,index}.ts',
    ],
    [otherPackages('agent', 'cli')],
  ),
  restrict(['agent/src/**/*.ts'], [otherPackages('coordinator', 'cli')]),
  // The agent's jobs run whatever runner of update jobs they are handed; the daemon hands them deploy/'s.
  restrict(
    ['agent/src/jobs/**/*.ts'],
    [
      otherPackages('coordinator', 'cli'),
      layer(
        "jobs/ knows nothing of deploy/: the daemon hands the job manager deploy/'s runner of update jobs",
        '(^|/)deploy/',
      ),
    ],
  ),
  restrict(['shared/src/**/*.ts'], [otherPackages('coordinator', 'agent', 'cli')]),
  // The client command line talks to the coordinator over HTTP only, and takes from the agent only
  // what it offers other clients (@drover/agent/client).
  restrict(
    ['cli/src/**/*.ts'],
    [
      otherPackages('coordinator'),
      layer(
        'The command line uses the agent through @drover/agent/client only',
        '^@drover/agent$|^@drover/agent/(?!client$)|(^|/)agent/(src|dist)/',
      ),
    ],
  ),
  // The dashboard's layers (docs/architecture.md, "The dashboard"): api/ speaks to the coordinator and
  // knows no screen; components/ are the pieces pages are made of; pages/ compose both; router.tsx
  // and main.tsx wire the pages. In the browser it takes only @drover/shared's browser entries.
  restrict(['dashboard/src/**/*.{ts,tsx}'], [dashboardShared]),
  restrict(
    ['dashboard/src/api/**/*.{ts,tsx}'],
    [
      dashboardShared,
      layer(
        'dashboard/src/api/ speaks to the coordinator and knows no screen: it imports no React, router, component or page',
        '^react($|-dom|-router)|(^|/)(components|pages)/|^\\.\\./(router|main)$',
      ),
    ],
  ),
  restrict(
    ['dashboard/src/components/**/*.{ts,tsx}'],
    [
      dashboardShared,
      layer(
        'dashboard/src/components/ are the pieces pages are made of: they import no page and not the router',
        '(^|/)pages/|^\\.\\./(router|main)$',
      ),
    ],
  ),
  restrict(
    ['dashboard/src/pages/**/*.{ts,tsx}'],
    [
      dashboardShared,
      layer(
        'A page is reached through router.tsx, never imported by name from main.tsx or the router',
        '^\\.\\./(router|main)$',
      ),
    ],
  ),
  // The agent keeps private state in ES `#private` fields, one style (a private constructor has no
  // ES form, so it stays TypeScript's).
  {
    files: ['agent/src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            ":matches(PropertyDefinition, TSParameterProperty, MethodDefinition[kind!='constructor'], TSAbstractPropertyDefinition)[accessibility='private']",
          message: 'The agent uses ES #private fields and methods, not TypeScript `private`',
        },
      ],
    },
  },
  prettier,
);
