#!/usr/bin/env bash
# The main job: install what is missing, build, and run the live demo.
# Extra arguments go to `homeroom demo`.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
echo "demo: building (release; the first build takes a few minutes)" >&2
quiet_build swift build -c release --product homeroom
exec .build/release/homeroom demo "$@"
