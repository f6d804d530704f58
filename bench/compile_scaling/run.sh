#!/usr/bin/env bash
# Compile throughput with N remote workers against one (issue 13): the same compile-bound GPU
# kernel (kernel.cpp, ~2 to 5 s per device-only build) swept over PER x N distinct configurations
# with `--compile-workers 0`, N `rocm-perf worker compile --slots 1 --once` processes connected
# over TCP loopback, one lane running `true` (so the sweep is compile-bound), no artifact cache.
# For each N it prints compiles per second, the ratio to N x the one-worker throughput (target
# >= 0.9), and the two factors that ratio is the product of: "vs 1", one worker's mean compile
# time per job over this run's (the host: below 1 when its CPUs run each compile slower, from
# shared caches, clocks or a hypervisor's steal, also printed), and "busy", compile time /
# (N x wall) (the engine's dispatch and the sweep's start and end), over the one-worker run's.
# --rounds K repeats the whole list K times, each ratio against its own round's one-worker run,
# and ends with each N's median, min and max: a shared host drifts between runs a minute apart.
# --bare runs the same builds without the engine (N at once, from a thread pool), the host's own
# scaling to compare with; it also prints the compilers' CPU seconds per build. --compare runs
# both at each N, the bare host first then the engine, and prints the engine's throughput over
# the bare host's of a minute before ("vs bare": what the engine costs, the host's drift aside).
#
#   bench/compile_scaling/run.sh [--rocm-perf PATH] [--compiler hipcc|nvcc|g++] [--bare|--compare]
#                                [--workers "1 2 4 8"] [--per-worker 16] [--rounds 1] [--out DIR]
#
# hipcc builds for gfx940 (Debian's hipcc, ROCm 5.2 / LLVM 15, knows no gfx942), nvcc for sm_90.
# Exit 0 done, 1 a sweep failed, 2 bad arguments or a missing tool.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
rocm_perf=${ROCM_PERF:-$here/../../build/bin/rocm-perf}
compiler=hipcc
counts="1 2"
per_worker=16
modes=engine
rounds=1
out=$(mktemp -d /tmp/rpl-scaling-XXXXXX)
while [[ $# -gt 0 ]]; do
  case $1 in
    --rocm-perf) rocm_perf=$2; shift 2 ;;
    --compiler) compiler=$2; shift 2 ;;
    --workers) counts=$2; shift 2 ;;
    --per-worker) per_worker=$2; shift 2 ;;
    --bare) modes=bare; shift ;;
    --compare) modes="bare engine"; shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; mkdir -p "$out"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compile_scaling: unknown argument '$1'; fix: see --help" >&2; exit 2 ;;
  esac
done
case $compiler in
  hipcc) build="hipcc -x hip --offload-arch=gfx940 --cuda-device-only --no-gpu-bundle-output -c -O3 -DVARIANT={VARIANT} kernel.cpp -o {OUT}" ;;
  nvcc) build="nvcc -x cu -cubin -arch=sm_90 -O3 -DVARIANT={VARIANT} kernel.cpp -o {OUT}" ;;
  g++) build="g++ -x c++ -O2 -DVARIANT={VARIANT} -c kernel.cpp -o {OUT}" ;;
  *) echo "compile_scaling: --compiler $compiler: use hipcc, nvcc or g++" >&2; exit 2 ;;
