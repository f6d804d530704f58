#!/usr/bin/env python3
"""Kernel Tuner baseline: brute-force tuning of examples/cuda/gemm.cu over examples/cuda/space.json.

Runs Kernel Tuner's `tune_kernel` (strategy brute_force, its default 7 iterations per
configuration) over the same space the project tunes (the 5 macros TILE_M, TILE_N, TILE_K,
THREAD_M, THREAD_N and the constraints of space.json: 183 configurations) with the launch geometry
of examples/cuda/gemm.launch.json (M = N = K = 2048, grid (ceil(N/TILE_N), ceil(M/TILE_M)), 1-D
block of (TILE_M/THREAD_M)*(TILE_N/THREAD_N) threads, args A, B, C, m, n, k), so that its wall
time and per-configuration kernel times can be set beside rocm-perf's.

Usage (from the repository root, on the GPU host):
    PYTHONPATH=.kt python3 bench/kernel_tuner_gemm.py [--backend cupy|nvcuda] [--out DIR]
        [--space examples/cuda/space.json] [--launch examples/cuda/gemm.launch.json]
        [--source examples/cuda/gemm.cu] [--iterations 7] [--verify] [--quiet]
        [--keep-cupy-cache] [--dry-run]

Prints the Kernel Tuner version (and the vendored commit), the number of configurations measured,
the wall time of the tune_kernel call and of the whole script, Kernel Tuner's own time split (sums
of its per-configuration compile_time, verification_time, benchmark_time, framework_time and
strategy_time, plus its overhead_time), and the best configuration with its time. Writes
DIR/kernel_tuner_gemm.json (every configuration: params, mean time -- Kernel Tuner's objective --
median, the 7 times, its compile/benchmark times; plus `by_key`, {"TILE_M-TILE_N-TILE_K-THREAD_M-
THREAD_N": mean ms}, the key format of bench/gemm_ground_truth.py's truth.json) and
DIR/gemm_kernel.cu (the source handed to Kernel Tuner). DIR defaults to $OUT, else ./kt-out; the
script runs tune_kernel from DIR, where Kernel Tuner leaves temp_*.c of a configuration that fails.
Exit 0 when every configuration of the space was measured, 1 otherwise (the JSON is still written).

--dry-run needs no GPU and no CuPy: it imports Kernel Tuner, builds its search space exactly as
tune_kernel would (max_threads 1024, the H100's), checks it against an independent evaluation of
space.json (same count, same configurations: 183) and Kernel Tuner's grid/block against
gemm.launch.json's expressions for every configuration, writes gemm_kernel.cu, and exits.

How the space is expressed for Kernel Tuner
  * Kernel Tuner takes the thread-block size from a tunable parameter named block_size_x (256 when
    there is none). Here the block size is derived, so a tunable `block_size_x` is added whose
    values are every (TILE_M/THREAD_M)*(TILE_N/THREAD_N) product, tied to the others by the
    restriction `block_size_x * THREAD_M * THREAD_N == TILE_M * TILE_N`; for each of the 183
    configurations exactly one value passes, so the space is unchanged. The restriction is written
    as a product on purpose: python-constraint2 2.6.0's restriction parser turns
    `block_size_x == (TILE_M // THREAD_M) * (TILE_N // THREAD_N)` (or with `/`) into an
    "exact product of all five variables" constraint and the space comes out EMPTY (a bug of
    python-constraint's parser, which ignores the division). The dry-run check guards this.
  * The grid: problem_size (N, M) with grid_div_x=["TILE_N"], grid_div_y=["TILE_M"].
  * The macros: Kernel Tuner prepends `#define NAME value` for every tunable (and block_size_x,
    grid_size_x/y/z, kernel_tuner), which gemm.cu's `#ifndef TILE_M` defaults give way to.
  * The space.json constraints are passed to Kernel Tuner verbatim as restriction strings.

The kernel source. gemm.cu is also a host program (<vector>, <cuda_runtime.h>, main()), which NVRTC
-- what both the cupy and the nvcuda backends compile with -- cannot compile. gemm.cu is NOT
modified: this script hands Kernel Tuner the device part of it, verbatim, from the first
`#ifndef TILE_M` up to the anonymous namespace that holds the host helpers before main() (the
tile macros, the static_asserts, the unused CHECK macro, and the four kernels: sgemm_tiled,
sgemm_reference, and the extern "C" rpl_sgemm_tiled, rpl_sgemm_reference). Kernel Tuner compiles
all of it per configuration (as `nvcc -cubin gemm.cu` does in the kernel lane) and launches
rpl_sgemm_tiled. Compiler options are Kernel Tuner's defaults: `--std=c++11`, the device's
architecture (CuPy picks it; nvcuda uses compute_XX PTX loaded by the driver), no -O flag (NVRTC
optimises by default).

Timing notes.
  * "time" is Kernel Tuner's objective: the MEAN of `--iterations` (default 7) CUDA-event timed
    launches, each launch synchronised on its own; there is no separate warm-up launch per
    configuration, but Kernel Tuner compiles and runs the first configuration once more before
    the loop (a GPU warm-up) and leaves that out of the per-configuration times.
  * CuPy keeps compiled kernels in an on-disk cache (~/.cupy/kernel_cache); a second run would
    then skip compilation. Unless --keep-cupy-cache, this script points CUPY_CACHE_DIR at a new
    empty temporary folder (removed at the end), so every run pays its compiles, as a first run on
    a fresh machine does.
  * Verification is OFF by default (Kernel Tuner only verifies when given an answer, and it is not
    known whether the reference figure, Kernel Tuner 1.4.0's 69.4 s, did). --verify checks C of
    every configuration against a float64 numpy A@B with gemm.cu's own tolerance
    |c - ref| <= 1e-3 * (1 + |ref|) (a custom verify function; Kernel Tuner's default would be
    np.allclose with a flat atol); it costs a copy of C (16 MiB) and a compare per configuration,
    shown as verification time, and a wrong result aborts the tuning (Kernel Tuner's behaviour).

What .kt/ holds (see .kt/VENDORED.md): Kernel Tuner 1.4.0 (tag 1.4.0, commit
96a6abc1019179397753c4afede9149a80aec369), python-constraint2 2.6.0 as plain Python (its .py
sources; the Cython build that the PyPI wheel ships was not run: the same code, slower, which only
matters for search-space construction, a few milliseconds here), xmltodict 1.0.4, packaging 25.0
(kernel_tuner.file_utils imports packaging.requirements at import time), and hand-written
*.dist-info/METADATA so that importlib.metadata finds their versions. .kt/ is git-ignored: rebuild
it with scripts/vendor-kernel-tuner (given git dirs of kernel_tuner, python-constraint, xmltodict,
packaging), then copy it to the GPU host with the tree.
SHIMMED: `jsonschema`. Kernel Tuner imports it at import time but only calls it to validate T1
input files (tune_kernel_T1) and in kernel_tuner.integration, neither of which a tune_kernel run
touches; the real package needs rpds-py (a compiled Rust extension), so .kt/jsonschema is a
stand-in whose validate() raises. It changes no timing-relevant behaviour.
Not vendored, not needed for brute force: scikit-learn, pymoo (other strategies); cuda-python
(only for --backend nvcuda, which fails with a clear message when it is missing).
"""
import time

