#!/usr/bin/env bash
# The main job: install what is missing, build, and run the live demo.
# Extra arguments go to `homeroom demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
bash Deploy/bootstrap.sh
# Runs a build quietly; on failure shows its whole output.
quiet_build() {
  local log; log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then cat "$log" >&2; rm -f "$log"; return 1; fi
  grep -E 'warning:|Compiling|Build complete' "$log" | grep -vE '^\[[0-9]+/[0-9]+\] Compiling' | tail -n 3 >&2 || true
  rm -f "$log"
}
echo "demo: building (release; the first build takes a few minutes)" >&2
quiet_build swift build -c release --product homeroom
exec .build/release/homeroom demo "$@"
