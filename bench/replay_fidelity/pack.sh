#!/usr/bin/env bash
# bench/replay_fidelity/pack.sh BUILD_DIR OUT_DIR
#
# What bench/replay_fidelity/run_gpu.sh runs from on a GPU machine, within the device tool's 64 MiB
# carry: OUT_DIR/bundle.tar.xz, the programs, libraries and gpu tests of a scripts/bundle of
# BUILD_DIR (rocm-perf, rpl-replay-cuda, pointer_table, lib/ with the tracer, the capture library
# and libcupti, tests/gpu_tests). Build first (CUDA build):
#   ninja -C BUILD_DIR rocm-perf rpl-replay-cuda rpl_cupti_tracer rpl_cuda_capture pointer_table gpu_tests
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: bench/replay_fidelity/pack.sh BUILD_DIR OUT_DIR" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$1; mkdir -p "$2"; out=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
RPL_BUNDLE_MAX_MIB=200 "$root/scripts/bundle" "$build" "$tmp/b" > /dev/null
for f in bin/rocm-perf bin/rpl-replay-cuda bin/pointer_table lib/librpl_cupti_tracer.so \
  lib/librpl_cuda_capture.so tests/gpu_tests; do
  [[ -e $tmp/b/$f ]] || { echo "pack: $build lacks $f; fix: build it (see the header)" >&2; exit 1; }
done
(cd "$tmp/b" && tar -cf - bin/rocm-perf bin/rpl-replay-cuda bin/pointer_table lib tests env.sh |
  xz -9 -T2 > "$out/bundle.tar.xz")
# The gpu tests look for examples/ in the source folder they were compiled in (RPL_SOURCE_DIR).
grep -m1 '^CMAKE_HOME_DIRECTORY:' "$build/CMakeCache.txt" | cut -d= -f2 > "$out/source_dir.txt"
du -sh "$out/bundle.tar.xz"