SCRIPT_START = time.perf_counter()

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ["TILE_M", "TILE_N", "TILE_K", "THREAD_M", "THREAD_N"]
# The derived block size, tied to the others by a restriction (see the docstring for its form).
BLOCK_RESTRICTION = "block_size_x * THREAD_M * THREAD_N == TILE_M * TILE_N"
H100_MAX_THREADS = 1024


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Kernel Tuner brute-force baseline for examples/cuda/gemm.cu")
    p.add_argument("--backend", choices=["cupy", "nvcuda"], default="cupy",
                   help="Kernel Tuner backend (lang=): cupy (default) or nvcuda (needs cuda-python)")
    p.add_argument("--out", default=os.environ.get("OUT") or "kt-out", help="output folder (default $OUT or ./kt-out)")
    p.add_argument("--space", default=os.path.join(ROOT, "examples/cuda/space.json"))
    p.add_argument("--launch", default=os.path.join(ROOT, "examples/cuda/gemm.launch.json"))
    p.add_argument("--source", default=os.path.join(ROOT, "examples/cuda/gemm.cu"))
    p.add_argument("--iterations", type=int, default=7, help="Kernel Tuner iterations per configuration (default 7)")
    p.add_argument("--verify", action="store_true",
                   help="check C of every configuration against numpy A@B (gemm.cu's tolerance); off by default")
    p.add_argument("--quiet", action="store_true", help="pass quiet=True (no per-configuration lines)")
    p.add_argument("--keep-cupy-cache", action="store_true",
                   help="use CuPy's usual kernel cache instead of a fresh empty one")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--dry-run", action="store_true",
                   help="no GPU: build and check the search space, write gemm_kernel.cu, print the count")
    args = p.parse_args(argv)
    if args.iterations < 1:
        p.error("--iterations must be >= 1")
    return args


