import fs from 'node:fs';
import path from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { Plugin } from 'vite';

/** The files worth compressing: text. Images such as PNG are compressed already. */
const COMPRESSIBLE = /\.(?:js|mjs|css|html|svg|json|txt|map)$/;

/**
 * Writes a Brotli (`.br`, quality 11) and a gzip (`.gz`, level 9) copy beside each compressible
 * file of the build's `assets/` folder, once, at build time, with Node's zlib: the coordinator
 * sends the copy the browser accepts (`Content-Encoding`), without compressing anything per
 * request. A copy that would not be smaller than its file is not written.
 */
export function precompress(): Plugin {
  let outDir = '';
  return {
    name: 'drover-precompress',
    apply: 'build',
    configResolved(config) {
      outDir = path.resolve(config.root, config.build.outDir);
    },
    writeBundle() {
      const assets = path.join(outDir, 'assets');
      for (const name of fs.readdirSync(assets)) {
        if (!COMPRESSIBLE.test(name)) continue;
        const file = path.join(assets, name);
        const bytes = fs.readFileSync(file);
        const copies = {
          br: brotliCompressSync(bytes, {
            params: {
              [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
              [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
            },
          }),
          gz: gzipSync(bytes, { level: 9 }),
        };
        for (const [extension, copy] of Object.entries(copies)) {
          if (copy.length < bytes.length) fs.writeFileSync(`${file}.${extension}`, copy);
        }
      }
    },
  };
}
