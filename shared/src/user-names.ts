import fs from 'node:fs';

/**
 * The name /etc/passwd gives the user `uid`, or null (no such line, or no /etc/passwd): how the
 * commands of the agent and the coordinator name the owner of a directory in words an operator
 * types (`sudo -u drover`).
 */
export function userNameOf(uid: number): string | null {
  let passwd: string;
  try {
    passwd = fs.readFileSync('/etc/passwd', 'utf8');
  } catch {
    return null;
  }
  return (
    passwd
      .split('\n')
      .map((line) => line.split(':'))
      .find((fields) => fields[2] === String(uid))?.[0] ?? null
  );
}
