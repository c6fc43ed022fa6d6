#!/usr/bin/env bash
# Browser test of `homeroom web`: headless Chromium (three pages: a teacher and two
# students) against a real web process and two real nodes on 127.0.0.1.
#
#   swift build --product homeroom && bash Tests/web/run.sh
#
# Builds nothing: it runs $HOMEROOM_BIN (default .build/debug/homeroom). Needs Debian's
# chromium and chromium-driver (`bash Deploy/bootstrap.sh --browser` installs them) and
# sets up a Python venv with selenium in .build/web-venv (reused when it has it).
# Screenshots of every scene go to $WEB_SCREENSHOTS (default .build/web-screenshots).
# Exit status: the test's (2 for a setup problem).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
PYTHON=${PYTHON:-python3}
VENV=${WEB_VENV:-$ROOT/.build/web-venv}
REQUIREMENT=${WEB_PIP:-selenium==4.51.0}

say() { echo "web test: $*" >&2; }
fail() { say "$*"; exit 2; }

BIN=${HOMEROOM_BIN:-$ROOT/.build/debug/homeroom}
[ -x "$BIN" ] || fail "no homeroom binary at $BIN: build it with 'swift build --product homeroom' or set HOMEROOM_BIN"
command -v chromium >/dev/null || fail "chromium not found: bash Deploy/bootstrap.sh --browser (apt-get install chromium chromium-driver)"
command -v chromedriver >/dev/null || fail "chromedriver not found: bash Deploy/bootstrap.sh --browser (apt-get install chromium-driver)"

wanted=${REQUIREMENT#*==}
if ! "$VENV/bin/python" -c "import selenium, sys; sys.exit(selenium.__version__ != '$wanted')" 2>/dev/null; then
  say "setting up $VENV with $REQUIREMENT"
  "$PYTHON" -m venv "$VENV" || fail "cannot create a venv: apt-get install python3-venv (Deploy/bootstrap.sh does)"
  "$VENV/bin/pip" install -q "$REQUIREMENT" || fail "pip could not install $REQUIREMENT"
fi
HOMEROOM_BIN="$BIN" exec "$VENV/bin/python" Tests/web/classroom_browser_test.py
