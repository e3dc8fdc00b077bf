# Sourced by the other scripts: `step 'what'` says what starts, and how long the previous step
# took; `step_done` ends the last one. A long silent stretch then always has a line above it.

drover_step_name=''
drover_step_started=0

step_done() {
  if [ -n "$drover_step_name" ]; then
    echo "    done in $((SECONDS - drover_step_started)) s"
  fi
  drover_step_name=''
}

step() {
  step_done
  drover_step_name=$1
  drover_step_started=$SECONDS
  echo "==> $1"
}
