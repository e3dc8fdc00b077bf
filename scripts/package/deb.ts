import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { filesUnder, type DebArch } from './elf.js';

/**
 * Writing one .deb with `dpkg-deb`: a staged root directory (the files as they are installed),
 * its control area (control, conffiles, md5sums, maintainer scripts) and the documentation
 * Debian asks of every package (copyright, changelog).
 */

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const PACKAGING = path.join(ROOT, 'packaging/deb');

export interface DebPackage {
  name: 'drover-agent' | 'drover-coordinator';
  version: string;
  arch: DebArch;
  depends: string[];
  /** One line, then paragraphs (Debian's Description field). */
  summary: string;
  description: string;
  /** Installed paths (`/etc/...`) dpkg keeps the administrator's changes of. */
  conffiles: string[];
  /** The values of the maintainer scripts' @NAME@ placeholders. */
  scriptValues: Record<string, string>;
}

/** Fills the `@NAME@` placeholders of a template; a placeholder without a value is an error. */
export function fillTemplate(text: string, values: Record<string, string>, what: string): string {
  return text.replace(/@([A-Z_]+)@/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`${what}: no value for @${name}@`);
    return value;
  });
}

/** Copies `from` to `<stage>/<to>` with `mode`, making its directories. */
export function install(from: string, stage: string, to: string, mode: number): void {
  const target = path.join(stage, to);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.copyFileSync(from, target);
  fs.chmodSync(target, mode);
}

/** Writes `text` to `<stage>/<to>` with `mode`, making its directories. */
export function write(stage: string, to: string, text: string | Buffer, mode = 0o644): void {
  const target = path.join(stage, to);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.writeFileSync(target, text);
  fs.chmodSync(target, mode);
}

/**
 * Debian's modes for a tree copied from elsewhere (npm packages carry all kinds): directories
 * 0755, files 0644, but the files listed in `executables` (relative to `dir`) 0755.
 */
export function normalizeModes(dir: string, executables: ReadonlySet<string> = new Set()): void {
  const walk = (rel: string) => {
    const full = path.join(dir, rel);
    fs.chmodSync(full, 0o755);
    for (const entry of fs.readdirSync(full, { withFileTypes: true })) {
      const child = path.join(rel, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) fs.chmodSync(path.join(dir, child), executables.has(child) ? 0o755 : 0o644);
    }
  };
  walk('');
}

/**
 * /usr/share/doc/<name>/: the copyright file (machine-readable), a changelog (gzip -9n, as
 * Debian's tools write it) and the install guide; the manual page of the command from its
 * `--help`.
 */
export function writeDocs(stage: string, pkg: DebPackage, help: string, runtimeNote: string): void {
  const doc = `usr/share/doc/${pkg.name}`;
  const year = new Date(sourceDateEpoch() * 1000).getUTCFullYear();
  write(
    stage,
    `${doc}/copyright`,
    `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: Drover
Comment: ${runtimeNote}

Files: *
Copyright: ${year} The Drover authors
License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may not
 use this file except in compliance with the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0 can be
 found in "/usr/share/common-licenses/Apache-2.0".
`,
  );
  const date = new Date(sourceDateEpoch() * 1000).toUTCString().replace(/GMT$/, '+0000');
  const changelog = `${pkg.name} (${pkg.version}) stable; urgency=medium

  * Drover ${pkg.version}. What changed: CHANGELOG.md in the Drover repository.

 -- ${maintainer()}  ${date}
`;
  write(stage, `${doc}/changelog.gz`, gzipSync(changelog, { level: 9 }));
  install(path.join(ROOT, 'docs/install.md'), stage, `${doc}/install.md`, 0o644);
  write(stage, `usr/share/man/man1/${pkg.name}.1.gz`, gzipSync(manPage(pkg, help), { level: 9 }));
}

