import type { Command } from 'commander';
import { completions } from '../completion/complete.js';
import { COMPLETION_SCRIPTS } from '../completion/scripts.js';
import { CliError } from '../errors.js';
import type { Runtime } from '../runtime.js';

export function configureCompletionCommand(program: Command, rt: Runtime): void {
  program
    .command('completion')
    .description('print the shell completion script: source <(drover completion bash), or zsh')
    .argument('<shell>', 'bash or zsh')
    .action((shell: string) => {
      if (shell !== 'bash' && shell !== 'zsh') throw new CliError(`expected the shell bash or zsh, got \`${shell}\``);
      rt.out(COMPLETION_SCRIPTS[shell]);
    });

  // What the scripts call at each Tab: the candidates, one per line.
  program
    .command('__complete', { hidden: true })
    .argument('[words...]')
    .allowUnknownOption()
    .helpOption(false)
    .action((words: string[]) => {
      const found = completions(program, words.length === 0 ? [''] : words);
      if (found.length > 0) rt.out(`${found.join('\n')}\n`);
    });
}
