#!/usr/bin/env bash
# Mutation runner: breaks the code on purpose, one small patch at a time, and checks
# that the tests notice.
#
#   bash Deploy/mutate.sh            every mutant in Tests/mutants/mutants.tsv
#   bash Deploy/mutate.sh --fast     only those tagged fast (Deploy/test.sh runs these)
#   bash Deploy/mutate.sh NAME...    the named ones
#   bash Deploy/mutate.sh --list     list the mutants and stop
#
# Each mutant is a unified diff (Tests/mutants/<name>.patch) and a `swift test --filter`
# expression that must kill it. First the unmutated tree is built and every selected
# filter run on it: a filter that fails on clean code, or matches no test, is an error
# (its mutants would prove nothing). Then, per mutant: apply the patch (a patch that no
# longer applies is a broken mutant, never a survivor), build the test product, run the
# filter. Killed: the tests failed. Survived: they passed. Broken: the patch did not
# apply or the tree did not build.
#
# The working tree is never touched. The runner needs root: in a private mount namespace
# (unshare -m) it mounts an overlay over the repository's own path, so the copy sees the
# same absolute paths, reuses .build and rebuilds only what a patch changes (a copy at
# another path would rebuild everything). Writes, the patch included, go to a scratch
# directory that is removed at the end; nothing outside the namespace sees them. Do not
# build in the working tree while it runs (the overlay reads it live).
#
# Prints a table and `mutants: N killed, M survived, K broken`; exits 1 if any mutant
# survived or broke, 2 on an error (bad usage, a clean filter failing, the clean build).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd -P)
export PATH="/opt/swift/usr/bin:$PATH"
MANIFEST=Tests/mutants/mutants.tsv
BUILD_TIMEOUT=${MUTATE_BUILD_TIMEOUT:-1800}
TEST_TIMEOUT=${MUTATE_TEST_TIMEOUT:-900}

die() { echo "mutate.sh: $*" >&2; exit 2; }

# The inner half runs in the private mount namespace; see the end of the file.
INNER=0
if [ "${1:-}" = "--inner" ]; then INNER=1; scratch=${2:?}; shift 2; fi

if [ "$INNER" = 0 ]; then
  # As Deploy/test.sh: a HOMEROOM_* knob from a developer's shell (HOMEROOM_SEED,
  # HOMEROOM_SCHEDULES) would bend what the filters run.
  for knob in $(compgen -e | grep '^HOMEROOM_' || true); do
    echo "mutate.sh: ignoring $knob from the environment" >&2
    unset "$knob"
  done
fi

# --- The manifest: name, tags, filter, what (tab-separated; # comments) -------------
names=(); tags=(); filters=(); whats=()
while IFS=$'\t' read -r name tag filter what extra; do
  case "$name" in ''|'#'*) continue ;; esac
  [ -n "${filter:-}" ] && [ -z "${extra:-}" ] || die "$MANIFEST: line for '$name' needs 4 tab-separated fields (name, tags, filter, what)"
  [ -f "Tests/mutants/$name.patch" ] || die "$MANIFEST: no patch Tests/mutants/$name.patch for mutant '$name'"
  names+=("$name"); tags+=("$tag"); filters+=("$filter"); whats+=("${what:-}")
done < "$MANIFEST"
[ "${#names[@]}" -gt 0 ] || die "$MANIFEST lists no mutants"

# --- Which mutants -------------------------------------------------------------------
fast=0; list=0; wanted=()
while [ $# -gt 0 ]; do
  case "$1" in
    --fast) fast=1 ;;
    --list) list=1 ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) wanted+=("$1") ;;
  esac
  shift
done
selected=()
for want in "${wanted[@]+"${wanted[@]}"}"; do
  found=0
  for i in "${!names[@]}"; do [ "${names[$i]}" = "$want" ] && { selected+=("$i"); found=1; }; done
  [ "$found" = 1 ] || die "no mutant named '$want' in $MANIFEST (bash Deploy/mutate.sh --list)"
done
if [ "${#wanted[@]}" -eq 0 ]; then
  for i in "${!names[@]}"; do
    if [ "$fast" = 0 ] || [[ ",${tags[$i]}," == *",fast,"* ]]; then selected+=("$i"); fi
  done
fi
[ "${#selected[@]}" -gt 0 ] || die "no mutant selected"