/** A manual page holding the command's `--help`, pointing at the install guide. */
function manPage(pkg: DebPackage, help: string): string {
  const escape = (line: string) => line.replace(/\\/g, '\\e').replace(/^([.'])/, '\\&$1');
  return `.TH ${pkg.name.toUpperCase()} 1 "" "${pkg.name} ${pkg.version}" "Drover"
.SH NAME
${pkg.name} \\- ${pkg.summary.replace(/^Drover /, '')}
.SH SYNOPSIS
.B ${pkg.name}
.I command
.RI [ options ]
.SH DESCRIPTION
.nf
${help.trimEnd().split('\n').map(escape).join('\n')}
.fi
.PP
Each command's options: \\fB${pkg.name} help \\fIcommand\\fR.
.SH SEE ALSO
.I /usr/share/doc/${pkg.name}/install.md
`;
}

/**
 * The packages' Maintainer field: DROVER_PACKAGE_MAINTAINER (`Name <address>`) for a build
 * published somewhere, else a placeholder of the reserved domain `.invalid`.
 */
export function maintainer(): string {
  return process.env.DROVER_PACKAGE_MAINTAINER || 'Drover maintainers <maintainers@drover.invalid>';
}

/** SOURCE_DATE_EPOCH when set (reproducible builds), else the last commit's time. */
function sourceDateEpoch(): number {
  const fromEnv = Number(process.env.SOURCE_DATE_EPOCH);
  if (Number.isInteger(fromEnv) && fromEnv > 0) return fromEnv;
  try {
    return Number(execFileSync('git', ['log', '-1', '--format=%ct'], { cwd: ROOT, encoding: 'utf8' }).trim());
  } catch {
    return Math.floor(Date.now() / 1000);
  }
}

/** `Installed-Size`: KiB the files take, each rounded up to a KiB (as dpkg-gencontrol counts). */
function installedSize(stage: string): number {
  return filesUnder(stage).reduce((kib, file) => kib + Math.ceil(fs.statSync(path.join(stage, file)).size / 1024), 0);
}

/** Compression of the package: xz as Debian's archive uses, or gzip -1 for a quick build (tests). */
export type Compression = 'xz' | 'gzip';

/**
 * Writes the control area into `<stage>/DEBIAN` and builds `<outDir>/<name>_<version>_<arch>.deb`
 * with every file owned by root (`--root-owner-group`); answers its path.
 */
export function buildDeb(stage: string, pkg: DebPackage, outDir: string, compression: Compression): string {
  const files = filesUnder(stage);
  const control = path.join(stage, 'DEBIAN');
  fs.mkdirSync(control, { recursive: true });
  const description = pkg.description
    .trim()
    .split('\n')
    .map((line) => (line.trim() === '' ? ' .' : ` ${line}`))
    .join('\n');
  write(
    stage,
    'DEBIAN/control',
    `Package: ${pkg.name}
Version: ${pkg.version}
Architecture: ${pkg.arch}
Maintainer: ${maintainer()}
Installed-Size: ${installedSize(stage)}
Depends: ${pkg.depends.join(', ')}
Section: admin
Priority: optional
Description: ${pkg.summary}
${description}
`,
  );
  write(stage, 'DEBIAN/conffiles', pkg.conffiles.map((f) => `${f}\n`).join(''));
  // md5sums of every file but the conffiles (dpkg keeps their checksums itself).
  const conffiles = new Set(pkg.conffiles.map((f) => f.slice(1)));
  const sums = files
    .filter((f) => !conffiles.has(f))
    .map(
      (f) =>
        `${createHash('md5')
          .update(fs.readFileSync(path.join(stage, f)))
          .digest('hex')}  ${f}\n`,
    );
  write(stage, 'DEBIAN/md5sums', sums.join(''));
  for (const script of ['postinst', 'prerm', 'postrm']) {
    const template = fs.readFileSync(path.join(PACKAGING, 'maintainer', script), 'utf8');
    write(stage, `DEBIAN/${script}`, fillTemplate(template, pkg.scriptValues, `${pkg.name} ${script}`), 0o755);
  }
  fs.mkdirSync(outDir, { recursive: true });
  const out = path.join(outDir, `${pkg.name}_${pkg.version}_${pkg.arch}.deb`);
  const temp = `${out}.${process.pid}.tmp`;
  const level = compression === 'xz' ? ['-Zxz', '-z6'] : ['-Zgzip', '-z1'];
  try {
    execFileSync('dpkg-deb', ['--root-owner-group', ...level, '--build', stage, temp], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, SOURCE_DATE_EPOCH: String(sourceDateEpoch()) },
    });
    fs.renameSync(temp, out);
  } finally {
    fs.rmSync(temp, { force: true });
  }
  return out;
}