esac
# hipcc picks the NVIDIA platform where it finds nvcc; this bench compiles for AMD.
[[ $compiler == hipcc ]] && export HIP_PLATFORM=${HIP_PLATFORM:-amd}
command -v "$compiler" >/dev/null || { echo "compile_scaling: $compiler is not on PATH; fix: install it or pick another --compiler" >&2; exit 2; }
[[ $modes == bare || -x $rocm_perf ]] || { echo "compile_scaling: $rocm_perf is not executable; fix: make build, or pass --rocm-perf" >&2; exit 2; }

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The same builds without the engine: N at a time from a thread pool, each in its own folder.
# Prints "wall_s compiled sum_compile_s cpu_s".
bare_run() {
  python3 - "$1" "$2" "$build" "$here/kernel.cpp" "$out/bare-$1-r$round" <<'PY'
import concurrent.futures, os, resource, shlex, shutil, subprocess, sys, time
n, jobs, template, source, root = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
os.makedirs(root, exist_ok=True)
def build(variant):
    d = os.path.join(root, str(variant))
    os.makedirs(d, exist_ok=True)
    shutil.copy(source, d)
    argv = [w.replace("{VARIANT}", str(variant)).replace("{OUT}", "artifact.out")
            for w in shlex.split(template)]
    start = time.monotonic()
    ok = subprocess.run(argv, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    return ok, time.monotonic() - start
start = time.monotonic()
with concurrent.futures.ThreadPoolExecutor(n) as pool:
    results = list(pool.map(build, range(jobs)))
wall = time.monotonic() - start
cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
shutil.rmtree(root)
print(wall, sum(ok for ok, _ in results), sum(t for ok, t in results if ok), cpu.ru_utime + cpu.ru_stime)
PY
}

# One sweep through the engine. Prints "wall_s compiled sum_compile_s overhead_cpu_s", the last
# being the engine's CPU time and the workers' own (their compilers' not counted).
engine_run() {
  local n=$1 jobs=$2 tag=$1-r$round
  python3 - "$jobs" >"$out/space-$tag.json" <<'PY'
import json, sys
print(json.dumps({"params": {"VARIANT": list(range(int(sys.argv[1])))}}))
PY
  local endpoint=tcp://127.0.0.1:$(port)
  # In a subshell whose `times` gives the engine's CPU (and its lanes', each a `true`).
  (
    "$rocm_perf" autotune --space "$out/space-$tag.json" --source "$here/kernel.cpp" \
      --build-template "$build" --cmd-template true --runs 1 --warmup 0 --timeout 10 \
      --compile-workers 0 --listen "$endpoint" --max-in-flight $((2 * n + 2)) \
      --no-compile-cache --compile-timeout 300 --db "$out/run-$tag.db" --json \
      >"$out/run-$tag.json" 2>"$out/engine-$tag.log" && times >"$out/engine-cpu-$tag"
  ) &
  local engine=$! pids=() i
  for ((i = 0; i < n; ++i)); do
    "$rocm_perf" worker compile --connect "$endpoint" --slots 1 --once \
      2>>"$out/workers-$tag.log" &
    pids+=($!)
  done
  if ! wait "$engine"; then
    echo "compile_scaling: the sweep with $n workers failed; see $out/engine-$tag.log" >&2
    kill "${pids[@]}" 2>/dev/null || true
    exit 1
  fi
  for pid in "${pids[@]}"; do wait "$pid" || true; done
  python3 - "$out/run-$tag.json" "$out/run-$tag.db" "$out/engine-cpu-$tag" \
    "$out/workers-$tag.log" "$n" <<'PY'
import json, re, sqlite3, sys
d = json.load(open(sys.argv[1]))
busy = sqlite3.connect(sys.argv[2]).execute(
    "select coalesce(sum(compile_ns), 0) from artifacts where compile_status = 'ok'").fetchone()[0]
# `times`: the shell's own line, then its children's ("0m0.120s 0m0.030s").
clock = lambda t: int(t.split("m")[0]) * 60 + float(t.split("m")[1].rstrip("s"))
engine = sum(clock(t) for t in open(sys.argv[3]).read().split("\n")[1].split())
own = re.findall(r"its own CPU ([0-9.]+) s", open(sys.argv[4]).read())
if len(own) != int(sys.argv[5]):
    sys.exit("compile_scaling: %d of %s workers logged their CPU time; see %s" % (
        len(own), sys.argv[5], sys.argv[4]))
workers = sum(float(x) for x in own)
print(d["wall_s"], d["counts"]["compiled"], busy / 1e9, engine + workers)
PY
}

# The host's CPU counters (/proc/stat's "cpu" line): "total steal" in clock ticks. Steal is time
# the hypervisor gave this VM's CPUs to someone else: a shared host slowing every compile.
cpu_ticks() { awk '/^cpu /{t=0; for (i = 2; i <= NF; ++i) t += $i; print t, $9; exit}' /proc/stat; }

echo "$compiler, $(nproc) CPUs, $rounds round(s) of N = $counts, modes: $modes" \
  "(engine: the engine and N remote workers; bare: the host alone, N builds at a time)"
rows=$out/rows.tsv
: >"$rows"
printf '%-6s %-6s %-8s %-6s %-9s %-9s %-11s %-7s %-10s %-7s %-7s %-7s %-8s %s\n' mode round \
  workers jobs wall_s compiled "compiles/s" ratio "s/compile" "vs 1" busy steal "vs bare" \
  "cpu"
for ((round = 1; round <= rounds; ++round)); do
  for n in $counts; do
    for mode in $modes; do
      jobs=$((per_worker * n))
      read -r total0 steal0 < <(cpu_ticks)
      wall= cpu=
      if [[ $mode == bare ]]; then
        read -r wall compiled busy cpu < <(bare_run "$n" "$jobs")
      else
        read -r wall compiled busy cpu < <(engine_run "$n" "$jobs")
      fi
      [[ -n ${wall:-} ]] || exit 1 # the run said why
      read -r total1 steal1 < <(cpu_ticks)
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$round" "$n" "$wall" "$compiled" "$busy" \
        "$(((steal1 - steal0) * 1000000 / (total1 - total0 + 1)))" "$cpu" >>"$rows"
      # This round's row, against this round's one-worker run of the same mode (a later round
      # repeats them, so a host that speeds up or slows down between runs shows as spread).
      python3 - "$rows" "$mode" "$round" "$n" "$jobs" <<'PY'
import sys
rows = [line.split("\t") for line in open(sys.argv[1]).read().splitlines()]
by = {(r[0], r[1], r[2]): r for r in rows}
mode, rnd, n = sys.argv[2], sys.argv[3], sys.argv[4]
_, _, _, wall, compiled, busy, steal, cpu = by[(mode, rnd, n)]
n, wall, compiled, busy, cpu = int(n), float(wall), int(compiled), float(busy), float(cpu)
rate, each = compiled / wall, busy / max(compiled, 1)
ratio = slow = vs_bare = "-"
one = by.get((mode, rnd, "1"))
if one:
    rate1 = int(one[4]) / float(one[3])
    ratio = "%.3f" % (rate / (n * rate1))
    slow = "%.3f" % (float(one[5]) / max(int(one[4]), 1) / each) if each > 0 else "-"
bare = by.get(("bare", rnd, str(n)))
if mode == "engine" and bare:
    vs_bare = "%.3f" % (rate / (int(bare[4]) / float(bare[3])))
# cpu: bare, the compilers' CPU seconds per build; engine, the CPU the engine and the workers
# themselves used, as a share of the N workers' CPUs over the run.
cpu_text = "%.3f s/build" % (cpu / compiled) if mode == "bare" and compiled else \
    "%.2f%% of N" % (100 * cpu / (n * wall))
print("%-6s %-6s %-8d %-6d %-9.2f %-9d %-11.4f %-7s %-10.3f %-7s %-7.3f %-7.3f %-8s %s" % (
    mode, rnd, n, int(sys.argv[5]), wall, compiled, rate, ratio, each, slow,
    busy / (n * wall), int(steal) / 1e6, vs_bare, cpu_text))
PY
    done
  done
done
if ((rounds > 1)); then
  echo "over the $rounds rounds (each ratio against its own round's one-worker run):"
  python3 - "$rows" <<'PY'
import statistics, sys
rows = [line.split("\t") for line in open(sys.argv[1]).read().splitlines()]
rate = {(r[0], r[1], int(r[2])): int(r[4]) / float(r[3]) for r in rows}
for mode in sorted({m for m, _, _ in rate}):
    for n in sorted({n for m, _, n in rate if m == mode}):
        ratios = [rate[(m, rnd, k)] / (n * rate[(m, rnd, 1)])
                  for m, rnd, k in rate if m == mode and k == n and (m, rnd, 1) in rate]
        line = "  %-6s N=%-3d" % (mode, n)
        if n > 1 and ratios:
            line += " ratio median %.3f, min %.3f, max %.3f (%d rounds)" % (
                statistics.median(ratios), min(ratios), max(ratios), len(ratios))
        if mode == "engine":
            vs = [rate[(m, rnd, k)] / rate[("bare", rnd, k)]
                  for m, rnd, k in rate if m == mode and k == n and ("bare", rnd, k) in rate]
            if vs:
                line += "; vs bare median %.3f (%.3f to %.3f)" % (
                    statistics.median(vs), min(vs), max(vs))
        if "ratio" in line or "vs bare" in line:
            print(line)
PY
fi
echo "ratio = (vs 1) x busy / (busy with 1); vs 1 = one worker's s/compile / this s/compile"
echo "details: $out"
