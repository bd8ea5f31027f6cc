# Sourced by the build scripts: runs one long step with a progress line, so a
# first build that takes minutes never looks hung.
#
#   with_progress LABEL LOG TOTAL COMMAND...
#
# COMMAND's output goes to LOG. While it runs, stderr shows LABEL, the time
# spent and, for `go build -v` (which prints each package it compiles), the
# packages compiled of TOTAL (0: not counted). On a terminal one line is
# redrawn every second; otherwise (CI logs, or RATCHET_PROGRESS=lines) a line
# is printed every 15 s. A failure prints the log's tail and names the log.

progress_elapsed() {
  local s=$1
  if [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi
}

with_progress() {
  local label=$1 log=$2 total=$3
  shift 3
  local started=$SECONDS redraw=no interval=15
  if [ -t 2 ] && [ "${RATCHET_PROGRESS:-}" != lines ]; then redraw=yes interval=1; fi
  "$@" >"$log" 2>&1 &
  local pid=$! next=$interval
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.25
    if [ $((SECONDS - started)) -ge "$next" ] && kill -0 "$pid" 2>/dev/null; then
      next=$((next + interval))
      local line
      line="$label: $(progress_elapsed $((SECONDS - started)))"
      # grep -c exits 1 when it counts nothing (go build -v prints only what it
      # compiles): that must not end a script running under `set -e`.
      if [ "$total" -gt 0 ]; then line+=", $(grep -c -v '^#' "$log" || true) of $total packages compiled"; fi
      if [ "$redraw" = yes ]; then printf '\r\033[K  %s' "$line" >&2; else printf '  %s\n' "$line" >&2; fi
    fi
  done
  local rc=0
  wait "$pid" || rc=$?
  [ "$redraw" = yes ] && printf '\r\033[K' >&2
  if [ "$rc" -ne 0 ]; then
    echo "  $label failed after $(progress_elapsed $((SECONDS - started))) (exit $rc); last lines of $log:" >&2
    tail -n 20 "$log" | sed 's/^/    /' >&2
    return "$rc"
  fi
  echo "  $label: done in $(progress_elapsed $((SECONDS - started)))" >&2
}
