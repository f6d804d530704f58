#!/usr/bin/env python3
"""GEMM ground truth for autotune's lanes (issue 9), on any NVIDIA GPU host.

1. Sweeps examples/cuda/space.json with rocm-perf autotune, once per lane asked for:
   kernel  -- the kernel lane (--launch examples/cuda/gemm.launch.json, nvcc -cubin)
   app     -- the application lane (--backend cuda --kernel sgemm_tiled, the gemm app traced)
2. Builds every configuration the sweep measured as the gemm application and runs it with --json:
   its kernel_ms (CUDA events, median of --reps) is the ground truth.
3. Prints, per sweep: wall time, the Spearman rank correlation between the sweep's per-candidate
   median and the ground truth, the winner's ground truth against the best configuration's, and
   whether the tie set holds the best.

4. Prints, per sweep, how full its pipeline was (the JSON's "pipeline": wall / max(compile bound,
   lane bound), each lane's busy fraction), candidates per second, how sampling ended, and how
   many measurements NVML saw throttled.

Usage: python3 bench/gemm_ground_truth.py --rocm-perf BIN [--lanes kernel,app] [--out DIR]
       [--arch sm_90] [--workers 14] [--repeat 1] [--devices all|0,1] [--no-truth] [--extra ARGS]

--devices is passed to autotune (one lane per GPU); --no-truth skips steps 2-3 (for scaling runs).
Exit 0 when every sweep ran (the figures are printed, not judged), 1 when one failed.
"""
import argparse, concurrent.futures as cf, json, os, shlex, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFS = "-DTILE_M={TILE_M} -DTILE_N={TILE_N} -DTILE_K={TILE_K} -DTHREAD_M={THREAD_M} -DTHREAD_N={THREAD_N}"
NAMES = ["TILE_M", "TILE_N", "TILE_K", "THREAD_M", "THREAD_N"]


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5
    vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (va * vb) if va and vb else float("nan")


def sweep(args, lane, out, index):
    db = os.path.join(out, f"{lane}-{index}.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    cmd = [args.rocm_perf, "autotune", "--space", os.path.join(ROOT, "examples/cuda/space.json"),
           "--source", os.path.join(ROOT, "examples/cuda/gemm.cu"), "--db", db, "--json",
           "--compile-workers", str(args.workers)]
    if lane == "kernel":
        cmd += ["--build-template", f"nvcc -cubin -O3 -arch={args.arch} {DEFS} gemm.cu -o {{OUT}}",
                "--cmd-template", "{BIN}", "--launch", os.path.join(ROOT, "examples/cuda/gemm.launch.json")]
    else:
        cmd += ["--build-template", f"nvcc -O3 -arch={args.arch} {DEFS} gemm.cu -o {{OUT}}",
                "--cmd-template", "{BIN} --size 2048 --reps 5", "--backend", "cuda",
                "--kernel", "sgemm_tiled", "--runs", "2"]
    if args.devices:
        cmd += ["--devices", args.devices]
    cmd += shlex.split(args.extra)
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - started
    with open(os.path.join(out, f"{lane}-{index}.log"), "w") as log:
        log.write(" ".join(cmd) + "\n" + proc.stderr)
    if proc.returncode != 0:
        print(f"{lane} sweep {index} failed (exit {proc.returncode}); last lines:\n" +
              "\n".join(proc.stderr.splitlines()[-15:]))
        return None
    doc = json.loads(proc.stdout[proc.stdout.index("{"):])
    with open(os.path.join(out, f"{lane}-{index}.json"), "w") as f:
        json.dump(doc, f, indent=1)
    return wall, doc


def pipeline_line(name, wall, doc):
    """How full the pipeline was, how sampling ended, and what NVML saw."""
    p = doc.get("pipeline") or {}
    cands = [c for c in doc["candidates"]]
    states = {}
    for c in cands:
        states[c.get("sampling")] = states.get(c.get("sampling"), 0) + 1
    clocks = [c["clocks"] for c in cands if c.get("clocks")]
    throttled = sum(1 for k in clocks if k["throttled"])
    mhz = sorted(k["sm_mhz_after"] for k in clocks)
    lanes = ", ".join(f"{l['lane']} {l['measurements']} meas busy {l['busy_s']:.1f}/{l['window_s']:.1f} s "
                      f"({100 * l['busy_fraction']:.0f} %)" for l in p.get("lanes", []))
    print(f"  {name}: {len(cands)} candidates in {wall:.1f} s = {len(cands) / wall:.2f}/s; engine wall "
          f"{doc['wall_s']:.1f} s; compile bound {p.get('compile_bound_s', 0):.1f} s "
          f"({doc['compile_workers']} workers), lane bound {p.get('lane_bound_s', 0):.1f} s, "
          f"wall/bound {p.get('bound_ratio', 0):.2f}; lanes: {lanes}")
    # Where each lane's busy time went: the timed launches themselves (samples x mean) vs the rest
    # (load, upload, checked launch, warm-ups, transport, NVML reads). The final round is not here.
    per_lane = {}
    for c in cands:
        if c.get("stats") and c.get("lane"):
            d = per_lane.setdefault(c["lane"], [0, 0.0, 0])
            d[0] += 1
            d[1] += c["stats"]["n"] * c["stats"]["mean_ns"] / 1e9
            d[2] += c["stats"]["n"]
    if per_lane:
        print(f"  {name}: sweep per lane: " + ", ".join(
            f"{lane} {d[0]} cand, timed launches {d[1]:.1f} s ({d[2] / d[0]:.0f} samples/cand)"
            for lane, d in sorted(per_lane.items())))
    print(f"  {name}: sampling {states}; clocks read for {len(clocks)}, throttled {throttled}"
          + (f", SM MHz after: min {mhz[0]} median {mhz[len(mhz) // 2]} max {mhz[-1]}" if mhz else ""),
          flush=True)


