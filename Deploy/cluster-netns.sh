#!/usr/bin/env bash
# An N-node Homeroom cluster with one node per network namespace: the multi-host
# shape on one machine. Needs root (exits 77, "skip", without it).
#
#   Deploy/cluster-netns.sh start N          namespaces, bridge, veths, then N nodes
#   Deploy/cluster-netns.sh status           each node's pid, address and /healthz
#   Deploy/cluster-netns.sh cut "1,2|3,4,5"  partition: the groups cannot reach each other (iptables DROP)
#   Deploy/cluster-netns.sh heal             remove every cut
#   Deploy/cluster-netns.sh stop             stop the nodes, delete namespaces, veths, bridge, run directory
#
# Layout, all of it inside namespaces this script creates (nothing is added to the
# machine's own network namespace, and nothing routes out: no namespace has a
# default route):
#   hrnet-hub    holds the bridge hrbr0 with SUBNET.1/24 (SUBNET = HOMEROOM_SUBNET,
#                default 10.77.0): run clients and curl here, e.g.
#                ip netns exec hrnet-hub curl http://10.77.0.11:9100/healthz
#   hrnet-n<i>   node i, eth0 = SUBNET.(10+i); REP :7100, PUB :7101, HTTP :9100; the
#                other end of its veth (hrv<i>) is on the bridge.
# Run directory: HOMEROOM_RUN_DIR (default .build/cluster-netns): n<i>/data, node.log, pid.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:/usr/sbin:/sbin:$PATH"

subnet="${HOMEROOM_SUBNET:-10.77.0}"
run_dir="${HOMEROOM_RUN_DIR:-.build/cluster-netns}"
bin="${HOMEROOM_BIN:-.build/debug/homeroom}"
hub=hrnet-hub

usage() {
  echo "usage: $0 start N | status | cut 'a,b|c,d' | heal | stop" >&2
  exit 64
}

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "cluster-netns: network namespaces need root; skipping (run as root, or use Deploy/cluster-local.sh)" >&2
    exit 77
  fi
  command -v ip >/dev/null || { echo "cluster-netns: no 'ip' command (apt-get install iproute2); skipping" >&2; exit 77; }
}

node_ns() { echo "hrnet-n$1"; }
node_ip() { echo "$subnet.$((10 + $1))"; }
node_count() { ip netns list 2>/dev/null | grep -c '^hrnet-n[0-9]' || true; }

