#!/usr/bin/env bash
# What the replay sees of a write past a region's end (issue 36), on a GPU machine, after
# bench/replay_lane/run_gpu.sh made the capture (/tmp/rpl-replay-bench/capture) and unpacked the
# bundle: oob_scale.cu (pl_scale plus one write past the end of `out`), measured
# on the long-lived replay lane (bench/replay_lane --check), then one-shot without a checker, then
# under compute-sanitizer memcheck; and the original under memcheck
# (whether the replay's placement survives the tool at all).
#   bash bench/replay_lane/oob_probe.sh OUT
set -u
out=$1; mkdir -p "$out"
work=/tmp/rpl-replay-bench
export LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$work/bin:/usr/local/cuda/bin:$PATH"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
nvcc -cubin -arch="sm_${arch:-90}" bench/replay_lane/oob_scale.cu -o "$work/oob.cubin"
summary() { python3 -c 'import json,sys
try:
    d=json.load(open(sys.argv[1]))
except Exception as e:
    print("  no JSON:", e); sys.exit()
print("  placement:", d.get("placement"), "| verification passed:", d["verification"]["passed"], "| red zones:", d.get("red_zones"))' "$1"; }
echo "== the candidate on the long-lived replay lane (optimize's)"
replay_lane --capture "$work/capture" --check "$work/oob.cubin" --symbol oob_scale
echo "exit $? (0: refused)"
echo "== the candidate, one-shot replay, no checker"
rpl-replay-cuda "$work/capture" --code-object "$work/oob.cubin" --kernel oob_scale --timing events \
  --iterations 2 --warmup 0 --json-out "$out/oob.json" > "$out/oob.log" 2>&1
echo "exit $?"; summary "$out/oob.json"
for code in original candidate; do
  echo "== the $code under compute-sanitizer memcheck"
  args=(); [ $code = candidate ] && args=(--code-object "$work/oob.cubin" --kernel oob_scale)
  compute-sanitizer --tool memcheck --error-exitcode 86 --log-file "$out/memcheck-$code.log" \
    rpl-replay-cuda "$work/capture" "${args[@]}" --timing events --iterations 1 --warmup 0 \
    --json-out "$out/memcheck-$code.json" > "$out/memcheck-$code.out" 2>&1
  echo "exit $?"; summary "$out/memcheck-$code.json"
  grep -m3 "=========" "$out/memcheck-$code.log" | grep -v "COMPUTE-SANITIZER" | head -3
  tail -2 "$out/memcheck-$code.out"
done