def truth_for(args, params, out):
    tag = "-".join(str(params[n]) for n in NAMES)
    exe = os.path.join(args.apps, f"gemm-{tag}")
    if not os.path.exists(exe):
        defs = [f"-D{n}={params[n]}" for n in NAMES]
        subprocess.run(["nvcc", "-O3", f"-arch={args.arch}", *defs, os.path.join(ROOT, "examples/cuda/gemm.cu"),
                        "-o", exe], check=True, capture_output=True)
    return exe


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rocm-perf", required=True)
    p.add_argument("--lanes", default="kernel,app")
    p.add_argument("--out", default=os.environ.get("OUT", "gemm-truth"))
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--truth-reps", type=int, default=20)
    p.add_argument("--devices", default="")
    p.add_argument("--no-truth", action="store_true")
    p.add_argument("--apps", default=os.path.join(tempfile.gettempdir(), "gemm-truth-apps"),
                   help="where the ground-truth builds go (kept out of --out: 183 executables)")
    p.add_argument("--extra", default="", help="more autotune arguments, e.g. '--min-time 0.1'")
    args = p.parse_args()
    os.makedirs(args.apps, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)

    sweeps = []
    for lane in args.lanes.split(","):
        for i in range(args.repeat):
            r = sweep(args, lane, args.out, i)
            if r is None:
                return 1
            sweeps.append((lane, i, *r))
            print(f"{lane} sweep {i}: {r[0]:.1f} s", flush=True)
            pipeline_line(lane + str(i), *r)
    if args.no_truth:
        return 0

    configs = {}
    for _, _, _, doc in sweeps:
        for c in doc["candidates"]:
            if c["status"] == "ok":
                configs[tuple(c["params"][n] for n in NAMES)] = c["params"]
    started = time.time()
    with cf.ThreadPoolExecutor(args.workers) as pool:
        exes = dict(zip(configs, pool.map(lambda k: truth_for(args, configs[k], args.out), configs)))
    build_s = time.time() - started
    truth = {}
    for key, exe in exes.items():  # one at a time: the GPU is measured
        out = subprocess.run([exe, "--size", "2048", "--reps", str(args.truth_reps), "--json"],
                             capture_output=True, text=True, check=True).stdout
        truth[key] = json.loads(out[out.index("{"):])["kernel_ms"]
    best = min(truth, key=truth.get)
    print(f"ground truth: {len(truth)} configurations (built in {build_s:.1f} s); best {dict(zip(NAMES, best))} "
          f"{truth[best]:.4f} ms, worst {max(truth.values()):.4f} ms")

    print(f"{'sweep':<10} {'wall s':>7} {'n':>4} {'spearman':>9} {'winner ms':>10} {'best ms':>8} "
          f"{'gap %':>7} {'tie set':>8} {'best in tie':>11}")
    for lane, i, wall, doc in sweeps:
        by_key = {c["key"]: c for c in doc["candidates"]}
        xs, ys = [], []
        for c in doc["candidates"]:
            if c["status"] == "ok":
                xs.append(c["stats"]["median_ns"])
                ys.append(truth[tuple(c["params"][n] for n in NAMES)])
        rho = spearman(xs, ys)
        winner = doc["winner"]
        wkey = tuple(winner["params"][n] for n in NAMES) if winner else None
        tie = doc["final_round"]["tie_set"] if doc.get("final_round") else ([winner["key"]] if winner else [])
        tie_truth = [truth[tuple(by_key[k]["params"][n] for n in NAMES)] for k in tie if k in by_key]
        best_in_tie = any(abs(t - truth[best]) <= 1e-12 for t in tie_truth)
        gap = (truth[wkey] / truth[best] - 1) * 100 if wkey else float("nan")
        print(f"{lane + str(i):<10} {wall:>7.1f} {len(xs):>4} {rho:>9.3f} {truth[wkey] if wkey else float('nan'):>10.4f} "
              f"{truth[best]:>8.4f} {gap:>7.2f} {len(tie):>8} {str(best_in_tie):>11}")
    with open(os.path.join(args.out, "truth.json"), "w") as f:
        json.dump({"-".join(map(str, k)): v for k, v in truth.items()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
