#!/usr/bin/env bash
# bench/gemm_sweeps.sh [BUNDLE_DIR] -- issue 9's GEMM figures on an NVIDIA GPU host, in one go.
#
# From the repository root, with a bundle made by `scripts/bundle build .bundle` (and, for the
# Kernel Tuner baseline, Kernel Tuner importable: PYTHONPATH=.kt, see bench/kernel_tuner_gemm.py).
#   MODE=one   (default) Kernel Tuner's brute force over examples/cuda/space.json, then $REPEAT
#              sweeps of rocm-perf autotune with the kernel lane and the ground truth
#              (bench/gemm_ground_truth.py: Spearman, winner gap, tie set, pipeline, clocks).
#   MODE=scale the same space with --devices 0 and then --devices all (one lane per GPU), $REPEAT
#              pairs, alternating, with
#              $EXTRA (default "--min-time 0.1": long enough per candidate that the lanes, not the
#              compile pool, bound the sweep), no ground truth: candidates per second and each
#              lane's busy fraction.
# Env: OUT (results; the device tool sets it), REPEAT (3), LANES (kernel), WORKERS (nproc - 2),
# KEEP=1 keeps the results databases and their artifact folders (removed by default: the JSON
# results and logs hold the figures).
# Reads the GPUs only: never changes clocks or settings. Exit 0 when every step ran, 1 otherwise.
set -uo pipefail
bundle=${1:-.bundle}
OUT=${OUT:-./gemm-out}
MODE=${MODE:-one}
REPEAT=${REPEAT:-3}
LANES=${LANES:-kernel}
WORKERS=${WORKERS:-$(($(nproc) - 2))}
EXTRA=${EXTRA-"--min-time 0.1"}
[[ -f $bundle/env.sh ]] || { echo "gemm_sweeps: no bundle at '$bundle'" >&2; exit 1; }
# shellcheck source=/dev/null
source "$bundle/env.sh"
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$OUT"
nvidia-smi --query-gpu=index,name,uuid,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv
status=0
truth() { python3 bench/gemm_ground_truth.py --rocm-perf "$bundle/bin/rocm-perf" --workers "$WORKERS" "$@" || status=1; }
if [[ $MODE == one ]]; then
  if PYTHONPATH=.kt${PYTHONPATH:+:$PYTHONPATH} python3 -c 'import kernel_tuner' 2>/dev/null; then
    echo "== Kernel Tuner brute force =="
    PYTHONPATH=.kt${PYTHONPATH:+:$PYTHONPATH} python3 bench/kernel_tuner_gemm.py --out "$OUT/kt" --quiet || status=1
  else
    echo "== Kernel Tuner: not importable here (PYTHONPATH=.kt), its baseline NOT run =="
  fi
  echo "== rocm-perf autotune, $LANES lane(s), $REPEAT sweeps, $WORKERS compile workers =="
  truth --lanes "$LANES" --repeat "$REPEAT" --out "$OUT/truth"
else
  echo "== scaling: --devices 0, then --devices all ($EXTRA), alternating, $REPEAT pairs =="
  for ((i = 1; i <= REPEAT; i++)); do
    truth --lanes kernel --devices 0 --no-truth --out "$OUT/one-$i" --extra "$EXTRA"
    truth --lanes kernel --devices all --no-truth --out "$OUT/all-$i" --extra "$EXTRA"
  done
  python3 - "$OUT" "$REPEAT" <<'PY' || status=1
import json, statistics, sys
out, repeat = sys.argv[1], int(sys.argv[2])
rate = {}
for kind in ("one", "all"):
    rate[kind] = []
    for i in range(1, repeat + 1):
        doc = json.load(open(f"{out}/{kind}-{i}/kernel-0.json"))
        rate[kind].append(len(doc["candidates"]) / doc["wall_s"])
ratios = [a / o for a, o in zip(rate["all"], rate["one"])]
print("scaling: candidates/s one GPU " + " ".join(f"{r:.2f}" for r in rate["one"])
      + "; all GPUs " + " ".join(f"{r:.2f}" for r in rate["all"]))
print(f"scaling: ratio per pair " + " ".join(f"{r:.2f}" for r in ratios)
      + f"; ratio of medians {statistics.median(rate['all']) / statistics.median(rate['one']):.2f}")
PY
fi
if [[ ${KEEP:-0} != 1 ]]; then
  find "$OUT" -name '*.db.artifacts' -type d -prune -exec rm -rf {} +
  find "$OUT" \( -name '*.db' -o -name '*.db-wal' -o -name '*.db-shm' \) -delete
fi
exit $status
