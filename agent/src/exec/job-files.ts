import fs from 'node:fs';
import path from 'node:path';

/** The files of one job under `<state-dir>/jobs/<jobId>/`. */
export interface JobFiles {
  dir: string;
  /** The steps' default working directory. */
  workspace: string;
  /** The params as JSON (`$DROVER_PARAMS_FILE`). */
  paramsFile: string;
  /** The steps' `key=value` output (`$DROVER_OUTPUT`). */
  outputFile: string;
  /** The agent's record of the job (jobs/journal.ts). */
  journalFile: string;
}

export function jobFiles(stateDir: string, jobId: string): JobFiles {
  const dir = path.join(stateDir, 'jobs', jobId);
  return {
    dir,
    workspace: path.join(dir, 'workspace'),
    paramsFile: path.join(dir, 'params.json'),
    outputFile: path.join(dir, 'output.env'),
    journalFile: path.join(dir, 'journal.json'),
  };
}

/** Creates the workspace (0700), writes params.json and an empty output file (0600). */
export function prepareJobFiles(files: JobFiles, params: Record<string, unknown>): void {
  fs.mkdirSync(files.workspace, { recursive: true, mode: 0o700 });
  writeParamsFile(files, params);
  fs.writeFileSync(files.outputFile, '', { mode: 0o600 });
}

/** (Re)writes params.json (0600): after the input files are downloaded, with their local paths. */
export function writeParamsFile(files: JobFiles, params: Record<string, unknown>): void {
  fs.writeFileSync(files.paramsFile, `${JSON.stringify(params, null, 2)}\n`, { mode: 0o600 });
}
