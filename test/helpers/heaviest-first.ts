import fs from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The order test files start in: the longest first, so that the last files of a group are short
 * ones and no worker idles while another finishes a long file alone. How long a file takes is
 * what its last run on this checkout took (Vitest's cache), else what it took in CI
 * (test/file-durations.json, seconds, files of 3 s and more: `node scripts/file-durations.mjs`
 * after a run writes it again). Vitest alone, without its cache on a fresh clone, starts the
 * largest files first: the route fuzzer, small and over a minute long, then ran last, alone.
 */

const DURATIONS_FILE = path.join(import.meta.dirname, '..', 'file-durations.json');
const known: Record<string, number> = JSON.parse(fs.readFileSync(DURATIONS_FILE, 'utf8')) as Record<string, number>;

export class HeaviestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { root } = this.ctx.config;
    const estimate = new Map<TestSpecification, number>();
    for (const spec of files) {
      const file = path.relative(root, spec.moduleId);
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${file}`)?.duration;
      estimate.set(spec, cached ?? (known[file] ?? 0) * 1000);
    }
    return [...files].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        (a.project.name === b.project.name ? 0 : a.project.name < b.project.name ? -1 : 1) ||
        estimate.get(b)! - estimate.get(a)!,
    );
  }
}
