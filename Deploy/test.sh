#!/usr/bin/env bash
# The whole test suite: install what is missing, check generated code, fuzz briefly,
# then run every Swift test. The last lines are swift test's own summary.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
# Regenerating golden files turns their checks off (GoldenTests): never in a test run.
unset HOMEROOM_UPDATE_GOLDEN

echo "== generated protobuf-c code matches Proto/" >&2
bash Proto/generate.sh --check

if [ -x Fuzz/run.sh ] && [ "${HOMEROOM_FUZZ_SECONDS:-60}" != "0" ]; then
  echo "== fuzzing decode + merge for ${HOMEROOM_FUZZ_SECONDS:-60} s" >&2
  bash Fuzz/run.sh "${HOMEROOM_FUZZ_SECONDS:-60}" >&2
fi

quiet_build swift build
quiet_build swift build --build-tests

echo "== interop: a Python client written from docs/PROTOCOL.md against two real nodes" >&2
bash Tests/interop/run.sh >&2

echo "== chaos: a short partition and fault run against a real five-node cluster (the room on 3 of the 5 nodes, the nodes' default; one owner drains and comes back, a member under a new name joins and leaves)" >&2
# A fixed seed, so a red run replays exactly (HOMEROOM_CHAOS_SEED picks another);
# Deploy/chaos.sh alone (the soak) draws a random one.
# A 3 s reward window: the nodes fold rewards during the run, under the faults.
bash Deploy/chaos.sh --short --seed "${HOMEROOM_CHAOS_SEED:-20261201}" --reward-window-ms 3000 >&2
echo "== chaos: the same with closed rooms (tokens, cluster key, sealed topics, keys rotated by the ban)" >&2
bash Deploy/chaos.sh --short --seed "${HOMEROOM_CHAOS_SEED:-20261202}" --reward-window-ms 3000 --closed >&2
echo "== chaos: the same with every room on every node (--replicas 0)" >&2
bash Deploy/chaos.sh --short --seed "${HOMEROOM_CHAOS_SEED:-20261203}" --reward-window-ms 3000 --replicas 0 >&2

echo "== swift test (10,000 simulated schedules)" >&2
export HOMEROOM_SCHEDULES="${HOMEROOM_SCHEDULES:-10000}"
# Serial: the cluster suites block threads while they wait on real processes, which
# would starve the async transport tests of the two-core cooperative pool.
swift test --skip-build --no-parallel 2>&1
