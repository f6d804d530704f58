#!/usr/bin/env bash
# bench/replay_lane on a GPU machine (docs/machines.md): the paired-round cost of the long-lived
# replay lane against the kernel lane on pipeline.cu's pl_scale, and the legacy per-process
# replay lane's. Run from the repository root on the device, with the carried bundle:
#   bash bench/replay_lane/run_gpu.sh .devcarry OUT
# Writes OUT/replay_lane.log (the bench's figures) and OUT/isolate.log.
set -u
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"; out=$(cd "$out" && pwd)
root=$(pwd)
work=/tmp/rpl-replay-bench
rm -rf "$work"; mkdir -p "$work"
tar -C "$work" -xJf "$carry/bundle.tar.xz"
export LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$work/bin:/usr/local/cuda/bin:$PATH"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
arch="sm_${arch:-90}"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm --format=csv,noheader
nvcc -O3 -arch="$arch" "$root/examples/cuda/pipeline.cu" -o "$work/pipeline" > "$out/nvcc.log" 2>&1
nvcc -cubin -arch="$arch" "$root/examples/cuda/pipeline.cu" -o "$work/pl_scale.cubin" >> "$out/nvcc.log" 2>&1
rocm-perf isolate --kernel '^pl_scale' --out "$work/capture" --force -- "$work/pipeline" --reps 1 \
  > "$out/isolate.log" 2>&1
echo "isolate: exit $?"; tail -3 "$out/isolate.log"
replay_lane --code-object "$work/pl_scale.cubin" \
  --launch "$root/bench/replay_lane/pl_scale_app.launch.json" --capture "$work/capture" \
  --rounds "${ROUNDS:-30}" --legacy-rounds "${LEGACY_ROUNDS:-3}" > "$out/replay_lane.log" 2>&1
echo "replay_lane: exit $?"
cat "$out/replay_lane.log"
# How the capture was placed here, and the red zones that placement allows (the one-shot replay).
rpl-replay-cuda "$work/capture" --timing events --json-out "$out/replay.json" > "$out/replay.log" 2>&1
echo "rpl-replay-cuda: exit $?"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("placement:", d.get("placement"), "| red zones:", d.get("red_zones"))' "$out/replay.json"
