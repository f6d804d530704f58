#!/usr/bin/env bash
# Compile throughput with N remote workers against one (issue 13): the same compile-bound GPU
# kernel (kernel.cpp, ~1 s per device-only build) swept over 16 x N distinct configurations with
# `--compile-workers 0`, N `rocm-perf worker compile --slots 1 --once` processes connected over
# TCP loopback, one lane running `true` (so the sweep is compile-bound), no artifact cache. For each
# N it prints compiles per second and the ratio to N x the one-worker throughput (target >= 0.9).
#
#   bench/compile_scaling/run.sh [--rocm-perf PATH] [--compiler hipcc|nvcc|g++]
#                                [--workers "1 2 4 8"] [--per-worker 16] [--out DIR]
#
# hipcc builds for gfx940 (Debian's hipcc, ROCm 5.2 / LLVM 15, knows no gfx942), nvcc for sm_90.
# Exit 0 done, 1 a sweep failed, 2 bad arguments or a missing tool.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
rocm_perf=${ROCM_PERF:-$here/../../build/bin/rocm-perf}
compiler=hipcc
counts="1 2"
per_worker=16
out=$(mktemp -d /tmp/rpl-scaling-XXXXXX)
while [[ $# -gt 0 ]]; do
  case $1 in
    --rocm-perf) rocm_perf=$2; shift 2 ;;
    --compiler) compiler=$2; shift 2 ;;
    --workers) counts=$2; shift 2 ;;
    --per-worker) per_worker=$2; shift 2 ;;
    --out) out=$2; mkdir -p "$out"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compile_scaling: unknown argument '$1'; fix: see --help" >&2; exit 2 ;;
  esac
done
case $compiler in
  hipcc) build="hipcc -x hip --offload-arch=gfx940 --cuda-device-only --no-gpu-bundle-output -c -O3 -DVARIANT={VARIANT} kernel.cpp -o {OUT}" ;;
  nvcc) build="nvcc -x cu -cubin -arch=sm_90 -O3 -DVARIANT={VARIANT} kernel.cpp -o {OUT}" ;;
  g++) build="g++ -x c++ -O2 -D__global__= -D__device__= -DVARIANT={VARIANT} -c kernel.cpp -o {OUT}" ;;
  *) echo "compile_scaling: --compiler $compiler: use hipcc, nvcc or g++" >&2; exit 2 ;;
esac
# hipcc picks the NVIDIA platform where it finds nvcc; this bench compiles for AMD.
[[ $compiler == hipcc ]] && export HIP_PLATFORM=${HIP_PLATFORM:-amd}
command -v "$compiler" >/dev/null || { echo "compile_scaling: $compiler is not on PATH; fix: install it or pick another --compiler" >&2; exit 2; }
[[ -x $rocm_perf ]] || { echo "compile_scaling: $rocm_perf is not executable; fix: make build, or pass --rocm-perf" >&2; exit 2; }

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

declare -A rate
printf '%-8s %-6s %-9s %-10s %-12s %s\n' workers jobs wall_s compiled "compiles/s" "ratio vs N x 1 worker"
for n in $counts; do
  jobs=$((per_worker * n))
  python3 - "$jobs" >"$out/space-$n.json" <<'PY'
import json, sys
print(json.dumps({"params": {"VARIANT": list(range(int(sys.argv[1])))}}))
PY
  p=$(port)
  endpoint=tcp://127.0.0.1:$p
  "$rocm_perf" autotune --space "$out/space-$n.json" --source "$here/kernel.cpp" \
    --build-template "$build" --cmd-template true --runs 1 --warmup 0 --timeout 10 \
    --compile-workers 0 --listen "$endpoint" --max-in-flight $((2 * n + 2)) \
    --no-compile-cache --compile-timeout 300 --db "$out/run-$n.db" --json \
    >"$out/run-$n.json" 2>"$out/engine-$n.log" &
  engine=$!
  pids=()
  for ((i = 0; i < n; ++i)); do
    "$rocm_perf" worker compile --connect "$endpoint" --slots 1 --once --quiet \
      2>>"$out/workers-$n.log" &
    pids+=($!)
  done
  if ! wait "$engine"; then
    echo "compile_scaling: the sweep with $n workers failed; see $out/engine-$n.log" >&2
    kill "${pids[@]}" 2>/dev/null || true
    exit 1
  fi
  for pid in "${pids[@]}"; do wait "$pid" || true; done
  read -r wall compiled < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["wall_s"], d["counts"]["compiled"])' "$out/run-$n.json")
  r=$(python3 -c "print('%.3f' % ($compiled / $wall))")
  rate[$n]=$r
  base=${rate[1]:-}
  ratio=$([[ -n $base ]] && python3 -c "print('%.3f' % ($r / ($n * $base)))" || echo "(no 1-worker run)")
  printf '%-8s %-6s %-9.2f %-10s %-12s %s\n' "$n" "$jobs" "$wall" "$compiled" "$r" "$ratio"
done
echo "details: $out"
