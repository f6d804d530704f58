#!/usr/bin/env bash
# Replay fidelity (issue 14): the replayed time of a captured dispatch against the same kernel's
# in-application time from the CUPTI tracer (the named baseline). On a GPU host, with rocm-perf's
# CUDA build (a bundle's bin/ or build/bin/):
#   1. `rocm-perf profile --backend cuda --json -- pointer_table --rounds R` : gather_scale's median
#      GPU time over its R dispatches in the application (the tracer's kernel records);
#   2. `rocm-perf isolate --kernel gather_scale --dispatch D` : one of those dispatches captured;
#   3. `rocm-perf replay --iterations N --json` : verified bit-exactly at the original addresses,
#      then timed (events; the written outputs restored before each launch).
# Prints both medians, the replay's noise and the ratio replay / in-app (target within 3 %).
#
#   bench/replay_fidelity/run.sh [--bin DIR] [--rounds 30] [--dispatch 10] [--iterations 50]
#                                [--elements 8388608] [--out DIR]
# Exit 0 measured, 1 a step failed, 2 bad arguments or a missing program.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=${RPL_BIN:-$here/../../build/bin}
rounds=30
dispatch=10
iterations=50
elements=8388608
out=$(mktemp -d /tmp/rpl-replay-XXXXXX)
while [[ $# -gt 0 ]]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --dispatch) dispatch=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --elements) elements=$2; shift 2 ;;
    --out) out=$2; mkdir -p "$out"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "replay_fidelity: unknown argument '$1'; fix: see --help" >&2; exit 2 ;;
  esac
done
for p in rocm-perf pointer_table rpl-replay-cuda; do
  [[ -x $bin/$p ]] || { echo "replay_fidelity: no $bin/$p; fix: build with -DRPL_BUILD_CUDA=ON, or --bin a bundle's bin/" >&2; exit 2; }
done
app=("$bin/pointer_table" --rounds "$rounds" --elements "$elements")

"$bin/rocm-perf" profile --backend cuda --runs 1 --json --out "$out/profile" -- "${app[@]}" \
  >"$out/profile.json" 2>"$out/profile.log" || { echo "replay_fidelity: profile failed (see $out/profile.log)" >&2; tail -5 "$out/profile.log" >&2; exit 1; }
"$bin/rocm-perf" isolate --kernel gather_scale --dispatch "$dispatch" --out "$out/capture" --force \
  -- "${app[@]}" >"$out/isolate.log" 2>&1 || { echo "replay_fidelity: isolate failed" >&2; tail -5 "$out/isolate.log" >&2; exit 1; }
"$bin/rocm-perf" replay "$out/capture" --iterations "$iterations" --json >"$out/replay.json" \
  2>"$out/replay.log" || { echo "replay_fidelity: replay failed" >&2; cat "$out/replay.json" "$out/replay.log" >&2; exit 1; }

python3 - "$out/profile.json" "$out/replay.json" "$rounds" "$dispatch" <<'PY'
import json, sys
profile = json.load(open(sys.argv[1]))
replay = json.load(open(sys.argv[2]))
kernel = next(k for k in profile["kernels"] if "gather_scale" in k["name"])
in_app_us = kernel["median_ms"] * 1e3
t = replay["timing"]
replay_us = t["median_ns"] / 1e3
print(f"device: {replay['device']['name']} ({replay['device']['arch']})")
print(f"in-app (CUPTI tracer): gather_scale median {in_app_us:.2f} us over {kernel['dispatches']} dispatches, cv {100*kernel['cv']:.2f} %")
print(f"replay (dispatch {sys.argv[4]}, {replay['addresses']} addresses, {replay['verification']['mode']} "
      f"{'passed' if replay['verification']['passed'] else 'FAILED'}): median {replay_us:.2f} us over {t['iterations']} launches, cv {100*t['cv']:.2f} %")
print(f"ratio replay / in-app: {replay_us / in_app_us:.4f} (target within 0.97..1.03)")
PY
echo "files: $out"
