import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defaultClientConditions, defineConfig } from 'vite';
import { precompress } from './precompress.ts';

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
    // Vite warns of a chunk above 500 kB before compression. What the dashboard's first load costs
    // is measured on the wire instead, against its budget of 250 KB (docs/performance.md,
    // "Dashboard first load": `pnpm bench bench/dashboard-bundle.ts`, ~145 KB with Brotli).
    chunkSizeWarningLimit: 1024,
  },
  server: {
    // `pnpm --filter @drover/dashboard dev` against a coordinator on the default port.
    proxy: { '/v1': 'http://127.0.0.1:8080' },
  },
});
