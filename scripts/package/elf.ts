import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * What the packages learn from the ELF files they ship: the CPU architecture each was built for
 * (a package never holds another architecture's executable or native module), and the versions
 * of the C and C++ libraries they need (the package's `Depends`).
 */

/** Debian's names of the architectures the packages are built for. */
export type DebArch = 'amd64' | 'arm64';
export const DEB_ARCHES: readonly DebArch[] = ['amd64', 'arm64'];
/** Node.js's name of each (`process.arch`, the npm packages `node-linux-<arch>`). */
export const NODE_ARCH: Record<DebArch, 'x64' | 'arm64'> = { amd64: 'x64', arm64: 'arm64' };
/** The GNU triplet of each: `<triplet>-strip` strips that architecture's binaries. */
export const GNU_TRIPLET: Record<DebArch, string> = { amd64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' };

/** ELF e_machine values, by Debian's architecture names. */
const MACHINES: Record<number, string> = {
  0x03: 'i386',
  0x28: 'armhf',
  0x3e: 'amd64',
  0xb7: 'arm64',
  0xf3: 'riscv64',
  0x15: 'ppc64el',
  0x16: 's390x',
};

/** Debian's architecture of an ELF file (`elf-<e_machine>` for others); undefined for any other file. */
export function elfArch(file: string): string | undefined {
  const header = Buffer.alloc(20);
  const fd = fs.openSync(file, 'r');
  let read: number;
  try {
    read = fs.readSync(fd, header, 0, 20, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (read < 20 || header.readUInt32BE(0) !== 0x7f454c46) return undefined;
  const machine = header.readUInt16LE(18);
  return MACHINES[machine] ?? `elf-0x${machine.toString(16)}`;
}

/** Every regular file under `dir`, as paths relative to it, sorted. */
export function filesUnder(dir: string): string[] {
  const files: string[] = [];
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) files.push(child);
    }
  };
  walk('');
  return files.sort();
}

/** The ELF files under `dir` (relative paths) with their architecture. */
export function elfFiles(dir: string): { file: string; arch: string }[] {
  return filesUnder(dir).flatMap((file) => {
    const arch = elfArch(path.join(dir, file));
    return arch === undefined ? [] : [{ file, arch }];
  });
}

/** Throws, naming each one, when an ELF file under `dir` is not for `arch`. */
export function assertArch(dir: string, arch: DebArch): void {
  const wrong = elfFiles(dir).filter((f) => f.arch !== arch);
  if (wrong.length > 0) {
    throw new Error(
      `files for another architecture than ${arch}: ${wrong.map((f) => `${f.file} (${f.arch})`).join(', ')}`,
    );
  }
}

/**
 * The GCC release whose libstdc++ first defines each GLIBCXX_3.4.<n> symbol version: Debian's
 * libstdc++6 carries the GCC version. Below 3.4.21 (GCC 5) any libstdc++6 of a supported
 * distribution has it.
 */
const GLIBCXX_GCC: Record<number, string> = {
  21: '5',
  22: '6',
  23: '7',
  24: '7',
  25: '8',
  26: '9',
  27: '9',
  28: '10',
  29: '11',
  30: '12',
  31: '13',
  32: '13',
  33: '14',
};

/** Compares dotted version numbers. */
function compareVersions(a: string, b: string): number {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** The symbol versions `file` needs (readelf's `.gnu.version_r`), by library file name. */
export function versionNeeds(file: string): Map<string, string[]> {
  const out = execFileSync('readelf', ['--version-info', '--wide', file], { encoding: 'utf8' });
  const needs = new Map<string, string[]>();
  let inNeeds = false;
  let library: string | undefined;
  for (const line of out.split('\n')) {
    if (line.startsWith('Version needs section')) inNeeds = true;
    else if (/^\S/.test(line)) inNeeds = false;
    if (!inNeeds) continue;
    const fileMatch = /File: (\S+)/.exec(line);
    if (fileMatch) {
      library = fileMatch[1]!;
      needs.set(library, []);
      continue;
    }
    const nameMatch = /Name: (\S+)/.exec(line);
    if (nameMatch && library) needs.get(library)!.push(nameMatch[1]!);
  }
  return needs;
}

/**
 * The `Depends` entries for the shared libraries the ELF files under `dir` need: libc6 from the
 * newest GLIBC_ symbol version, libstdc++6 from the newest GLIBCXX_, libgcc-s1 from the newest
 * GCC_. Read from the files themselves (readelf works on every architecture's files), so that it
 * holds for another architecture than this machine's, where dpkg-shlibdeps cannot look.
 */
export function libraryDepends(dir: string): string[] {
  const newest: Record<'GLIBC' | 'GLIBCXX' | 'GCC', string | undefined> = {
    GLIBC: undefined,
    GLIBCXX: undefined,
    GCC: undefined,
  };
  const libraries = new Set<string>();
  for (const { file } of elfFiles(dir)) {
    for (const [library, versions] of versionNeeds(path.join(dir, file))) {
      libraries.add(library);
      for (const version of versions) {
        const match = /^(GLIBC|GLIBCXX|GCC)_([0-9.]+)$/.exec(version);
        if (!match) continue;
        const kind = match[1] as 'GLIBC' | 'GLIBCXX' | 'GCC';
        const current = newest[kind];
        if (current === undefined || compareVersions(match[2]!, current) > 0) newest[kind] = match[2]!;
      }
    }
  }
  const depends: string[] = [];
  if (newest.GLIBC) depends.push(`libc6 (>= ${newest.GLIBC})`);
  if (newest.GCC || libraries.has('libgcc_s.so.1')) depends.push(`libgcc-s1 (>= ${newest.GCC ?? '3.0'})`);
  if (newest.GLIBCXX || libraries.has('libstdc++.so.6')) {
    const minor = Number((newest.GLIBCXX ?? '3.4').split('.')[2] ?? 0);
    const gcc = minor < 21 ? '4.9' : GLIBCXX_GCC[minor];
    if (gcc === undefined) {
      throw new Error(`GLIBCXX_${newest.GLIBCXX} is newer than the table of libstdc++ versions: add it`);
    }
    depends.push(`libstdc++6 (>= ${gcc})`);
  }
  return depends;
}
