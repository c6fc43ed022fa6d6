#!/usr/bin/env bash
# The partition and chaos suite: builds what is missing, then runs homeroom-chaos.
#
#   Deploy/chaos.sh                    short run (CI): every fault kind once, at most ~5 minutes
#   Deploy/chaos.sh --duration 600     soak for 10 minutes
#   Deploy/chaos.sh --seed 42 ...      replay a fault schedule; any homeroom-chaos option passes through
#
# Network namespaces (real partitions, packet loss with iptables) are used when this
# runs as root and `ip` and `iptables` exist; otherwise loopback, where only whole-node
# isolation can cut links (the partition kinds are then skipped, and it says so).
# HOMEROOM_CHAOS_NETNS=0 forces loopback, =1 requires namespaces.
# Exit status: homeroom-chaos's (0 pass, 1 checker failed, 64 usage, 77 cannot run).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:/usr/sbin:/sbin:$PATH"

args=("$@")
mode_given=0
netns_given=0
run_dir_given=0
for arg in "$@"; do
  case "$arg" in
    --short|--duration) mode_given=1 ;;
    --netns) netns_given=1 ;;
    --run-dir) run_dir_given=1 ;;
    -h|--help) mode_given=1 ;;
  esac
done
[ "$mode_given" = 1 ] || args=(--short "${args[@]}")
# A run directory of this invocation's own, so the cleanup below touches nothing else.
run_dir=".build/chaos/run-sh$$"
[ "$run_dir_given" = 1 ] || args+=(--run-dir "$run_dir")

if [ ! -x .build/debug/homeroom ] || [ ! -x .build/debug/homeroom-chaos ] || [ "${HOMEROOM_CHAOS_BUILD:-1}" = "1" ]; then
  log=$(mktemp)
  if ! { swift build --product homeroom && swift build --product homeroom-chaos; } >"$log" 2>&1; then
    cat "$log" >&2; rm -f "$log"; exit 1
  fi
  rm -f "$log"
fi

want="${HOMEROOM_CHAOS_NETNS:-auto}"
if [ "$netns_given" = 0 ] && [ "$want" != 0 ]; then
  why=""
  [ "$(id -u)" -eq 0 ] || why="not root"
  [ -n "$why" ] || command -v ip >/dev/null || why="no ip command (apt-get install iproute2)"
  [ -n "$why" ] || command -v iptables-restore >/dev/null || why="no iptables (apt-get install iptables)"
  if [ -z "$why" ]; then
    args+=(--netns)
  elif [ "$want" = 1 ]; then
    echo "chaos: HOMEROOM_CHAOS_NETNS=1 but network namespaces cannot be used: $why" >&2
    exit 77
  else
    echo "chaos: loopback mode ($why): partitions other than isolating one node are skipped" >&2
  fi
fi

# If the harness itself is killed (-9), its nodes would outlive it: end those it
# recorded in this invocation's run directory (pid files whose process is a homeroom
# node of that directory). A passing run has removed the directory already.
cleanup() {
  [ "$run_dir_given" = 0 ] || return 0
  for pidfile in "$run_dir"/n*/pid; do
    [ -e "$pidfile" ] || continue
    pid=$(cat "$pidfile" 2>/dev/null) || continue
    dir=$(realpath -m "$(dirname "$pidfile")")
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "homeroom node .*$dir/data"; then
      kill -CONT "$pid" 2>/dev/null || true
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
}
trap cleanup EXIT

set +e
.build/debug/homeroom-chaos "${args[@]}"
status=$?
set -e
if [ "$status" = 77 ] && [[ " ${args[*]} " == *" --netns "* ]] && [ "$netns_given" = 0 ] && [ "$want" != 1 ]; then
  echo "chaos: network namespaces are not usable here; running in loopback mode instead" >&2
  filtered=()
  for arg in "${args[@]}"; do [ "$arg" = --netns ] || filtered+=("$arg"); done
  set +e
  .build/debug/homeroom-chaos "${filtered[@]}"
  status=$?
  set -e
fi
exit "$status"
