# Shared by Deploy/demo.sh and Deploy/test.sh (sourced, not run): go to the
# repository root, put Swift on PATH, install missing packages, and define
# quiet_build.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="/opt/swift/usr/bin:$PATH"
bash Deploy/bootstrap.sh

# Runs a build quietly; on failure shows its whole output.
quiet_build() {
  local log; log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then cat "$log" >&2; rm -f "$log"; return 1; fi
  grep -E 'warning:|Compiling|Build complete' "$log" | grep -vE '^\[[0-9]+/[0-9]+\] Compiling' | tail -n 3 >&2 || true
  rm -f "$log"
}
