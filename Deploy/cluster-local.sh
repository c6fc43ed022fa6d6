#!/usr/bin/env bash
# An N-node Homeroom cluster of `homeroom node` processes on 127.0.0.1.
#
#   Deploy/cluster-local.sh start N [base-port]   start N nodes (default base port 7100)
#   Deploy/cluster-local.sh status                 pid, addresses and /healthz of each node
#   Deploy/cluster-local.sh stop                   stop every node and remove what start made
#
# Node i (1..N) listens on base+10(i-1) (REP), base+10(i-1)+1 (PUB) and serves
# /healthz and /metrics on base+10(i-1)+2; node-to-node traffic has its own PUB
# socket on base+10(i-1)+3 (--cluster-publish). Nodes 2..N use node 1 as their seed.
# Everything lives in the run directory (HOMEROOM_RUN_DIR, default
# .build/cluster-local): n<i>/data (SQLite), n<i>/node.log, n<i>/pid, n<i>/ready.
# HOMEROOM_BIN picks the binary (default .build/debug/homeroom, built if missing);
# HOMEROOM_KEEP=1 keeps the run directory on stop; extra node flags can be given
# in HOMEROOM_NODE_FLAGS (e.g. "--heartbeat-ms 100").
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

run_dir="${HOMEROOM_RUN_DIR:-.build/cluster-local}"
bin="${HOMEROOM_BIN:-.build/debug/homeroom}"

usage() {
  echo "usage: $0 start N [base-port] | status | stop" >&2
  exit 64
}

# True when pid file $1 names a running homeroom node started from this run directory.
ours() {
  local pid; pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "homeroom node .*--data-dir $(realpath -m "$run_dir")/"
}

http_get() { # host port path -> prints the response, bounded by 2 s
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1" && printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$2" "$0" >&3 && cat <&3' "$@" 2>/dev/null || true
}

stop_all() {
  [ -d "$run_dir" ] || { echo "cluster-local: nothing to stop ($run_dir does not exist)" >&2; return 0; }
  local pids=()
  for pidfile in "$run_dir"/n*/pid; do
    [ -e "$pidfile" ] || continue
    if ours "$pidfile"; then
      pid=$(cat "$pidfile"); pids+=("$pid")
      kill -CONT "$pid" 2>/dev/null || true   # a paused node cannot stop
      kill -TERM "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then echo "cluster-local: pid $pid ignored SIGTERM for 10 s; SIGKILL" >&2; kill -KILL "$pid" 2>/dev/null || true; fi
  done
  if [ "${HOMEROOM_KEEP:-0}" = "1" ]; then
    echo "cluster-local: stopped ${#pids[@]} nodes; kept $run_dir" >&2
  else
    rm -rf "$run_dir"
    echo "cluster-local: stopped ${#pids[@]} nodes; removed $run_dir" >&2
  fi
}

start_all() {
  local count="$1" base="${2:-7100}"
  [[ "$count" =~ ^[0-9]+$ ]] && [ "$count" -ge 1 ] && [ "$count" -le 50 ] || { echo "cluster-local: N must be 1..50" >&2; exit 64; }
  [[ "$base" =~ ^[0-9]+$ ]] && [ "$base" -ge 1024 ] && [ $((base + 10 * count)) -le 65535 ] || { echo "cluster-local: bad base port $base" >&2; exit 64; }
  if [ -d "$run_dir" ] && ls "$run_dir"/n*/pid >/dev/null 2>&1; then
    echo "cluster-local: a cluster is already running from $run_dir; stop it first ($0 stop)" >&2
    exit 1
  fi
  if [ ! -x "$bin" ]; then
    echo "cluster-local: building homeroom" >&2
    swift build --product homeroom >&2
  fi
  mkdir -p "$run_dir"
  trap 'echo "cluster-local: start failed; tearing down" >&2; stop_all' ERR INT TERM
  local abs; abs=$(realpath -m "$run_dir")
  local seed="tcp://127.0.0.1:$base"
  for i in $(seq 1 "$count"); do
    local port=$((base + 10 * (i - 1)))
    local dir="$abs/n$i"
    mkdir -p "$dir/data"
    local seeds=()
    [ "$i" -gt 1 ] && seeds=(--seed "$seed")
    # shellcheck disable=SC2086
    "$bin" node --name "n$i" --listen "tcp://127.0.0.1:$port" --publish "tcp://127.0.0.1:$((port + 1))" \
      --http "http://127.0.0.1:$((port + 2))" --cluster-publish "tcp://127.0.0.1:$((port + 3))" --data-dir "$dir/data" "${seeds[@]}" ${HOMEROOM_NODE_FLAGS:-} \
      >"$dir/ready" 2>>"$dir/node.log" </dev/null &
    echo $! >"$dir/pid"
  done
  for i in $(seq 1 "$count"); do
    local dir="$abs/n$i" ok=0
    for _ in $(seq 1 200); do
      if grep -q '"event":"ready"' "$dir/ready" 2>/dev/null; then ok=1; break; fi
      ours "$dir/pid" || break
      sleep 0.1
    done
    if [ "$ok" != 1 ]; then
      echo "cluster-local: n$i did not become ready; its log:" >&2
      tail -n 20 "$dir/node.log" >&2 || true
      false
    fi
  done
  trap - ERR INT TERM
  echo "cluster-local: $count nodes running from $run_dir" >&2
  status_all
}

status_all() {
  [ -d "$run_dir" ] || { echo "cluster-local: no cluster ($run_dir does not exist)"; return 0; }
  printf '%-5s %-8s %-26s %-26s %s\n' NODE PID LISTEN PUBLISH HEALTH
  for dir in "$run_dir"/n*; do
    [ -d "$dir" ] || continue
    local name; name=$(basename "$dir")
    local pid="-" state="stopped" listen="-" publish="-"
    if ours "$dir/pid"; then
      pid=$(cat "$dir/pid")
      listen=$(sed -n 's/.*"listen":"\([^"]*\)".*/\1/p' "$dir/ready" | head -n 1)
      publish=$(sed -n 's/.*"publish":"\([^"]*\)".*/\1/p' "$dir/ready" | head -n 1)
      local http; http=$(sed -n 's/.*"http":"http:\/\/\([^"]*\)".*/\1/p' "$dir/ready" | head -n 1)
      local response; response=$(http_get "${http%:*}" "${http##*:}" /healthz)
      state=$(printf '%s' "$response" | head -n 1 | tr -d '\r')
      [ -n "$state" ] || state="no answer"
    fi
    printf '%-5s %-8s %-26s %-26s %s\n' "$name" "$pid" "$listen" "$publish" "$state"
  done
}

case "${1:-}" in
  start) [ $# -ge 2 ] || usage; start_all "$2" "${3:-7100}" ;;
  stop) stop_all ;;
  status) status_all ;;
  *) usage ;;
esac
