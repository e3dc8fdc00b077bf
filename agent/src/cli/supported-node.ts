import { unsupportedNodeMessage } from '@drover/shared';

// Imported first by main.ts: on a Node.js too old for Drover, one line instead of a stack trace.
const problem = unsupportedNodeMessage(process.versions.node, process.execPath);
if (problem) {
  process.stderr.write(`drover-agent: ${problem}\n`);
  process.exit(1);
}
