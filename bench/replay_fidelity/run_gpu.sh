#!/usr/bin/env bash
# bench/replay_fidelity/run_gpu.sh CARRY OUT [run.sh's options...]
#
# Issue 29's replay check on a GPU machine, in one call, from a carried build: CARRY holds
# bundle.tar.xz (bench/replay_fidelity/pack.sh). Runs
#   1. the gpu tests of isolate and replay (tests/gpu/capture_replay_test.cpp: CUPTI timing by
#      default, events, batch, the fallback where CUPTI cannot be loaded, analyze --replay);
#   2. bench/replay_fidelity/run.sh --bin <bundle>/bin --out OUT/fidelity (norm_stencil's two
#      kernels and pointer_table's gather_scale: in-app median, replay median per timing method,
#      ratio, PASS/FAIL against 3 %), with any extra options given here.
# Writes OUT/gpu.txt, OUT/gpu-tests.log, OUT/fidelity/ (summary.txt, summary.json, every step's
# output) and prints a short summary last. Exit 0 when both passed.
set -u
[[ $# -ge 2 ]] || { echo "usage: bench/replay_fidelity/run_gpu.sh CARRY OUT [run.sh options]" >&2; exit 2; }
carry=$(cd "$1" && pwd); out=$2; shift 2
mkdir -p "$out"; out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
work=/tmp/rpl-replay-gpu
rm -rf "$work"; mkdir -p "$work"
tar -C "$work" -xJf "$carry/bundle.tar.xz" || { echo "run_gpu: cannot unpack $carry/bundle.tar.xz" >&2; exit 2; }
# shellcheck disable=SC1091
source "$work/env.sh"
export PATH="$PATH:/usr/local/cuda/bin"
# The gpu tests find examples/ under the source folder they were compiled in (pack.sh wrote its
# path); where this copy of the tree is elsewhere, a link puts it there.
built_in=$(cat "$carry/source_dir.txt" 2>/dev/null)
if [[ -n $built_in && ! -e $built_in ]]; then
  mkdir -p "$(dirname "$built_in")" 2>/dev/null && ln -s "$root" "$built_in" 2>/dev/null
fi
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"

started=$SECONDS
"$work/tests/gpu_tests" --gtest_filter='capture_replay.*' > "$out/gpu-tests.log" 2>&1
tests_rc=$?
tests_s=$((SECONDS - started))
started=$SECONDS
bash "$root/bench/replay_fidelity/run.sh" --bin "$work/bin" --out "$out/fidelity" \
  --work /tmp/rpl-replay-fidelity "$@" > "$out/fidelity.log" 2>&1
bench_rc=$?
bench_s=$((SECONDS - started))

echo
echo "== gpu tests (capture_replay.*): exit $tests_rc in $tests_s s =="
grep -E '^\[ +(OK|FAILED|SKIPPED) +\]|^\[  PASSED  \]|^\[  FAILED  \]' "$out/gpu-tests.log" | sort -u | head -20
echo
echo "== replay fidelity: exit $bench_rc in $bench_s s =="
cat "$out/fidelity/summary.txt" 2>/dev/null || tail -20 "$out/fidelity.log"
grep FAILED "$out/fidelity/steps.txt" 2>/dev/null
((tests_rc == 0 && bench_rc == 0))