if [ "$list" = 1 ]; then
  for i in "${selected[@]}"; do printf '%-30s %-5s %s\n' "${names[$i]}" "${tags[$i]}" "${whats[$i]}"; done
  exit 0
fi

# --- Outer half: scratch directory, namespace, cleanup ---------------------------------
if [ "$INNER" = 0 ]; then
  [ "$(id -u)" = 0 ] || die "needs root: it mounts an overlay over the repository in a private mount namespace (unshare -m), so the working tree is never touched"
  command -v unshare >/dev/null || die "needs unshare (util-linux)"
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/homeroom-mutate.XXXXXX")
  case "$scratch/" in "$ROOT/"*) rm -rf "$scratch"; die "the scratch directory $scratch lies inside the repository: set TMPDIR elsewhere" ;; esac
  case "$ROOT$scratch" in *[,:]*) rm -rf "$scratch"; die "overlay mount options cannot name $ROOT or $scratch (a comma or colon in the path)" ;; esac
  cleanup() {
    local status=$?
    # The namespace (and its mounts) ended with the inner half; what it wrote goes too.
    if [ -d "$scratch/logs" ] && [ "$status" != 0 ]; then
      local keep; keep=$(mktemp -d "${TMPDIR:-/tmp}/homeroom-mutate-logs.XXXXXX")
      cp -r "$scratch/logs/." "$keep/" && echo "mutate.sh: logs kept in $keep" >&2
    fi
    rm -rf "$scratch"
    exit "$status"
  }
  trap cleanup EXIT
  args=()
  if [ "${#wanted[@]}" -gt 0 ]; then args=("${wanted[@]}"); elif [ "$fast" = 1 ]; then args=(--fast); fi
  # Its own process group, so an interrupt stops the build or test under way too (and
  # with them the namespace and its mounts) before the scratch directory goes.
  setsid -w unshare --mount --propagation private -- bash "$ROOT/Deploy/mutate.sh" --inner "$scratch" "${args[@]+"${args[@]}"}" &
  inner=$!
  trap 'kill -TERM -- "-$inner" 2>/dev/null || true; wait "$inner" 2>/dev/null || true; echo "mutate.sh: interrupted" >&2; exit 130' INT TERM
  status=0
  wait "$inner" || status=$?
  exit "$status"
fi

# --- Inner half: in the private mount namespace -----------------------------------------
[ -d "$scratch" ] || die "internal: no scratch directory"
mkdir -p "$scratch/logs" "$scratch/base/upper" "$scratch/base/work"

mounted=0
# Lazily: a process a test left behind (a node still exiting) must not hold the run up.
unmount() { if [ "$mounted" = 1 ]; then cd /; umount -l "$ROOT"; mounted=0; fi; }
trap 'unmount || true' EXIT

# mount_tree LOWER UPPER WORK: the overlay at the repository's path.
mount_tree() {
  mount -t overlay overlay -o "lowerdir=$1,upperdir=$2,workdir=$3" "$ROOT" \
    || die "could not mount an overlay over $ROOT (needs overlayfs and a scratch directory outside it)"
  mounted=1
  cd "$ROOT"
}

# build_tree: the test product, and the homeroom binary the process tests start
# (NodeProcess runs .build/debug/homeroom; the test product alone does not relink it, so
# a node mutant would meet the unmutated binary and survive).
build_tree() {
  timeout --kill-after=30 "$BUILD_TIMEOUT" swift build --product HomeroomPackageTests \
    && timeout --kill-after=30 "$BUILD_TIMEOUT" swift build --product homeroom
}

# tests_run LOG: how many tests a swift test run ran (swift-testing and XCTest).
tests_run() {
  local st xc
  st=$(sed -n 's/.*Test run with \([0-9][0-9]*\) tests\{0,1\} .*/\1/p' "$1" | tail -n 1)
  xc=$(sed -n 's/.*Executed \([0-9][0-9]*\) tests\{0,1\},.*/\1/p' "$1" | tail -n 1)
  echo $(( ${st:-0} + ${xc:-0} ))
}

# first_failure LOG: the first failing test and where (swift-testing), or what failed.
first_failure() {
  local where
  local name='\("[^"]*"\|[^ ]*\)'
  where=$(sed -n "s/^✘ Test $name recorded an issue.* at \([A-Za-z0-9_+]*\.swift:[0-9]*\).*/\1 at \2/p" "$1" | head -n 1)
  [ -n "$where" ] || where=$(sed -n "s/^✘ Test $name .*failed after.*/\1/p" "$1" | head -n 1)
  [ -n "$where" ] || where=$(grep -m 1 -E 'Fatal error|error:|Crash|signal' "$1" | cut -c1-80)
  echo "${where:-the test run failed}"
}

