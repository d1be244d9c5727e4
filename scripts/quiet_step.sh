# Sourced by scripts/setup, scripts/demo and scripts/demo-live: one line per step on the screen,
# the step's own output (package managers, compilers) in a log file.
#
#   quiet_step PREFIX LOG TEXT CMD...
# prints "PREFIX: TEXT ... ok" and appends CMD's stdout and stderr to LOG. When CMD fails it
# prints "FAILED (exit N)", the log's path and its last 15 lines (on stderr), and exits with N.
quiet_step() {
  local prefix=$1 log=$2 text=$3 rc=0
  shift 3
  mkdir -p "$(dirname "$log")"
  printf '%s: %s ... ' "$prefix" "$text"
  printf '\n== %s (%s): %s\n' "$text" "$(date -u +%H:%M:%S)" "$*" >>"$log"
  "$@" >>"$log" 2>&1 </dev/null || rc=$?
  if [ "$rc" -eq 0 ]; then echo ok; return 0; fi
  echo "FAILED (exit $rc)"
  echo "$prefix: the full output is in $log; its last lines:" >&2
  tail -n 15 "$log" | sed 's/^/  | /' >&2
  exit "$rc"
}
