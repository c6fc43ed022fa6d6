#!/usr/bin/env bash
# Interop test: a Python client written from docs/PROTOCOL.md alone joins a room
# through two real `homeroom node` processes on 127.0.0.1.
#
#   swift build --product homeroom && Tests/interop/run.sh
#
# Builds nothing: it runs $HOMEROOM_BIN (default .build/debug/homeroom). Sets up a
# Python venv with pynng and protobuf in .build/interop-venv (reused when it has
# them), starts two nodes on free ports (with a 1 s reward window, so they fold
# rewards within seconds), and two closed nodes C and D (--token-key and
# --cluster-key, keys from `homeroom keys generate`, D seeded from C) with join
# tokens for their room, and a TLS node T (tls+tcp:// listen and publish
# addresses, certificates from Deploy/tls-certs.sh, plus a second CA the client
# must not accept), runs Tests/interop/python_client.py (which also starts two
# nodes of its own and restarts one without a store, for the retirement of replica
# ids), and always stops the nodes. The client follows each room through the node's room
# streams (SP over WebSocket on the publish port: ws://, wss:// on T) when the hello says
# room_streams, and checks that a stream carries its room's topics and nothing else.
# Exit status: the client's (2 for a setup problem).
#
# Environment: HOMEROOM_BIN, PYTHON (default python3), INTEROP_VENV,
# INTEROP_PIP (the pip requirements, default below), INTEROP_KEEP_LOGS=1 (print
# the nodes' logs even on success), INTEROP_PYENV=target (skip the venv and use
# pip install --target, as when the Python lacks ensurepip and apt-get is not
# an option).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)

BIN=${HOMEROOM_BIN:-$ROOT/.build/debug/homeroom}
PYTHON=${PYTHON:-python3}
VENV=${INTEROP_VENV:-$ROOT/.build/interop-venv}
# protobuf 4.21.x is the runtime for the code protoc 3.21 (Debian 12's) generates.
REQUIREMENTS=${INTEROP_PIP:-"pynng==0.8.0 protobuf==4.21.12"}

say() { echo "interop: $*" >&2; }
fail() { say "$*"; exit 2; }

[ -x "$BIN" ] || fail "no homeroom binary at $BIN: build it with 'swift build --product homeroom' or set HOMEROOM_BIN"
command -v protoc >/dev/null || fail "protoc not found: apt-get install protobuf-compiler (Deploy/bootstrap.sh does)"
command -v "$PYTHON" >/dev/null || fail "$PYTHON not found: set PYTHON to a Python 3 interpreter"

# --- Python environment: a venv, or (without ensurepip) a pip --target directory.
requirements_met() {  # $1: python, with PYTHONPATH already set as needed
  "$1" - "$REQUIREMENTS" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
for requirement in sys.argv[1].split():
    name, _, wanted = requirement.partition("==")
    if wanted and version(name) != wanted:
        sys.exit(1)
    __import__({"protobuf": "google.protobuf"}.get(name, name.replace("-", "_")))
EOF
}

PIP_FLAGS=(--disable-pip-version-check --root-user-action=ignore -q)
MODE=${INTEROP_PYENV:-venv}
PY=""
if [ "$MODE" != target ] && [ -x "$VENV/bin/python" ] && requirements_met "$VENV/bin/python"; then
  PY="$VENV/bin/python"
elif [ -d "$VENV/site" ] && PYTHONPATH="$VENV/site" requirements_met "$PYTHON"; then
  PY="$PYTHON"; export PYTHONPATH="$VENV/site${PYTHONPATH:+:$PYTHONPATH}"
else
  if [ "$MODE" != target ] && [ ! -x "$VENV/bin/python" ]; then
    rm -rf "$VENV"
    if ! "$PYTHON" -m venv "$VENV" >/dev/null 2>&1; then
      rm -rf "$VENV"
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ "$("$PYTHON" -c 'import sys; print(sys.executable)')" = /usr/bin/python3 ]; then
        say "python3 -m venv failed; installing python3-venv"
        apt-get install -y -qq python3-venv >/dev/null || true
        "$PYTHON" -m venv "$VENV" >/dev/null 2>&1 || rm -rf "$VENV"
      fi
    fi
  fi
  if [ "$MODE" != target ] && [ -x "$VENV/bin/python" ]; then
    say "installing $REQUIREMENTS into $VENV"
    "$VENV/bin/python" -m pip install "${PIP_FLAGS[@]}" $REQUIREMENTS >&2 \
      || fail "pip could not install $REQUIREMENTS into $VENV"
    PY="$VENV/bin/python"
  else
    say "no venv available; installing $REQUIREMENTS into $VENV/site with pip --target"
    mkdir -p "$VENV/site"
    "$PYTHON" -m pip install "${PIP_FLAGS[@]}" --upgrade --target "$VENV/site" $REQUIREMENTS >&2 \
      || fail "pip could not install $REQUIREMENTS (is pip available for $PYTHON?)"
    PY="$PYTHON"; export PYTHONPATH="$VENV/site${PYTHONPATH:+:$PYTHONPATH}"
  fi
  requirements_met "$PY" || fail "$REQUIREMENTS did not install into a usable environment"
fi

