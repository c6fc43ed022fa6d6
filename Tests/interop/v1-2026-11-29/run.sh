#!/usr/bin/env bash
# The protocol's compatibility promise, kept by a test: the interop client as it
# stood on 2026-11-29 (commit 24bb8e0), frozen with the protocol document and the
# .proto files it was written from, runs against today's nodes. Nothing here is
# edited but this script's paths: a v1 client written then must keep working
# (docs/PROTOCOL.md, "Versions"), so a change that breaks it fails the build.
#
#   swift build --product homeroom && Tests/interop/v1-2026-11-29/run.sh
#
# (The script as frozen, with the client, document and .proto paths pointed here.)
#
# Builds nothing: it runs $HOMEROOM_BIN (default .build/debug/homeroom). Sets up a
# Python venv with pynng and protobuf in .build/interop-venv (reused when it has
# them), starts two nodes on free ports, runs Tests/interop/python_client.py,
# and always stops the nodes. Exit status: the client's (2 for a setup problem).
#
# Environment: HOMEROOM_BIN, PYTHON (default python3), INTEROP_VENV,
# INTEROP_PIP (the pip requirements, default below), INTEROP_KEEP_LOGS=1 (print
# the nodes' logs even on success), INTEROP_PYENV=target (skip the venv and use
# pip install --target, as when the Python lacks ensurepip and apt-get is not
# an option).
set -euo pipefail
FROZEN=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$0")/../../.."
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

start_node() {  # name, [seed]: starts a node (in this shell, so the trap knows its pid) and waits for its ready line
  local name=$1 seed=${2:-} pid
  "$BIN" node --name "$name" --listen tcp://127.0.0.1:0 --publish tcp://127.0.0.1:0 ${seed:+--seed "$seed"} --session-timeout-ms 2000 \
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

# --- The client.
set +e
timeout 60 "$PY" "$FROZEN/python_client.py" --doc "$FROZEN/PROTOCOL.md" --proto "$FROZEN/proto" \
  --node-a "$LISTEN_A" --node-b "$LISTEN_B" \
  --node-a-pid "$(cat "$WORK/a.pid")" --session-timeout 2 --result "$WORK/result.json"
status=$?
set -e
if [ -s "$WORK/result.json" ]; then
  read -r passed failed < <("$PY" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["passed"], r["failed"])' "$WORK/result.json")
  if [ "$status" = 0 ] && [ "$failed" != 0 ]; then status=1; fi
  echo "interop (v1 client of 2026-11-29): $passed passed, $failed failed"
else
  say "the client stopped before reporting its checks (exit status $status; 124 means it ran over 60 s)"
  [ "$status" != 0 ] || status=1
fi
exit "$status"
