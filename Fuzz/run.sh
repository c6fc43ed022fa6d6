#!/usr/bin/env bash
# Builds the libFuzzer target Fuzz/WireFuzz (decode + merge, with AddressSanitizer)
# and runs it for N seconds (default 60), seeded from the golden vectors.
#
#   Fuzz/run.sh [seconds]        e.g. Fuzz/run.sh 3600 for an hour
#   FUZZ_JOBS=2 Fuzz/run.sh 600  run 2 fuzzing processes in parallel
#
# The corpus grows in fuzz-corpus/wire (git-ignored) and is reused by later runs.
# A crash leaves its input in .build/fuzz/artifacts/ and this script exits 1;
# reproduce it with: .build/fuzz/wire-fuzz .build/fuzz/artifacts/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

seconds=${1:-60}
case "$seconds" in
  ''|*[!0-9]*) echo "Error: seconds must be a whole number, got '$seconds'" >&2; echo "usage: Fuzz/run.sh [seconds]" >&2; exit 64 ;;
esac

build=.build/fuzz
corpus=fuzz-corpus/wire
mkdir -p "$build/obj" "$build/artifacts" "$corpus"

if [ ! -f /usr/include/protobuf-c/protobuf-c.h ]; then
  echo "Error: libprotobuf-c-dev is missing; run Deploy/bootstrap.sh (or apt-get install -y libprotobuf-c-dev)" >&2
  exit 1
fi

sanitize=(-sanitize=fuzzer,address)
swift_flags=(-O -g -parse-as-library -swift-version 6 "${sanitize[@]}")

echo "fuzz: building (swiftc ${sanitize[*]}) into $build" >&2
# The generated C code, instrumented for coverage and ASan.
for source in Sources/CHomeroomProto/homeroom/v1/*.pb-c.c; do
  clang -c -O1 -g -fsanitize=fuzzer-no-link,address -w -I Sources/CHomeroomProto/include \
    "$source" -o "$build/obj/$(basename "$source" .c).o"
done
# HomeroomCore and HomeroomWire as modules, each one object (whole module).
mapfile -t core < <(find Sources/HomeroomCore -name '*.swift' | LC_ALL=C sort)
swiftc "${swift_flags[@]}" -module-name HomeroomCore -wmo -emit-module -emit-module-path "$build/HomeroomCore.swiftmodule" \
  -c "${core[@]}" -o "$build/obj/HomeroomCore.o"
mapfile -t wire < <(find Sources/HomeroomWire -name '*.swift' | LC_ALL=C sort)
swiftc "${swift_flags[@]}" -module-name HomeroomWire -wmo -emit-module -emit-module-path "$build/HomeroomWire.swiftmodule" \
  -I "$build" -I Sources/CHomeroomProto/include -c "${wire[@]}" -o "$build/obj/HomeroomWire.o"
# ld.gold warns about every ASan helper symbol ("Cannot export local symbol"): keep
# the link output out of sight unless the link fails.
if ! swiftc "${swift_flags[@]}" -module-name WireFuzz -I "$build" -I Sources/CHomeroomProto/include \
  Fuzz/WireFuzz/*.swift "$build"/obj/*.o -lprotobuf-c -o "$build/wire-fuzz" >"$build/link.log" 2>&1; then
  cat "$build/link.log" >&2
  echo "Error: linking the fuzz target failed" >&2
  exit 1
fi

# Seeds: the golden vectors (envelopes), plus whatever earlier runs found.
rm -rf "$build/seeds"
mkdir -p "$build/seeds"
cp Proto/golden/*.bin "$build/seeds/"

echo "fuzz: running for ${seconds}s (corpus $corpus, seeds Proto/golden)" >&2
jobs=${FUZZ_JOBS:-1}
extra=()
if [ "$jobs" -gt 1 ]; then extra=(-jobs="$jobs" -workers="$jobs"); fi
log=$build/fuzz.log
set +e
"$build/wire-fuzz" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$build/artifacts/" -print_final_stats=1 "${extra[@]}" "$corpus" "$build/seeds" >"$log" 2>&1
status=$?
set -e
grep -E 'INITED|DONE|stat::number_of_executed_units|stat::peak_rss_mb' "$log" >&2 || true
if [ "$status" -ne 0 ]; then
  echo "Error: the fuzzer found a problem (exit $status); last lines of $log:" >&2
  tail -40 "$log" >&2
  ls -1 "$build/artifacts" >&2 || true
  exit 1
fi
echo "fuzz: no crash in ${seconds}s; corpus now $(find "$corpus" -type f | wc -l) inputs" >&2
