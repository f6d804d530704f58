#!/usr/bin/env bash
# bench/compare/run_gpu.sh CARRY OUT
#
# Issue 38's GPU checks, one device call:
#   1. `rocm-perf compare` on real traces: bench/compare/gpu_app.cu (four kernels of 50-200 us,
#      40 launches each per run) is built twice with nvcc, as is and with -DSLOW_PCT=10 (spin_k
#      runs 10 % more iterations); `rocm-perf profile --backend cuda --runs 3` records the plain
#      build twice (base1, base2) and the slow build once (slow). Then compare base1 base2 (two
#      runs of the same unchanged application: every kernel should be `same`) and compare base1
#      slow (spin_k `slower` with an interval excluding 1, the rest `same`), each timed, --json and
#      the terminal table; --fail-on slower:5% on both (exit 0, then 1).
#   2. The uncoalesced class on ncu counters: the gpu test uncoalesced_class_gpu.* (a row gather
#      and a unit-stride copy, profile --counters roofline).
#   3. With OPTIMIZE_BUDGET_S set (and libclang.tar.xz in CARRY): `optimize --top 4
#      --time-budget OPTIMIZE_BUDGET_S -- ./app APP_ITERS` (default 40 iterations: 40 dispatches
#      of each kernel per application profile) on bench/optimize_app (its run_gpu.sh, step one), then
#      compare of the application profiles optimize recorded before (app-profile/) and after
#      (app-reprofile/), printed beside optimize's own fates. With --apply: the lines it changed
#      in the copy of app.cu optimize ran in.
# CARRY is scripts/devcarry's folder (bundle.tar.xz: rocm-perf, the CUPTI tracer, lib/, tests/).
# Everything the runs write is under OUT: base1/ base2/ slow/ (profile --out), same.json,
# slow.json, same.txt, slow.txt, slow.md, gpu_test.log.
set -u
if [ $# -ne 2 ]; then
  echo "usage: bash bench/compare/run_gpu.sh CARRY OUT" >&2
  exit 2
fi
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"; out=$(cd "$out" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=/tmp/rpl-compare-gpu
rm -rf "$work"; mkdir -p "$work"
tar -C "$work" -xJf "$carry/bundle.tar.xz"
export LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$work/bin:/usr/local/cuda/bin:$PATH"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm --format=csv,noheader
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
arch="sm_${arch:-90}"
nvcc -O3 -arch="$arch" -o "$work/app" "$here/gpu_app.cu" || exit 1
nvcc -O3 -arch="$arch" -DSLOW_PCT=10 -o "$work/app_slow" "$here/gpu_app.cu" || exit 1

profile() { # NAME APP
  local t0; t0=$(date +%s.%N)
  rocm-perf profile --backend cuda --runs 3 --out "$out/$1" -- "$2" > "$out/$1.log" 2>&1
  echo "profile $1: exit $? in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
}
profile base1 "$work/app"
profile base2 "$work/app"
profile slow "$work/app_slow"

compare() { # NAME NEW [options]
  local name=$1 new=$2; shift 2
  local t0; t0=$(date +%s.%N)
  rocm-perf compare "$out/base1" "$out/$new" --json "$@" > "$out/$name.json" 2> "$out/$name.err"
  local rc=$?
  echo "compare base1 $new --json: exit $rc in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
  rocm-perf compare "$out/base1" "$out/$new" > "$out/$name.txt" 2>&1
  cat "$out/$name.txt"
}
compare same base2
compare slow slow
rocm-perf compare "$out/base1" "$out/slow" --markdown > "$out/slow.md" 2>&1
rocm-perf compare "$out/base1" "$out/base2" --fail-on slower:5% > /dev/null 2>&1
echo "--fail-on slower:5% on base1 base2: exit $?"
rocm-perf compare "$out/base1" "$out/slow" --fail-on slower:5% > /dev/null 2>&1
echo "--fail-on slower:5% on base1 slow: exit $?"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
for name in ("same", "slow"):
    try:
        doc = json.load(open(f"{out}/{name}.json"))
    except Exception as e:  # the verb failed: its stderr is in NAME.err
        print(f"{name}: no JSON ({e})")
        continue
    for k in doc.get("kernels", []):
        ci = k.get("ratio_ci") or k.get("interval")
        print(f"{name}: {k.get('name')}: {k.get('verdict')} ratio {k.get('ratio')} ci {ci}")
PY

source_dir=$(cat "$carry/source_dir.txt" 2>/dev/null)
if [ -n "$source_dir" ] && [ ! -e "$source_dir" ]; then
  mkdir -p "$(dirname "$source_dir")"; ln -s "$PWD" "$source_dir"
fi
(cd "$work" && ./tests/gpu_tests --gtest_filter='uncoalesced_class_gpu.*') > "$out/gpu_test.log" 2>&1
echo "gpu test uncoalesced_class_gpu: exit $?"
tail -60 "$out/gpu_test.log"

if [ -n "${OPTIMIZE_BUDGET_S:-}" ] && [ -f "$carry/libclang.tar.xz" ]; then
  OPT_ARGS="--time-budget $OPTIMIZE_BUDGET_S --apply" RPL_CALL_BUDGET_S=$((OPTIMIZE_BUDGET_S + 90)) \
    APP_ITERS=${APP_ITERS:-40} \
    bash "$here/../optimize_app/run_gpu.sh" "$carry" "$out/optimize" one
  runs=/tmp/rpl-optimize-app/runs/one
  rocm-perf compare "$runs/app-profile" "$runs/app-reprofile" > "$out/optimize_compare.txt" 2>&1
  echo "compare app-profile app-reprofile: exit $?"
  cat "$out/optimize_compare.txt"
  rocm-perf compare "$runs/app-profile" "$runs/app-reprofile" --json \
    > "$out/optimize_compare.json" 2>/dev/null
  # --apply wrote every improved kernel's change into the copy of app.cu optimize ran in: that
  # file built and run beside the original (each kernel's median, CUDA events).
  grep "applied\|not applied" "$out/optimize/one.log"
  applied=/tmp/rpl-optimize-app/src/app.cu
  echo "--apply: $(diff "$here/../optimize_app/app.cu" "$applied" | grep -c '^[<>]') lines differ"
  nvcc -O3 -arch="$arch" "$here/../optimize_app/app.cu" -o "$work/app_original" &&
    nvcc -O3 -arch="$arch" "$applied" -o "$work/app_applied" &&
    for v in original applied; do echo "== $v"; "$work/app_$v" "${APP_ITERS:-40}"; done
fi
