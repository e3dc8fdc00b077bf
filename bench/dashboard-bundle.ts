/**
 * Benchmark: the dashboard's first load. Goal: the JavaScript a browser downloads to show the
 * first page is at most 250 KB gzipped (250,000 bytes).
 *
 *   pnpm build && pnpm bench bench/dashboard-bundle.ts [--dir coordinator/dashboard-dist]
 *
 * Reads the built index.html and sizes every file it loads (its module script, the chunks it
 * preloads, its stylesheets) raw and gzipped (level 9, as a server or proxy compressing the
 * answer would send it); the first-load JavaScript is the sum of the scripts. The other files
 * of the build (chunks loaded later by a page, if any) are listed apart.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const GOAL_BYTES = 250_000;
const repo = fileURLToPath(new URL('..', import.meta.url));
const dirFlag = process.argv.indexOf('--dir');
const dir = path.resolve(repo, dirFlag > 0 ? process.argv[dirFlag + 1]! : 'coordinator/dashboard-dist');

const indexFile = path.join(dir, 'index.html');
if (!fs.existsSync(indexFile)) {
  console.error(`${indexFile} is missing: build the dashboard first (pnpm build)`);
  process.exit(2);
}
const html = fs.readFileSync(indexFile, 'utf8');
const loaded = [...html.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)="\/([^"]+)"/g)].map((m) => m[1]!);

interface Sized {
  file: string;
  raw: number;
  gzip: number;
}
const size = (file: string): Sized => {
  const bytes = fs.readFileSync(path.join(dir, file));
  return { file, raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
};
const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} KB`;
const row = (s: Sized) => `  ${s.file.padEnd(40)} ${kb(s.raw).padStart(10)} raw ${kb(s.gzip).padStart(10)} gzipped`;

const first = loaded.map(size);
console.log(`dashboard build: ${dir}`);
console.log('first load (named by index.html):');
for (const s of first) console.log(row(s));
const assets = fs.readdirSync(path.join(dir, 'assets')).map((f) => `assets/${f}`);
const later = assets.filter((f) => !loaded.includes(f)).map(size);
if (later.length > 0) {
  console.log('loaded later (by a page):');
  for (const s of later) console.log(row(s));
}
const js = first.filter((s) => s.file.endsWith('.js'));
const total = js.reduce((sum, s) => sum + s.gzip, 0);
const verdict = total <= GOAL_BYTES ? 'met' : 'NOT met';
console.log(
  `first-load JavaScript: ${kb(total)} gzipped (${kb(js.reduce((sum, s) => sum + s.raw, 0))} raw) ` +
    `of a ${kb(GOAL_BYTES)} budget: ${verdict}`,
);
