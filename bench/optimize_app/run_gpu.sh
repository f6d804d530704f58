#!/usr/bin/env bash
# bench/optimize_app/run_gpu.sh CARRY OUT [STEP...]
#
# Issue 37's benchmark: `rocm-perf optimize --top 4 -- ./app 5` on bench/optimize_app/app.cu, an
# application of four kernels written for it, in the specification's form: no --source (the
# kernels are found in --source-dir, by default the current directory, which is the folder the app
# is built in here). CARRY is the carried folder of bench/optimize/run_gpu.sh: bundle.tar.xz (a
# slim scripts/bundle: rocm-perf, rpl-kernel-lane, rpl-replay-cuda, the CUPTI tracer, lib/) and
# libclang.tar.xz (libclang-15 under lib/, its resource folder under res/). Steps (default: app
# one all):
#   app   build app.cu with nvcc in a fresh source folder and run it once: its checks and each
#         kernel's median time (the sizes are meant to give 50-200 us a dispatch)
#   one   optimize --top 4 on one GPU (device 0), wall time taken with date +%s.%N
#   all   the same with --devices all, when nvidia-smi -L lists at least 2 GPUs (else skipped)
# Each optimize run writes under /tmp; report.json, report.md, attempts.jsonl, the accepted diffs,
# app-build.log and the run's log are copied to OUT/one/ or OUT/all/. Last: each kernel's fate from
# report.json (python3), both wall times and all/one (issue 37 asks for at most 0.6).
#
# Environment:
#   APP_ITERS          the application's argument, its iterations (default 5, as above): each
#                      kernel's dispatches in optimize's before/after application profiles
#   OPT_ARGS           more optimize options, before the -- (e.g. "--time-budget 240" or
#                      "--source-dir ."); word-split
#   RPL_BUILD_TEMPLATE the candidates' build template (default "nvcc -cubin -arch=ARCH app.cu -o
#                      {OUT}"); set it empty to leave --build-template out
#   ONE_WALL_S         the one-GPU wall time of an earlier call, for the ratio when this call
#                      runs `all` alone
#   RPL_CALL_BUDGET_S  seconds this whole script may take (default 580: the device tool stops a
#                      command at 600); each optimize run is sent SIGINT (it stops after the attempt
#                      in flight and writes its report) before that, and a step with under 60 s
#                      left is not started
set -u
if [ $# -lt 2 ]; then
  echo "usage: bash bench/optimize_app/run_gpu.sh CARRY OUT [app] [one] [all]" >&2
  exit 2
fi
started=$(date +%s)
carry=$(cd "$1" && pwd); out=$2; shift 2
mkdir -p "$out"; out=$(cd "$out" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(app one all)
work=/tmp/rpl-optimize-app
rm -rf "$work"; mkdir -p "$work/src" "$work/runs"
tar -C "$work" -xJf "$carry/bundle.tar.xz"
tar -C "$work" -xJf "$carry/libclang.tar.xz"
export LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export RPL_LIBCLANG="$work/lib/libclang-15.so.1"
export RPL_CLANG_RESOURCE_DIR="$work/res"
export PATH="$work/bin:/usr/local/cuda/bin:$PATH"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
arch="sm_${arch:-90}"
gpus=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm --format=csv,noheader
budget_s=${RPL_CALL_BUDGET_S:-580}
build_template=${RPL_BUILD_TEMPLATE-"nvcc -cubin -arch=$arch app.cu -o {OUT}"}
# Run in the source folder by the engine's --app-build: a scratch copy of the sources, {SRC_DIR}.
app_build="nvcc -O3 -arch=$arch {SRC_DIR}/app.cu -o {SRC_DIR}/app"
# Only app.cu and the app it builds are in the source folder: what optimize searches.
src=$work/src
cp "$here/app.cu" "$src/"
read -r -a extra <<< "${OPT_ARGS:-}"
summary=()
declare -A wall_s=()

elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

build_app() {
  [ -x "$src/app" ] && return 0
  nvcc -O3 -arch="$arch" "$src/app.cu" -o "$src/app" > "$out/app-nvcc.log" 2>&1
  local rc=$?
  [ $rc -ne 0 ] && { echo "nvcc failed (exit $rc):"; cat "$out/app-nvcc.log"; }
  return $rc
}

fates() { # report.json: each kernel's fate, and the application before and after
  python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for k in r.get("kernels", []):
    fate = k.get("fate", k.get("status", "?"))
    why = k.get("reason") or k.get("error") or ""
    line = f"  {k.get('kernel', '?'):<18} {fate:<12}"
    if k.get("original_ns"):
        line += f" {k['original_ns'] / 1e3:9.2f} us"
        if fate == "improved" and k.get("best_ns"):
            line += f" -> {k['best_ns'] / 1e3:9.2f} us"
    fc = k.get("final_comparison") or {}
    if fc.get("speedup"):
        line += f"  {fc['speedup']:.3f}x"
    for key in ("seconds", "time_s", "elapsed_s", "spent_s"):
        if key in k:
            line += f"  {float(k[key]):.1f} s"
            break
    line += f"  attempts {len(k.get('attempts', []))}"
    print(line + (f"  ({why})" if why else ""))
app = r.get("application") or {}
for side in ("before", "after"):
    if side in app:
        print(f"  application {side}: {app[side].get('summary', app[side])}")
if "after_error" in app:
    print(f"  application after: {app['after_error']}")
for key in ("gpu_time_speedup", "critical_path_speedup", "gpu_share_before", "gpu_share_after"):
    if key in app:
        print(f"  {key}: {app[key]:.3f}")
for line in app.get("skipped", []):
    print(f"  skipped: {line}")
EOF
}

optimize() { # name, then any options for this run (--devices all)
  local name=$1; shift
  local left=$((budget_s - ($(date +%s) - started) - 20))
  if [ $left -lt 60 ]; then
    summary+=("$name: not started, ${left} s left of this call's ${budget_s} s; run it alone")
    return
  fi
  build_app || { summary+=("$name: the app did not build"); return; }
  [ $left -gt 560 ] && left=560
  local dir=$work/runs/$name
  local template=()
  [ -n "$build_template" ] && template=(--build-template "$build_template")
  local t0
  t0=$(date +%s.%N)
  (cd "$src" && timeout -s INT -k 60 "$left" rocm-perf optimize --top 4 "${template[@]}" \
      --app-build "$app_build" --out "$dir" "$@" "${extra[@]}" -- ./app "${APP_ITERS:-5}") \
    > "$out/$name.log" 2>&1
  local rc=$?
  wall_s[$name]=$(elapsed "$t0")
  mkdir -p "$out/$name"
  for f in report.json report.md attempts.jsonl app-build.log "$dir"/*.diff; do
    f=$(basename "$f")
    [ -f "$dir/$f" ] && cp "$dir/$f" "$out/$name/"
  done
  cp "$out/$name.log" "$out/$name/optimize.log"
  summary+=("$name: exit $rc in ${wall_s[$name]} s$([ $rc -eq 124 ] || [ $rc -eq 130 ] \
    && echo " (stopped by the ${left} s limit)")")
  tail -15 "$out/$name.log"
  if [ -f "$dir/report.json" ]; then
    echo "$name: fates"
    fates "$dir/report.json" | tee "$out/$name/fates.txt"
  else
    echo "$name: no report.json"
  fi
}

for step in "${steps[@]}"; do
  case $step in
    app)
      if build_app; then
        t0=$(date +%s.%N)
        (cd "$src" && ./app 5) > "$out/app.log" 2>&1
        rc=$?
        cat "$out/app.log"
        summary+=("app: exit $rc in $(elapsed "$t0") s (nvcc -O3 -arch=$arch, 5 iterations)")
      else
        summary+=("app: nvcc failed")
      fi ;;
    one) optimize one --devices 0 ;;
    all)
      if [ "$gpus" -ge 2 ]; then
        optimize all --devices all
      else
        summary+=("all: skipped, nvidia-smi -L lists $gpus GPU")
      fi ;;
    *) echo "unknown step $step (app, one, all)" ;;
  esac
done

echo
printf '%s\n' "${summary[@]}"
one=${wall_s[one]:-${ONE_WALL_S:-}}
all=${wall_s[all]:-}
[ -n "$one" ] && echo "wall, one GPU:         $one s (issue 37: at most 300 s)"
[ -n "$all" ] && echo "wall, --devices all:   $all s on $gpus GPUs"
if [ -n "$one" ] && [ -n "$all" ]; then
  awk -v a="$all" -v o="$one" 'BEGIN { r = a / o; printf "all / one:             %.3f (issue 37: at most 0.6; %s)\n", r, (r <= 0.6 ? "met" : "not met") }'
fi
