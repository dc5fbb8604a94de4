#!/usr/bin/env bash
# Checks the SPIN model of the job protocol (chokaq.pml): every property on
# the real model by exhaustive search, liveness under weak fairness, every
# witness reachable, and every broken variant caught by the property it
# breaks. Fails when the real model has a violation or a search is cut
# short, or when a witness or a broken variant yields no counterexample.
#
#   MODEL_VERBOSE=1   also replay each counterexample, narrated
#   MODEL_KEEP=dir    keep the generated verifiers and trails in dir
#   MODEL_MEMLIM=MB   memory bound of one search (default 2048)
#   MODEL_JOBS=1      one search at a time (default 2: the liveness lane
#                     runs beside the safety lane)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
model="$here/chokaq.pml"
SPIN="${SPIN:-spin}"
CC="${CC:-gcc}"
memlim="${MODEL_MEMLIM:-2048}"
verbose="${MODEL_VERBOSE:-0}"
jobs="${MODEL_JOBS:-2}"

for tool in "$SPIN" "$CC"; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "model: $tool not found (Debian: apt-get install spin gcc)" >&2
    exit 2
  fi
done

# Every generated file (pan.c, pan, trails) lives here, never in the repo.
work="$(mktemp -d "${TMPDIR:-/tmp}/chokaq-model.XXXXXX")"
finish() {
  if [ -n "${MODEL_KEEP:-}" ]; then
    mkdir -p "$MODEL_KEEP" && cp -r "$work"/. "$MODEL_KEEP"/
  fi
  rm -rf "$work"
}
trap finish EXIT

failures=0
started=$SECONDS

# build NAME "SPIN DEFINES" "CC FLAGS": a verifier in $work/NAME. A
# verbose run builds every verifier with the narration (-DNARRATE).
build() {
  local dir="$work/$1" defs="$2"
  if [ "$verbose" = 1 ]; then defs="$defs -DNARRATE"; fi
  mkdir -p "$dir"
  cp "$model" "$dir/chokaq.pml"
  if ! (cd "$dir" && $SPIN -a $defs chokaq.pml >spin.log 2>&1); then
    echo "model: spin -a $defs failed:" >&2
    cat "$dir/spin.log" >&2
    exit 2
  fi
  if ! (cd "$dir" && $CC $3 -DMEMLIM="$memlim" -o pan pan.c >cc.log 2>&1); then
    echo "model: $CC $3 pan.c failed:" >&2
    cat "$dir/cc.log" >&2
    exit 2
  fi
}

# field OUT PATTERN: the first number sed extracts from pan's output.
field() { sed -n "$2" "$1" | head -n 1; }

# check LABEL NAME EXPECT PAN-ARGS...: run the verifier NAME and judge it.
# EXPECT is "holds" (no error, full search), "claim" (a counterexample to
# the never claim: a safety violation) or "cycle" (an acceptance cycle).
check() {
  local label="$1" name="$2" expect="$3"
  shift 3
  local dir="$work/$name" out
  out="$dir/$label.out"
  local t0=$SECONDS
  (cd "$dir" && ./pan "$@" >"$out" 2>&1) || true
  local secs=$((SECONDS - t0))
  local errors stored trans depth mem ptime
  errors="$(field "$out" 's/.*errors: \([0-9][0-9]*\).*/\1/p')"
  stored="$(field "$out" 's/^ *\([0-9.e+]*\) states, stored.*/\1/p')"
  trans="$(field "$out" 's/^ *\([0-9.e+]*\) transitions.*/\1/p')"
  depth="$(field "$out" 's/.*depth reached \([0-9][0-9]*\).*/\1/p')"
  mem="$(field "$out" 's/^ *\([0-9.]*\)[[:space:]]*total actual memory usage.*/\1/p')"
  ptime="$(field "$out" 's/^pan: elapsed time \([0-9.e+]*\) seconds.*/\1/p')"
  local ok=1 why=""
  if [ -z "$errors" ] || [ -z "$stored" ]; then
    ok=0; why="no verifier report"
  elif grep -q "out of memory\|max search depth too small\|Bit statespace" "$out"; then
    ok=0; why="search cut short"
  else
    case "$expect" in
      holds)
        if [ "$errors" != 0 ]; then
          ok=0; why="$(grep -m1 '^pan:1:' "$out" || echo "$errors errors")"
        elif grep -q "Search not completed" "$out" || ! grep -q "Full statespace search" "$out"; then
          ok=0; why="search not completed"
        fi ;;
      claim)
        # pan stops at the first error; it must be the claim's own
        # assertion (SPIN writes it as !( !(...)), not one of the model's.
        if [ "$errors" = 0 ]; then
          ok=0; why="no counterexample"
        elif ! grep -q '^pan:1: assertion violated  !( !(' "$out"; then
          ok=0; why="wrong error: $(grep -m1 '^pan:1:' "$out")"
        fi ;;
      cycle)
        if [ "$errors" = 0 ]; then
          ok=0; why="no counterexample"
        elif ! grep -q '^pan:1: acceptance cycle' "$out"; then
          ok=0; why="wrong error: $(grep -m1 '^pan:1:' "$out")"
        fi ;;
    esac
  fi
  local verdict
  if [ "$ok" = 1 ]; then
    case "$expect" in holds) verdict="holds" ;; *) verdict="counterexample" ;; esac
  else
    verdict="FAIL"; failures=$((failures + 1))
  fi
  printf '%-44s %-14s states %9s  transitions %10s  depth %4s  memory %8s MB  %5ss\n' \
    "$label" "$verdict" "$stored" "$trans" "$depth" "$mem" "${ptime:-$secs}"
  if [ "$ok" = 0 ]; then
    echo "    $why" >&2
  fi
  if [ "$verbose" = 1 ] && [ "$expect" != holds ] && [ -f "$dir/chokaq.pml.trail" ]; then
    local args=()
    while [ $# -gt 0 ]; do
      case "$1" in -N) args+=(-N "$2"); shift ;; -a|-f) args+=("$1") ;; esac
      shift
    done
    (cd "$dir" && ./pan -r -n "${args[@]}" 2>&1) |
      grep -v -e '^[[:space:]]' -e '^MSC:' -e '^#processes' -e '^warning:' -e '^pan' -e '^spin:' \
        -e '^global vars' -e '^local vars' |
      sed 's/^/      /' || true
    echo "      => ${args[*]}: violated"
  fi
  rm -f "$dir/chokaq.pml.trail"
}