# ---------------------------------------------------------------------------------------------
# The space, the launch geometry, the kernel source


def load_space(path):
    with open(path) as f:
        doc = json.load(f)
    params = doc["params"]
    if list(params) != NAMES:
        raise ValueError(f"{path}: expected parameters {NAMES}, found {list(params)}")
    return {k: list(v) for k, v in params.items()}, list(doc.get("constraints", []))


def independent_space(params, constraints):
    """The valid configurations by plain Python evaluation of the constraints (the cross-check)."""
    code = [compile(c, "<constraint>", "eval") for c in constraints]
    valid = []
    for values in itertools.product(*params.values()):
        env = dict(zip(params, values))
        if all(eval(c, {"__builtins__": {}}, dict(env)) for c in code):
            valid.append(values)
    return valid


def kernel_tuner_params(params):
    tune_params = dict(params)
    tune_params["block_size_x"] = sorted({(tm // thm) * (tn // thn) for tm, tn, thm, thn in itertools.product(
        params["TILE_M"], params["TILE_N"], params["THREAD_M"], params["THREAD_N"])})
    return tune_params


def load_launch(path):
    with open(path) as f:
        doc = json.load(f)
    problem = doc["problem"]
    return doc["kernel"], int(problem["M"]), int(problem["N"]), int(problem["K"]), doc


def c_int_eval(expr, env):
    """Evaluate a launch-file expression with C integer semantics for '/' (all operands here are ints)."""
    return int(eval(expr.replace("/", "//"), {"__builtins__": {}}, dict(env)))


def extract_device_code(text, source_name="gemm.cu"):
    """The device part of gemm.cu, verbatim: first `#ifndef TILE_M` up to the host helpers' namespace."""
    start = text.index("#ifndef TILE_M")
    main_at = text.index("int main(")
    end = text.rindex("namespace {", start, main_at)
    body = text[start:end].rstrip() + "\n"
    first_line = text.count("\n", 0, start) + 1
    if "#include" in body:
        raise ValueError("the extracted device code still has an #include")
    if 'extern "C" __global__' not in body or "rpl_sgemm_tiled" not in body:
        raise ValueError("the extracted device code has no extern \"C\" rpl_sgemm_tiled")
    header = (f"// Device part of {source_name} (lines {first_line}-{text.count(chr(10), 0, end)}), verbatim,\n"
              "// extracted by bench/kernel_tuner_gemm.py: NVRTC cannot compile the host code around it.\n")
    return header + f'#line {first_line} "{source_name}"\n' + body


# ---------------------------------------------------------------------------------------------
# Kernel Tuner