stop_all() {
  local stopped=0
  for pidfile in "$run_dir"/n*/pid; do
    [ -e "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "homeroom node"; then
      kill -CONT "$pid" 2>/dev/null || true
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
      stopped=$((stopped + 1))
    fi
    rm -f "$pidfile"
  done
  # Anything still inside our namespaces was started by us: end it, then the namespaces
  # (deleting a namespace deletes the veth pair in it, and the bridge with the hub).
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^hrnet-(hub|n[0-9]+)$' || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null || true); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$run_dir"
  echo "cluster-netns: stopped $stopped nodes; removed namespaces, veths, bridge and $run_dir" >&2
}

start_all() {
  local count="$1"
  [[ "$count" =~ ^[0-9]+$ ]] && [ "$count" -ge 1 ] && [ "$count" -le 50 ] || { echo "cluster-netns: N must be 1..50" >&2; exit 64; }
  if ip netns list 2>/dev/null | grep -q "^$hub\b"; then
    echo "cluster-netns: already running ($hub exists); stop it first ($0 stop)" >&2
    exit 1
  fi
  if [ ! -x "$bin" ]; then
    echo "cluster-netns: building homeroom" >&2
    swift build --product homeroom >&2
  fi
  trap 'echo "cluster-netns: start failed; tearing down" >&2; stop_all' ERR INT TERM
  mkdir -p "$run_dir"
  local abs; abs=$(realpath -m "$run_dir")
  local binary; binary=$(realpath "$bin")

  ip netns add "$hub"
  ip -n "$hub" link set lo up
  ip -n "$hub" link add hrbr0 type bridge
  ip -n "$hub" addr add "$subnet.1/24" dev hrbr0
  ip -n "$hub" link set hrbr0 up
  for i in $(seq 1 "$count"); do
    local ns; ns=$(node_ns "$i")
    ip netns add "$ns"
    ip -n "$hub" link add "hrv$i" type veth peer name eth0 netns "$ns"
    ip -n "$hub" link set "hrv$i" master hrbr0 up
    ip -n "$ns" addr add "$(node_ip "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
  done

  local seed; seed="tcp://$(node_ip 1):7100"
  for i in $(seq 1 "$count"); do
    local ns ip dir seeds=()
    ns=$(node_ns "$i"); ip=$(node_ip "$i"); dir="$abs/n$i"
    mkdir -p "$dir/data"
    [ "$i" -gt 1 ] && seeds=(--seed "$seed")
    # shellcheck disable=SC2086
    ip netns exec "$ns" "$binary" node --name "n$i" --listen "tcp://$ip:7100" --publish "tcp://$ip:7101" \
      --http "http://$ip:9100" --data-dir "$dir/data" "${seeds[@]}" ${HOMEROOM_NODE_FLAGS:-} \
      >"$dir/ready" 2>>"$dir/node.log" </dev/null &
    echo $! >"$dir/pid"
  done
  for i in $(seq 1 "$count"); do
    local dir="$abs/n$i" ok=0
    for _ in $(seq 1 200); do
      if grep -q '"event":"ready"' "$dir/ready" 2>/dev/null; then ok=1; break; fi
      kill -0 "$(cat "$dir/pid")" 2>/dev/null || break
      sleep 0.1
    done
    if [ "$ok" != 1 ]; then
      echo "cluster-netns: n$i did not become ready; its log:" >&2
      tail -n 20 "$dir/node.log" >&2 || true
      false
    fi
  done
  trap - ERR INT TERM
  echo "cluster-netns: $count nodes in namespaces hrnet-n1..hrnet-n$count on $subnet.0/24; clients run in $hub" >&2
  status_all
}

status_all() {
  printf '%-5s %-8s %-14s %s\n' NODE PID ADDRESS HEALTH
  local count; count=$(node_count)
  for i in $(seq 1 "$count"); do
    local pid="-" health="stopped"
    if [ -r "$run_dir/n$i/pid" ] && kill -0 "$(cat "$run_dir/n$i/pid")" 2>/dev/null; then
      pid=$(cat "$run_dir/n$i/pid")
      health=$(ip netns exec "$hub" timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/9100" && printf "GET /healthz HTTP/1.0\r\n\r\n" >&3 && head -n 1 <&3' "$(node_ip "$i")" 2>/dev/null | tr -d '\r' || true)
      [ -n "$health" ] || health="no answer"
    fi
    printf '%-5s %-8s %-14s %s\n' "n$i" "$pid" "$(node_ip "$i")" "$health"
  done
}

# cut "1,2|3,4,5": every node drops packets from the nodes of the other groups.
cut_groups() {
  command -v iptables >/dev/null || { echo "cluster-netns: partitions need iptables (apt-get install iptables)" >&2; exit 1; }
  local spec="$1"
  IFS='|' read -r -a groups <<<"$spec"
  [ "${#groups[@]}" -ge 2 ] || usage
  for a in $(seq 0 $((${#groups[@]} - 1))); do
    for node in ${groups[$a]//,/ }; do
      for b in $(seq 0 $((${#groups[@]} - 1))); do
        [ "$a" = "$b" ] && continue
        for other in ${groups[$b]//,/ }; do
          ip netns exec "$(node_ns "$node")" iptables -A INPUT -s "$(node_ip "$other")/32" -j DROP
        done
      done
    done
  done
  echo "cluster-netns: cut $spec" >&2
}

heal_all() {
  for i in $(seq 1 "$(node_count)"); do
    ip netns exec "$(node_ns "$i")" iptables -F INPUT 2>/dev/null || true
  done
  echo "cluster-netns: healed" >&2
}

case "${1:-}" in
  start) [ $# -ge 2 ] || usage; need_root; start_all "$2" ;;
  stop) need_root; stop_all ;;
  status) need_root; status_all ;;
  cut) [ $# -ge 2 ] || usage; need_root; cut_groups "$2" ;;
  heal) need_root; heal_all ;;
  *) usage ;;
esac