# --- Two nodes on free ports (port 0; the ready line says which were bound).
WORK=$(mktemp -d "${TMPDIR:-/tmp}/homeroom-interop.XXXXXX")
PIDS=()
cleanup() {
  local status=$?
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "$status" != 0 ] || [ "${INTEROP_KEEP_LOGS:-0}" = 1 ]; then
    for log in "$WORK"/*.log; do
      [ -s "$log" ] || continue
      echo "--- last lines of $(basename "$log")" >&2
      tail -n 15 "$log" >&2
    done
  fi
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A short reward window, so the nodes fold rewards within seconds (the client's reward-fold check).
REWARD_WINDOW_MS=1000
start_node() {  # name, [seed], [node flags...]: starts a node (in this shell, so the trap knows its pid) and waits for its ready line
  local name=$1 seed=${2:-} scheme=${NODE_SCHEME:-tcp} pid  # NODE_SCHEME=tls+tcp: TLS on both sockets
  shift $(( $# < 2 ? $# : 2 ))
  "$BIN" node --name "$name" --listen "$scheme://127.0.0.1:0" --publish "$scheme://127.0.0.1:0" ${seed:+--seed "$seed"} --session-timeout-ms 2000 \
    --reward-window-ms "$REWARD_WINDOW_MS" --max-clock-drift-ms 1000 "$@" \
    >"$WORK/$name.ready" 2>"$WORK/$name.log" &
  pid=$!
  PIDS+=("$pid")
  echo "$pid" >"$WORK/$name.pid"
  for _ in $(seq 100); do
    if grep -q '"event":"ready"' "$WORK/$name.ready" 2>/dev/null; then
      say "node $name: $(head -n 1 "$WORK/$name.ready")"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || fail "node $name exited before it was ready"
    sleep 0.1
  done
  fail "node $name did not print its ready line within 10 s"
}
listen_of() { "$PY" -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["listen"])' "$WORK/$1.ready"; }

start_node a
LISTEN_A=$(listen_of a)
start_node b "$LISTEN_A"
LISTEN_B=$(listen_of b)

# --- Two closed nodes (docs/PROTOCOL.md, "Authentication" and "Closed rooms"): C, and D seeded from C.
KEYS="$WORK/keys"
mkdir -m 700 "$KEYS"
"$BIN" keys generate --out "$KEYS" >/dev/null || fail "homeroom keys generate --out $KEYS failed"
CLOSED=(--token-key "$KEYS/token-signing.pub" --cluster-key "$KEYS/cluster.key")
start_node c "" "${CLOSED[@]}"
LISTEN_C=$(listen_of c)
start_node d "$LISTEN_C" "${CLOSED[@]}"
LISTEN_D=$(listen_of d)
CLOSED_ROOM="closed-$$-$(date +%s)"
token() {  # room, user, role
  "$BIN" token create --key "$KEYS/token-signing.key" --room "$1" --user "$2" --role "$3" \
    || fail "homeroom token create --room $1 --user $2 --role $3 failed"
}
TEACHER_TOKEN=$(token "$CLOSED_ROOM" teach teacher)
STUDENT_TOKEN=$(token "$CLOSED_ROOM" stu-1 student)
STUDENT2_TOKEN=$(token "$CLOSED_ROOM" stu-2 student)
WRONG_ROOM_TOKEN=$(token "elsewhere-$$" stu-1 student)

# --- A TLS node (docs/PROTOCOL.md and docs/SECURITY.md, "TLS"): T on tls+tcp://, with a CA and a
# node certificate (SANs localhost and 127.0.0.1) from Deploy/tls-certs.sh, and a second, unrelated CA.
TLS="$WORK/tls"
OTHER_CA="$WORK/tls-other"
for dir in "$TLS" "$OTHER_CA"; do
  "$ROOT/Deploy/tls-certs.sh" "$dir" 2>>"$WORK/tls-certs.log" || fail "Deploy/tls-certs.sh $dir failed"
done
NODE_SCHEME=tls+tcp start_node t "" --tls-cert "$TLS/node.pem" --tls-key "$TLS/node.key" --tls-ca "$TLS/ca.pem"
LISTEN_T=$(listen_of t)
case "$LISTEN_T" in tls+tcp://*) ;; *) fail "node t listens on $LISTEN_T, not tls+tcp://" ;; esac

# --- The client.
set +e
timeout 150 "$PY" Tests/interop/python_client.py --node-a "$LISTEN_A" --node-b "$LISTEN_B" \
  --node-a-pid "$(cat "$WORK/a.pid")" --session-timeout 2 --reward-window "$((REWARD_WINDOW_MS / 1000))" \
  --closed-node "$LISTEN_C" --closed-node-b "$LISTEN_D" --closed-room "$CLOSED_ROOM" \
  --teacher-token "$TEACHER_TOKEN" --student-token "$STUDENT_TOKEN" --student2-token "$STUDENT2_TOKEN" \
  --wrong-room-token "$WRONG_ROOM_TOKEN" --cluster-key "$KEYS/cluster.key" \
  --tls-node "$LISTEN_T" --tls-ca "$TLS/ca.pem" --tls-wrong-ca "$OTHER_CA/ca.pem" \
  --homeroom-bin "$BIN" \
  --result "$WORK/result.json"
status=$?
set -e
if [ -s "$WORK/result.json" ]; then
  read -r passed failed < <("$PY" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["passed"], r["failed"])' "$WORK/result.json")
  if [ "$status" = 0 ] && [ "$failed" != 0 ]; then status=1; fi
  echo "interop: $passed passed, $failed failed"
else
  say "the client stopped before reporting its checks (exit status $status; 124 means it ran over 150 s)"
  [ "$status" != 0 ] || status=1
fi
exit "$status"