def kernel_tuner_info():
    import kernel_tuner
    from importlib import metadata

    version = getattr(kernel_tuner, "__version__", "unknown")
    commit = "unknown"
    try:
        m = re.search(r"commit ([0-9a-f]{40})", metadata.metadata("kernel_tuner").get("Summary", ""))
        if m:
            commit = m.group(1)
    except Exception:
        pass
    return version, commit, os.path.dirname(kernel_tuner.__file__)


def build_searchspace(tune_params, restrictions, max_threads):
    from kernel_tuner.searchspace import Searchspace

    return Searchspace(tune_params, restrictions, max_threads)


def check_searchspace(ss, params, constraints, launch_doc, M, N):
    """Compare Kernel Tuner's space and geometry with space.json and gemm.launch.json. Returns errors."""
    from kernel_tuner import util

    errors = []
    expected = set(independent_space(params, constraints))
    got = [tuple(cfg) for cfg in ss.list]
    got5 = {cfg[:5] for cfg in got}
    if len(got) != len(got5):
        errors.append(f"Kernel Tuner's space has {len(got)} entries but {len(got5)} distinct configurations")
    if got5 != expected:
        errors.append(f"Kernel Tuner's space ({len(got5)}) differs from space.json's ({len(expected)}): "
                      f"{len(got5 - expected)} extra, {len(expected - got5)} missing")
    names = list(ss.tune_params)
    for cfg in got:
        p = dict(zip(names, cfg))
        threads, grid = util.setup_block_and_grid((N, M), (["TILE_N"], ["TILE_M"], None), p, util.default_block_size_names)
        env = dict(p, M=M, N=N)
        want_grid = tuple(c_int_eval(e, env) for e in launch_doc["grid"]) + (1,) * (3 - len(launch_doc["grid"]))
        want_block = tuple(c_int_eval(e, env) for e in launch_doc["block"]) + (1,) * (3 - len(launch_doc["block"]))
        if tuple(grid) != want_grid or tuple(threads) != want_block:
            errors.append(f"geometry of {p}: Kernel Tuner grid {grid} block {threads}, "
                          f"launch file grid {want_grid} block {want_block}")
            break
    return errors, len(expected)


def make_verify():
    import numpy as np

    def verify(answer, result_host, atol=None):
        ok = True
        for ref, got in zip(answer, result_host):
            if ref is None:
                continue
            ref = np.asarray(ref, dtype=np.float64).ravel()
            got = np.asarray(got, dtype=np.float64).ravel()
            err = np.abs(got - ref)
            ok = ok and bool(np.all(err <= 1e-3 * (1.0 + np.abs(ref))))  # NaN fails, as in gemm.cu
        return ok

    return verify


def jsonable(v):
    try:
        import numpy as np
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, np.ndarray):
            return v.tolist()
    except ImportError:
        pass
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    return str(v)


def median(xs):
    s = sorted(xs)
    n = len(s)
    return None if n == 0 else (s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2]))


def main(argv=None):
    args = parse_args(argv)
    args.out = os.path.abspath(args.out)
    for name in ("space", "launch", "source"):
        setattr(args, name, os.path.abspath(getattr(args, name)))
    os.makedirs(args.out, exist_ok=True)
    fresh_cache = None
    if args.backend == "cupy" and not args.keep_cupy_cache and not args.dry_run:
        fresh_cache = tempfile.mkdtemp(prefix="kt-cupy-cache-")  # removed at the end, not under DIR
        os.environ["CUPY_CACHE_DIR"] = fresh_cache  # before anything imports cupy
    try:
        return run(args)
    finally:
        if fresh_cache:
            shutil.rmtree(fresh_cache, ignore_errors=True)


