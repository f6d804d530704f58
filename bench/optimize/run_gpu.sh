#!/usr/bin/env bash
# bench/optimize/run_gpu.sh CARRY OUT STEP...
#
# Runs `rocm-perf optimize` on a GPU machine from a carried build: CARRY holds bundle.tar.xz (a
# slim scripts/bundle: rocm-perf, rpl-kernel-lane, rpl-replay-cuda, the CUDA examples, lib/,
# tests/gpu_tests) and libclang.tar.xz (libclang-15 with its libraries under lib/ and its resource
# folder under res/: the rule proposer and the source guard load it at run time). Steps:
#   tests   the gpu tests of optimize (tests/gpu/optimize_test.cpp)
#   gemm    the README's command on examples/cuda/gemm.cu (rule proposer, default settings)
#   resume  the same command with --resume on gemm's folder: builds and measures nothing (after gemm)
#   copy    examples/cuda/stream_copy.cu, a memory-bound kernel where no rule should help
#   scale   examples/cuda/pipeline.cu's pl_scale (pl_scale.launch.json): the vector-load rule
#   app     -- pipeline (examples/cuda/pipeline.cu): --top 3 --devices all --app-build
#   parse   bench/optimize/parse_reuse on gemm.cu with this host's CUDA headers: a cold libclang
#           parse against a kept unit reparsed (the source guard's parses)
#   zones   bench/red_zones on gemm.cu's rpl_sgemm_tiled (64x64 tiles): the kernel lane's red
#           zones' cost per measurement, lanes with and without them alternating
# Each step's report goes to OUT/STEP/ (report.md, report.json, attempts.jsonl); a table last.
set -u
carry=$(cd "$1" && pwd); out=$2; shift 2
mkdir -p "$out"; out=$(cd "$out" && pwd)
root=$(pwd)
work=/tmp/rpl-optimize
rm -rf "$work"; mkdir -p "$work"
tar -C "$work" -xJf "$carry/bundle.tar.xz"
tar -C "$work" -xJf "$carry/libclang.tar.xz"
export LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export RPL_LIBCLANG="$work/lib/libclang-15.so.1"
export RPL_CLANG_RESOURCE_DIR="$work/res"
export RPL_SOURCE_DIR="$root"
export PATH="$work/bin:/usr/local/cuda/bin:$PATH"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
arch="sm_${arch:-90}"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm --format=csv,noheader
summary=()
run() { # name, then the command
  local name=$1; shift
  local started
  started=$(date +%s.%N)
  "$@" > "$out/$name.log" 2>&1
  local rc=$?
  summary+=("$name: exit $rc in $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s")
  tail -25 "$out/$name.log"
}
gemm_args=(--source "$root/examples/cuda/gemm.cu" --kernel rpl_sgemm_tiled
  --launch "$root/examples/cuda/gemm.launch.json"
  --build-template "nvcc -cubin -arch=$arch -DTILE_M={TILE_M} -DTILE_N={TILE_N} -DTILE_K={TILE_K} -DTHREAD_M={THREAD_M} -DTHREAD_N={THREAD_N} gemm.cu -o {OUT}"
  --param TILE_M=64 --param TILE_N=64 --param TILE_K=16 --param THREAD_M=4 --param THREAD_N=4
  --arch "$arch")
for step in "$@"; do
  case $step in
    tests) run tests "$work/tests/gpu_tests" --gtest_filter='OptimizeGpu.*' ;;
    gemm) run gemm rocm-perf optimize "${gemm_args[@]}" --out "$out/gemm" ;;
    resume)
      run resume rocm-perf optimize "${gemm_args[@]}" --out "$out/gemm" --resume
      grep -E "builds: |resumed: finished" "$out/resume.log" ;;
    copy) run copy rocm-perf optimize --source "$root/examples/cuda/stream_copy.cu" \
            --kernel stream_copy --launch "$root/examples/cuda/stream_copy.launch.json" \
            --build-template "nvcc -cubin -arch=$arch stream_copy.cu -o {OUT}" --arch "$arch" \
            --out "$out/copy" ;;
    scale) run scale rocm-perf optimize --source "$root/examples/cuda/pipeline.cu" \
            --kernel pl_scale --launch "$root/examples/cuda/pl_scale.launch.json" \
            --build-template "nvcc -cubin -arch=$arch pipeline.cu -o {OUT}" --arch "$arch" \
            --out "$out/scale" ;;
    app)
      # examples/cuda/pipeline.cu: three kernels, each captured and replayed; two GPUs share them,
      # and --app-build rebuilds the program from the accepted changes and profiles it again.
      mkdir -p "$work/app" && nvcc -O3 -arch="$arch" "$root/examples/cuda/pipeline.cu" \
        -o "$work/bin/pipeline" > "$out/app-nvcc.log" 2>&1
      run app rocm-perf optimize --source "$root/examples/cuda/pipeline.cu" --top 3 \
        --devices all --build-template "nvcc -cubin -arch=$arch pipeline.cu -o {OUT}" \
        --app-build "nvcc -O3 -arch=$arch pipeline.cu -o pipeline" \
        --iterations 1 --rounds 7 --runs-per-round 3 --time-budget 200 \
        --out "$out/app" -- pipeline ;;
    parse) run parse parse_reuse "$root/examples/cuda/gemm.cu" rpl_sgemm_tiled 3 ;;
    zones)
      nvcc -cubin -arch="$arch" -DTILE_M=64 -DTILE_N=64 -DTILE_K=16 -DTHREAD_M=4 -DTHREAD_N=4 \
        "$root/examples/cuda/gemm.cu" -o "$work/gemm.cubin" > "$out/zones-nvcc.log" 2>&1
      run zones red_zones --code-object "$work/gemm.cubin" \
        --launch "$root/examples/cuda/gemm.launch.json" --param TILE_M=64 --param TILE_N=64 \
        --param TILE_K=16 --param THREAD_M=4 --param THREAD_N=4 ;;
    *) echo "unknown step $step" ;;
  esac
done
for d in "$out"/*/; do rm -rf "$d/artifacts" "$d/app-profile" "$d/app-reprofile" "$d/captures" "$d/app-build"; done
printf '%s\n' "${summary[@]}"
