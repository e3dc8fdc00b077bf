// Writes test/file-durations.json, the order the test files start in on a fresh clone
// (test/helpers/heaviest-first.ts), from the durations of the last run on this checkout (Vitest's
// cache): run it after `pnpm test`. Seconds, for the files of 3 s and more, longest first.
import fs from 'node:fs';
import path from 'node:path';

const root = path.join(import.meta.dirname, '..');
const cacheDir = path.join(root, 'node_modules/.vite/vitest');
const caches = fs.existsSync(cacheDir)
  ? fs
      .readdirSync(cacheDir)
      .map((dir) => path.join(cacheDir, dir, 'results.json'))
      .filter((file) => fs.existsSync(file))
  : [];
if (caches.length === 0) {
  console.error('file-durations: no results of a run here yet: run `pnpm test` first');
  process.exit(1);
}
const newest = caches.sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
const durations = {};
for (const [key, result] of JSON.parse(fs.readFileSync(newest, 'utf8')).results) {
  const file = key.slice(key.indexOf(':') + 1);
  const seconds = Math.round(result.duration / 1000);
  if (seconds >= 3) durations[file] = Math.max(durations[file] ?? 0, seconds);
}
const sorted = Object.fromEntries(Object.entries(durations).sort(([, a], [, b]) => b - a));
fs.writeFileSync(path.join(root, 'test/file-durations.json'), `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`test/file-durations.json: ${Object.keys(sorted).length} files`);