started=$SECONDS
echo "== mutants: ${#selected[@]} selected; building the unmutated tree" >&2
mount_tree "$ROOT" "$scratch/base/upper" "$scratch/base/work"
if ! build_tree >"$scratch/logs/clean-build.log" 2>&1; then
  tail -n 30 "$scratch/logs/clean-build.log" >&2
  die "the unmutated tree does not build"
fi

# Every distinct filter once on clean code: it must pass and match at least one test.
declare -A clean_tests=()
for i in "${selected[@]}"; do
  filter=${filters[$i]}
  [ -n "${clean_tests[$filter]+x}" ] && continue
  log="$scratch/logs/clean-$(printf '%s' "$filter" | tr -c 'A-Za-z0-9' '_').log"
  if ! timeout --kill-after=30 "$TEST_TIMEOUT" swift test --skip-build --filter "$filter" >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    die "filter '$filter' (mutant ${names[$i]}) fails on the unmutated tree: its mutants would prove nothing"
  fi
  count=$(tests_run "$log")
  [ "$count" -gt 0 ] || die "filter '$filter' (mutant ${names[$i]}) matches no test: it would pass on any mutant"
  clean_tests[$filter]=$count
  echo "   clean: '$filter' passes ($count tests)" >&2
done
unmount
echo "== clean tree built and filters checked in $((SECONDS - started)) s" >&2

# Each mutant on a fresh overlay above the clean build: no state leaks between mutants.
killed=0; survived=0; broken=0
rows=()
for i in "${selected[@]}"; do
  name=${names[$i]}; filter=${filters[$i]}
  patch="$ROOT/Tests/mutants/$name.patch"
  layer="$scratch/m"
  rm -rf "$layer"; mkdir -p "$layer/upper" "$layer/work"
  log="$scratch/logs/$name.log"
  begun=$SECONDS
  mount_tree "$scratch/base/upper:$ROOT" "$layer/upper" "$layer/work"
  if ! git apply --check "$patch" >"$log" 2>&1 || ! git apply "$patch" >>"$log" 2>&1; then
    result=broken; detail="patch does not apply (stale mutant): $(head -n 1 "$log")"
  elif ! build_tree >>"$log" 2>&1; then
    result=broken; detail="does not build: $(grep -m 1 'error:' "$log" || echo 'see log')"
  else
    set +e
    timeout --kill-after=30 "$TEST_TIMEOUT" swift test --skip-build --filter "$filter" >>"$log" 2>&1
    rc=$?
    set -e
    if [ "$rc" = 0 ]; then
      result=SURVIVED; detail="all $(tests_run "$log") tests passed"
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      result=killed; detail="timed out after $TEST_TIMEOUT s"
    else
      result=killed; detail="by $(first_failure "$log")"
    fi
  fi
  unmount
  rm -rf "$layer"
  case "$result" in killed) killed=$((killed + 1)) ;; SURVIVED) survived=$((survived + 1)) ;; *) broken=$((broken + 1)) ;; esac
  seconds=$((SECONDS - begun))
  printf '   %-28s %-8s %4d s  %s\n' "$name" "$result" "$seconds" "$detail" >&2
  rows+=("$name"$'\t'"$result"$'\t'"$seconds"$'\t'"$filter"$'\t'"$detail")
done

echo
printf '| %-28s | %-8s | %5s | %-62s | %s |\n' "mutant" "result" "s" "filter (swift test --filter)" "detail"
printf '|%s|%s|%s|%s|%s|\n' "------------------------------" "----------" "-------" "----------------------------------------------------------------" "--------"
for row in "${rows[@]}"; do
  IFS=$'\t' read -r name result seconds filter detail <<<"$row"
  # A | in a cell would split it: escaped, as GitHub's tables read it.
  printf '| %-28s | %-8s | %5s | %-62s | %s |\n' "$name" "$result" "$seconds" "\`${filter//|/\\|}\`" "${detail//|/\\|}"
done
echo "mutants: $killed killed, $survived survived, $broken broken ($((SECONDS - started)) s)"
[ "$survived" = 0 ] && [ "$broken" = 0 ]
