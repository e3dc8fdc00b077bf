import { runCli } from '../../src/cli/program.js';

/** Runs `drover-agent <argv>` in process; its exit code and what it wrote to stdout and stderr. */
export async function runAgentCli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}
