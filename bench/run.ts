/**
 * `pnpm bench <file> [options]` runs one benchmark; `pnpm bench --compare [--aof]` runs every
 * comparison with the peer a user would build instead (bench/peer/), one after the other.
 *
 * The benchmark is imported into this process with its own arguments in `process.argv`, as if it
 * had been run directly.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** The comparisons with the peer, each alternating Drover and the peer in one run. */
const COMPARISONS = ['bench/peer-trigger-run.ts', 'bench/peer-dispatch.ts', 'bench/peer-memory.ts'];

const [first, ...rest] = process.argv.slice(2);
if (first === undefined || first === '--help') {
  console.log('usage: pnpm bench <bench/file.ts> [options]   |   pnpm bench --compare [--aof]');
  process.exit(first === undefined ? 2 : 0);
}

async function run(file: string, args: readonly string[]): Promise<void> {
  process.argv = [process.argv[0]!, path.resolve(file), ...args];
  await import(pathToFileURL(path.resolve(file)).href);
}

if (first === '--compare') {
  for (const file of COMPARISONS) {
    console.log(`\n== ${file} ${rest.join(' ')}`);
    await run(file, rest);
  }
} else {
  await run(first, rest);
}
