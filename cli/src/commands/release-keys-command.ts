import type { Command } from 'commander';
import { CliError } from '../errors.js';
import { fileDigest, rotateReleaseKeys, signReleaseWith, writeNewReleaseKey } from '../releases/release-keys.js';
import type { Runtime } from '../runtime.js';

interface SignFlags {
  key: string;
  app: string;
  sequence: string;
  sha256?: string;
  size?: string;
  file?: string;
}

interface RotateFlags {
  key: string;
  app: string;
  generation: string;
  newKey: string[];
}

const SHA256_HEX = /^[0-9a-f]{64}$/i;

/** A whole number from `min`, or a usage error naming the option. */
function wholeNumber(option: string, value: string, min: number): number {
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min)
    throw new CliError(`${option}: expected a whole number from ${min}, got \`${value}\``);
  return n;
}

/**
 * `drover release keygen|sign|rotate-keys`: release keys, off the coordinator (docs/ota.md,
 * "Release keys"). None of them needs a session or the network.
 */
export function configureReleaseKeyCommands(release: Command, rt: Runtime): void {
  release
    .command('keygen')
    .description('make a release key pair: the private key into a new file (0600), the public key printed')
    .requiredOption('--out <file>', 'the new private key file (never overwritten)')
    .action((flags: { out: string }) => {
      const publicKey = writeNewReleaseKey(flags.out);
      rt.out(`${publicKey}\n`);
      rt.err(
        `Wrote the private key to ${flags.out} (0600): keep it off the coordinator. Add the public key (above) to the application: drover app release-keys <app> --key ${publicKey}\n`,
      );
    });

  release
    .command('sign')
    .description('sign a release with a private release key; prints the signature for `release create --signature`')
    // The version is an argument, as for `release create`: `--version` is the command line's own.
    .argument('<version>', "the release's version label, e.g. 1.4.0")
    .requiredOption('--key <file>', 'the private release key file')
    .requiredOption('--app <slug>', "the application's slug (it is signed)")
    .requiredOption('--sequence <n>', "the release's sequence: above every release of the application")
    .option('--sha256 <hex>', "the artifact's SHA-256 (with --size)")
    .option('--size <bytes>', "the artifact's size in bytes (with --sha256)")
    .option('--file <path>', 'the artifact itself: its SHA-256 and size are computed')
    .action(async (version: string, flags: SignFlags) => {
      const given = flags.sha256 !== undefined || flags.size !== undefined;
      if (given === (flags.file !== undefined)) {
        throw new CliError('give the artifact with --file <path>, or with --sha256 <hex> and --size <bytes>');
      }
      let digest: { sha256: string; size: number };
      if (flags.file !== undefined) digest = await fileDigest(flags.file);
      else {
        if (flags.sha256 === undefined || flags.size === undefined)
          throw new CliError('--sha256 and --size go together');
        if (!SHA256_HEX.test(flags.sha256)) {
          throw new CliError(`--sha256: expected 64 hexadecimal characters, got \`${flags.sha256}\``);
        }
        digest = { sha256: flags.sha256.toLowerCase(), size: wholeNumber('--size', flags.size, 0) };
      }
      const fields = {
        app: flags.app,
        version,
        sequence: wholeNumber('--sequence', flags.sequence, 1),
        ...digest,
      };
      rt.out(`${signReleaseWith(flags.key, fields)}\n`);
      rt.err(`Signed ${JSON.stringify(fields)}\n`);
    });

  release
    .command('rotate-keys')
    .description(
      "sign a change of an application's release keys with a key of the current set; prints the rotation statement (JSON) for `drover app release-keys --rotation`",
    )
    .requiredOption('--key <file>', 'a private key of the current set')
    .requiredOption('--app <slug>', "the application's slug")
    .requiredOption(
      '--generation <n>',
      "the application's releaseKeyGeneration + 1 (`drover app release-keys <app>` shows it)",
    )
    .requiredOption(
      '--new-key <public-key>',
      'a public key of the new set (repeat it: keep the old key beside the new one during a change)',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .action((flags: RotateFlags) => {
      const rotation = rotateReleaseKeys(flags.key, {
        app: flags.app,
        generation: wholeNumber('--generation', flags.generation, 1),
        keys: flags.newKey,
      });
      rt.out(`${JSON.stringify(rotation, null, 2)}\n`);
    });
}