def run(args):
    params, constraints = load_space(args.space)
    kernel_name, M, N, K, launch_doc = load_launch(args.launch)
    with open(args.source) as f:
        kernel_string = extract_device_code(f.read(), os.path.basename(args.source))
    with open(os.path.join(args.out, "gemm_kernel.cu"), "w") as f:
        f.write(kernel_string)

    try:
        version, commit, kt_path = kernel_tuner_info()
    except Exception as e:  # noqa: BLE001
        print(f"kernel_tuner_gemm: cannot import kernel_tuner ({type(e).__name__}: {e}); "
              "run with PYTHONPATH=.kt", file=sys.stderr)
        return 1
    print(f"Kernel Tuner {version} (commit {commit}) from {kt_path}; python {sys.version.split()[0]}")

    tune_params = kernel_tuner_params(params)
    restrictions = constraints + [BLOCK_RESTRICTION]
    print(f"space: {args.space}: {' x '.join(str(len(v)) for v in params.values())} = "
          f"{math.prod(len(v) for v in params.values())} points, {len(constraints)} constraints; "
          f"added tunable block_size_x {tune_params['block_size_x']} with restriction '{BLOCK_RESTRICTION}'")

    if args.dry_run:
        t = time.perf_counter()
        ss = build_searchspace(tune_params, restrictions, H100_MAX_THREADS)
        build_s = time.perf_counter() - t
        errors, expected = check_searchspace(ss, params, constraints, launch_doc, M, N)
        print(f"dry run: Kernel Tuner search space: {ss.size} valid configurations (built in {build_s * 1000:.1f} ms, "
              f"max_threads {H100_MAX_THREADS}); independent evaluation of space.json: {expected}")
        print(f"dry run: kernel {kernel_name}, problem M={M} N={N} K={K}, grid (N/TILE_N, M/TILE_M), "
              f"block block_size_x; kernel source {kernel_string.count(chr(10))} lines -> "
              f"{os.path.join(args.out, 'gemm_kernel.cu')}")
        for e in errors:
            print(f"dry run: MISMATCH: {e}", file=sys.stderr)
        print("dry run: " + ("OK" if not errors else "FAILED"))
        return 0 if not errors else 1

    # The same check as --dry-run (a few ms, before the clock starts): never tune a wrong space.
    errors, _ = check_searchspace(build_searchspace(tune_params, restrictions, H100_MAX_THREADS),
                                  params, constraints, launch_doc, M, N)
    for e in errors:
        print(f"kernel_tuner_gemm: search space MISMATCH: {e}", file=sys.stderr)
    if errors:
        return 1

    import numpy as np
    from kernel_tuner import tune_kernel

    if args.backend == "nvcuda":
        try:
            try:
                from cuda.bindings import driver  # noqa: F401
            except ImportError:
                from cuda import cuda  # noqa: F401
        except ImportError:
            print("kernel_tuner_gemm: --backend nvcuda needs cuda-python (cuda.bindings), which is not installed",
                  file=sys.stderr)
            return 1

    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(2)
    a = rng_a.uniform(-1.0, 1.0, size=M * K).astype(np.float32)
    b = rng_b.uniform(-1.0, 1.0, size=K * N).astype(np.float32)
    c = np.zeros(M * N, dtype=np.float32)
    arguments = [a, b, c, np.int32(M), np.int32(N), np.int32(K)]
    extra = {}
    if args.verify:
        t = time.perf_counter()
        c_ref = (a.reshape(M, K).astype(np.float64) @ b.reshape(K, N).astype(np.float64)).ravel()
        print(f"reference C = A @ B (float64, numpy) in {time.perf_counter() - t:.2f} s")
        extra = dict(answer=[None, None, c_ref, None, None, None], verify=make_verify())

    print(f"tuning {kernel_name} with Kernel Tuner, backend {args.backend}, brute force, "
          f"{args.iterations} iterations, verification {'on' if args.verify else 'off'}"
          + (f", CUPY_CACHE_DIR={os.environ['CUPY_CACHE_DIR']}" if "CUPY_CACHE_DIR" in os.environ else ""),
          flush=True)
    # Kernel Tuner writes the source of a configuration that fails (temp_*.c) into the current
    # folder: keep those in DIR, not in the repository.
    os.chdir(args.out)
    tune_start = time.perf_counter()
    try:
        results, env = tune_kernel(
            kernel_name, kernel_string, (N, M), arguments, tune_params,
            grid_div_x=["TILE_N"], grid_div_y=["TILE_M"],
            restrictions=restrictions, lang=args.backend, device=args.device,
            iterations=args.iterations, strategy="brute_force", quiet=args.quiet, **extra)
    except Exception as e:  # noqa: BLE001
        print(f"kernel_tuner_gemm: tune_kernel failed after {time.perf_counter() - tune_start:.1f} s: "
              f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    tune_wall = time.perf_counter() - tune_start

    configs, by_key, failed = [], {}, []
    for r in results:
        if not r:
            continue
        p = {n: int(r[n]) for n in NAMES}
        key = "-".join(str(p[n]) for n in NAMES)
        entry = {"key": key, "params": p, "block_size_x": int(r["block_size_x"])}
        for k in ("compile_time", "verification_time", "benchmark_time", "framework_time", "strategy_time"):
            if k in r:
                entry[k + "_ms"] = jsonable(r[k])
        if "__error__" in r or not isinstance(r.get("time"), (float, int, np.floating)):
            entry["status"] = type(r.get("__error__", r.get("time"))).__name__
            failed.append(key)
        else:
            times = [float(x) for x in r.get("times", [])]
            entry.update(status="ok", time_ms=float(r["time"]), median_ms=median(times), times_ms=times)
            by_key[key] = float(r["time"])
        configs.append(entry)

    totals = {k: jsonable(env.get(k)) for k in ("total_compile_time", "total_verification_time", "total_benchmark_time",
                                                "total_framework_time", "total_strategy_time", "overhead_time")}
    best_key = min(by_key, key=by_key.get) if by_key else None
    best = next((cfg for cfg in configs if cfg["key"] == best_key), None)
    script_wall = time.perf_counter() - SCRIPT_START
    doc = {
        "tool": "kernel_tuner", "version": version, "commit": commit, "backend": args.backend,
        "strategy": "brute_force", "iterations": args.iterations, "verify": args.verify,
        "objective": "time: mean of the iterations' CUDA-event times, ms",
        "device": env.get("device_name"), "problem": {"M": M, "N": N, "K": K}, "kernel": kernel_name,
        "restrictions": restrictions, "measured": len(by_key), "failed": failed,
        "tune_wall_s": tune_wall, "script_wall_s": script_wall, "totals_ms": totals,
        "best": best, "by_key": by_key, "configs": configs,
        "env": jsonable({k: v for k, v in env.items() if k != "best_config"}),
    }
    out_json = os.path.join(args.out, "kernel_tuner_gemm.json")
    with open(out_json, "w") as f:
        json.dump(doc, f, indent=1)

    print()
    print(f"Kernel Tuner {version} (commit {commit}), backend {args.backend}, device {env.get('device_name')}")
    print(f"configurations measured: {len(by_key)} of {len(configs)} visited"
          + (f"; FAILED: {len(failed)}: {' '.join(failed[:10])}" if failed else ""))
    print(f"wall: tune_kernel {tune_wall:.2f} s; whole script {script_wall:.2f} s")
    if totals.get("total_compile_time") is not None:
        split = ", ".join(f"{k.replace('total_', '').replace('_time', '')} {totals[k] / 1000:.2f} s"
                          for k in totals if totals[k] is not None)
        print(f"Kernel Tuner's split (its own timers): {split}")
        print(f"compile share of tune_kernel wall: {totals['total_compile_time'] / 1000 / tune_wall * 100:.1f} %")
    else:
        print("Kernel Tuner reported no time split")
    if best:
        best_params = " ".join(f"{n}={best['params'][n]}" for n in NAMES)
        print(f"best: {best['key']} ({best_params}, "
              f"block {best['block_size_x']}): {best['time_ms']:.4f} ms mean of {args.iterations} "
              f"(median {best['median_ms']:.4f} ms)")
    print(f"results: {out_json}")
    return 0 if by_key and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