# pan's own flags: a search deeper than 100000 steps is reported as cut
# short, never silently truncated; -w sizes the hash table.
SAFE=(-m100000 -w22)
LIVE=(-m100000 -w23 -a -f)
SMALL=(-m100000 -w20)

# broken VARIANT PROPERTY SCENARIO: the variant, the property it must
# break, and the scenario that reaches the break soonest.
broken() {
  build "$1" "-D$1 -DSCENARIO=$3" "-O0 -DSAFETY"
  check "$1 -> $2" "$1" claim "${SMALL[@]}" -N "$2"
}

safety_lane() {
  echo "model: real model, safety (exhaustive search, every scenario)"
  build real "" "-Og -DSAFETY"
  for p in I1 I2 I3 I4 I6 IU I6K IS IW1 IW2; do
    check "$p" real holds "${SAFE[@]}" -N "$p"
  done
  echo "model: witnesses (each case must be reachable)"
  for w in W_stale_handler W_cap_handlers W_adoption W_orphan_row W_group_commit \
           W_cancel_running W_snooze W_retry W_start_reply_lost W_late_attempt \
           W_shutdown_retry W_snooze_meets_cancel W_chain W_chain_reply_lost W_zombie_retry \
           W_unique_dup W_unique_retake W_unique_drop W_flow_unparked W_seq_wait \
           W_wf_released W_wf_wait W_wf_step_after_crash; do
    check "$w" real claim "${SAFE[@]}" -N "$w"
  done
  echo "model: broken variants (each must be caught)"
  broken BROKEN_NO_LEASE_BUMP I1 1
  broken BROKEN_COMPLETE_NO_LEASE I1 1
  broken BROKEN_START_NO_STATUS I1 1
  broken BROKEN_ADOPT_BY_WORKER I1 6
  broken BROKEN_SPLIT_MOVE I2 1
  broken BROKEN_PHASE1_BUMPS_ATTEMPT I3 1
  broken BROKEN_CHAIN_UNBEATEN I3 6
  broken BROKEN_OUTPUT_UNFENCED I1 1
  broken BROKEN_UNIQUE_NO_LOCK IU 9
  broken BROKEN_RESURRECT_KEEPS_KEY IU 9
  broken BROKEN_KEY_COUNT_OUTSIDE_LOCK I6K 10
  broken BROKEN_SEQ_ONLY_IDLE IS 10
  broken BROKEN_RELEASE_BEFORE_COMMIT IW1 11
  broken BROKEN_RELEASE_LOST_ON_RESCUE IW2 11
  broken BROKEN_OWED_CLEARED_BEFORE_WALK_DONE IW2 12
  broken BROKEN_MOVE_WITHOUT_OWED IW2 12
}

# broken_live VARIANT PROPERTY SCENARIO: as broken, for a liveness
# property: an acceptance cycle under weak fairness.
broken_live() {
  build "$1" "-D$1 -DSCENARIO=$3" "-O2 -fno-tree-pre -fno-gcse -DNFAIR=3"
  check "$1 -> $2" "$1" cycle "${LIVE[@]}" -N "$2"
}

liveness_lane() {
  echo "model: real model, liveness under weak fairness (every scenario)"
  build live "" "-O2 -fno-tree-pre -fno-gcse -DNFAIR=3"
  check "L1" live holds "${LIVE[@]}" -N L1
  # Without fairness a process may idle forever beside one that acts:
  # L1 must then fail, or the fairness assumption would be doing nothing.
  check "L1 without fairness" live cycle -m100000 -w23 -a -N L1
  echo "model: broken variants (each must be caught)"
  broken BROKEN_NO_HEARTBEAT_FLOOR I3 1
  broken BROKEN_ZOMBIE_TO_PENDING I4 1
  broken BROKEN_RECOVER_WHILE_BEATING I4 8
  broken BROKEN_COUNT_OUTSIDE_LOCK I6 1
  broken_live BROKEN_WAIT_FOR_WAKEUP L1 7
  broken_live BROKEN_UNPARK_ON_CANDIDATES_ONLY L1 10
}

if [ "$jobs" -ge 2 ]; then
  # The liveness lane runs beside; its lines follow the safety lane's.
  ( failures=0; liveness_lane; echo "$failures" >"$work/live.failures" ) >"$work/live.log" 2>&1 &
  lane=$!
  safety_lane
  wait "$lane" || true
  cat "$work/live.log"
  failures=$((failures + $(cat "$work/live.failures" 2>/dev/null || echo 1)))
else
  safety_lane
  liveness_lane
fi

if [ "$failures" -gt 0 ]; then
  echo "model: $failures checks failed ($((SECONDS - started))s)" >&2
  exit 1
fi
echo "model: all checks passed ($((SECONDS - started))s)"
