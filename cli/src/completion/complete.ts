import type { Command, Option } from 'commander';

/**
 * What may follow on a `drover` command line: `words` are the words after `drover`, the last
 * one being the word under the cursor (possibly empty). Subcommand names, or the options of the
 * command reached (its own and the global ones) when the word starts with `-`; nothing after an
 * option that takes a value or where an argument goes (the shell then completes file names).
 * Candidates are not filtered by the word's start: the shells do that.
 */
export function completions(program: Command, words: readonly string[]): string[] {
  let command = program;
  const done = words.slice(0, -1);
  const current = words[words.length - 1] ?? '';
  let expectsValue = false;
  for (const word of done) {
    if (expectsValue) {
      expectsValue = false;
      continue;
    }
    if (word.startsWith('-')) {
      const option = findOption(command, word);
      expectsValue = option !== undefined && (option.required || option.optional) && !word.includes('=');
      continue;
    }
    const sub = visibleCommands(command).find((c) => c.name() === word || c.aliases().includes(word));
    if (sub) command = sub;
  }
  if (expectsValue) return [];
  if (current.startsWith('-')) {
    return [...new Set([...optionsOf(command), '--help'].filter((o): o is string => o !== undefined))];
  }
  return visibleCommands(command).map((c) => c.name());
}

/**
 * The subcommands to offer, without the hidden ones and `help`: the words after `help` are the
 * names of the commands, which are offered so (`drover help member <TAB>`: those of `member`).
 */
function visibleCommands(command: Command): Command[] {
  return command.commands.filter((c) => !c.name().startsWith('__') && c.name() !== 'help');
}

/** The long options of `command` and of the commands above it (global options work everywhere). */
function optionsOf(command: Command): (string | undefined)[] {
  const all: Option[] = [];
  for (let c: Command | null = command; c; c = c.parent) all.push(...c.options);
  return all.filter((o) => !o.hidden).map((o) => o.long);
}

function findOption(command: Command, word: string): Option | undefined {
  const flag = word.split('=')[0];
  for (let c: Command | null = command; c; c = c.parent) {
    const found = c.options.find((o) => o.long === flag || o.short === flag);
    if (found) return found;
  }
  return undefined;
}
