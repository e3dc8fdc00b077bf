import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defaultClientConditions, defineConfig } from 'vite';
import { precompress } from './precompress';

// Built into the coordinator's package, which serves it at / (coordinator/src/http/routes/dashboard).
const outDir = fileURLToPath(new URL('../coordinator/dashboard-dist', import.meta.url));

export default defineConfig({
  // Each asset also as .br and .gz, which the coordinator serves by Accept-Encoding.
  plugins: [react(), precompress()],
  base: '/',
  // @drover/shared from its TypeScript sources (its `drover-source` export condition), as the other
  // packages take it: the dashboard uses its browser-safe entry `@drover/shared/params`.
  resolve: { conditions: ['drover-source', ...defaultClientConditions] },
  build: {
    outDir,
    emptyOutDir: true,
    // The coordinator's Content-Security-Policy allows no inline script or data: module.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: 'es2022',
  },
  server: {
    // `pnpm --filter @drover/dashboard dev` against a coordinator on the default port.
    proxy: { '/v1': 'http://127.0.0.1:8080' },
  },
});
