/** The completion scripts (`drover completion bash|zsh`): both ask `drover __complete` what may follow. */
export const COMPLETION_SCRIPTS = {
  bash: `# drover completion for bash. Load it with: source <(drover completion bash)
# or save it as /etc/bash_completion.d/drover (or ~/.local/share/bash-completion/completions/drover).
_drover_complete() {
  local IFS=$'\\n'
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  COMPREPLY=($(compgen -W "$(drover __complete -- "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _drover_complete drover
`,
  zsh: `#compdef drover
# drover completion for zsh. Load it with: source <(drover completion zsh) (after compinit),
# or save it as _drover in a directory of $fpath.
_drover() {
  local -a candidates
  candidates=("\${(@f)$(drover __complete -- "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  candidates=(\${candidates:#})
  if (( \${#candidates} )); then
    compadd -- "\${candidates[@]}"
  else
    _files
  fi
}
if [[ "\${zsh_eval_context[-1]}" == loadautofunc ]]; then
  _drover "$@"
else
  compdef _drover drover
fi
`,
} as const;
