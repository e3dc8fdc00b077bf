/**
 * Benchmark: the dashboard's first load. Goal: the JavaScript a browser downloads to show the
 * first page is at most 250 KB on the wire (250,000 bytes).
 *
 *   pnpm build && pnpm bench bench/dashboard-bundle.ts [--dir coordinator/dashboard-dist]
 *
 * Reads the built index.html and sizes every file it loads (its module script, the chunks it
 * preloads, its stylesheets) raw and gzipped at level 9. Then starts a real coordinator, which
 * serves its build (coordinator/dashboard-dist), and downloads each of those files over a fresh
 * connection as Chromium asks for it (`Accept-Encoding: gzip, deflate, br, zstd`), as a client
 * that takes gzip only, and as one that takes no compression, counting the bytes that crossed
 * the wire (the answer's headers and its body as sent). The first-load JavaScript is the sum of
 * the scripts; the goal is checked on what Chromium transfers. The other files of the build
 * (chunks loaded later by a page, if any) are listed apart.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { startBenchCoordinator } from './lib/coordinator.js';

const GOAL_BYTES = 250_000;
const repo = fileURLToPath(new URL('..', import.meta.url));
const served = path.join(repo, 'coordinator/dashboard-dist');
const dirFlag = process.argv.indexOf('--dir');
const dir = path.resolve(repo, dirFlag > 0 ? process.argv[dirFlag + 1]! : 'coordinator/dashboard-dist');

const indexFile = path.join(dir, 'index.html');
if (!fs.existsSync(indexFile)) {
  console.error(`${indexFile} is missing: build the dashboard first (pnpm build)`);
  process.exit(2);
}
const html = fs.readFileSync(indexFile, 'utf8');
const loaded = [...html.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)="\/([^"]+)"/g)].map((m) => m[1]!);

/** How each kind of client asks: Chromium's header, gzip only, no compression. */
const CLIENTS = { browser: 'gzip, deflate, br, zstd', gzip: 'gzip', none: undefined } as const;
type Client = keyof typeof CLIENTS;

interface Sized {
  file: string;
  raw: number;
  gzip: number;
  /** Bytes on the wire per client (headers and body), when the coordinator serves this build. */
  wire?: Record<Client, { bytes: number; encoding: string }>;
}

/** One GET over a connection of its own; resolves with the bytes read from it and the encoding sent. */
function transfer(url: string, acceptEncoding: string | undefined): Promise<{ bytes: number; encoding: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, headers: acceptEncoding ? { 'accept-encoding': acceptEncoding } : {} });
    req.on('response', (res) => {
      if (res.statusCode !== 200) reject(new Error(`${url}: ${res.statusCode}`));
      res.resume();
      res.on('end', () =>
        resolve({ bytes: res.socket.bytesRead, encoding: String(res.headers['content-encoding'] ?? 'none') }),
      );
    });
    req.on('error', reject);
  });
}

const size = (file: string): Sized => {
  const bytes = fs.readFileSync(path.join(dir, file));
  return { file, raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
};
const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} KB`;
const row = (s: Sized) => {
  const wire = s.wire
    ? `   on the wire: ${kb(s.wire.browser.bytes)} (${s.wire.browser.encoding}), ${kb(s.wire.gzip.bytes)} (${s.wire.gzip.encoding}), ${kb(s.wire.none.bytes)} (${s.wire.none.encoding})`
    : '';
  return `  ${s.file.padEnd(32)} ${kb(s.raw).padStart(9)} raw ${kb(s.gzip).padStart(9)} gzip-9${wire}`;
};

const first = loaded.map(size);
const assets = fs
  .readdirSync(path.join(dir, 'assets'))
  .filter((f) => !/\.(?:br|gz)$/.test(f))
  .map((f) => `assets/${f}`);
const later = assets.filter((f) => !loaded.includes(f)).map(size);

const measureWire = path.resolve(dir) === served;
if (measureWire) {
  const bench = await startBenchCoordinator();
  try {
    for (const s of [...first, ...later]) {
      const url = `${bench.url}/${s.file}`;
      s.wire = {
        browser: await transfer(url, CLIENTS.browser),
        gzip: await transfer(url, CLIENTS.gzip),
        none: await transfer(url, CLIENTS.none),
      };
    }
  } finally {
    await bench.close();
  }
}

console.log(`dashboard build: ${dir}`);
if (measureWire) console.log('on the wire: Chromium (gzip, deflate, br, zstd), a gzip-only client, no compression');
else console.log(`(bytes on the wire are measured for the build a coordinator serves, ${served}, only)`);
console.log('first load (named by index.html):');
for (const s of first) console.log(row(s));
if (later.length > 0) {
  console.log('loaded later (by a page):');
  for (const s of later) console.log(row(s));
}
const js = first.filter((s) => s.file.endsWith('.js'));
const sum = (pick: (s: Sized) => number) => js.reduce((total, s) => total + pick(s), 0);
const raw = sum((s) => s.raw);
const gzip9 = sum((s) => s.gzip);
if (measureWire) {
  const browser = sum((s) => s.wire!.browser.bytes);
  const verdict = browser <= GOAL_BYTES ? 'met' : 'NOT met';
  console.log(
    `first-load JavaScript on the wire: ${kb(browser)} to Chromium, ${kb(sum((s) => s.wire!.gzip.bytes))} gzip only, ` +
      `${kb(sum((s) => s.wire!.none.bytes))} uncompressed (${kb(raw)} raw, ${kb(gzip9)} gzip-9) ` +
      `of a ${kb(GOAL_BYTES)} budget: ${verdict}`,
  );
} else {
  const verdict = gzip9 <= GOAL_BYTES ? 'met' : 'NOT met';
  console.log(`first-load JavaScript: ${kb(gzip9)} gzip-9 (${kb(raw)} raw) of a ${kb(GOAL_BYTES)} budget: ${verdict}`);
}
