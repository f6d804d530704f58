# rocm-perf-lab: the two targets users type are `make demo` and `make test`.
# The others (deps, build, bench, format, clean) are the steps those two are made of; test-asan,
# test-tsan, fuzz-replay and function-size are CI's further checks (.ci/run), and fuzz runs the
# fuzzers by hand.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

BUILD_DIR  ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE      ?= cmake
CTEST      ?= ctest
export CCACHE_DIR ?= $(HOME)/.cache/ccache
# The test programs use a precompiled header (tests/CMakeLists.txt); ccache caches such units only
# with these sloppiness settings (its manual, "Precompiled headers").
export CCACHE_SLOPPINESS ?= pch_defines,time_macros,include_file_mtime,include_file_ctime

ROCM_PERF := $(BUILD_DIR)/bin/rocm-perf
FORMAT_DIRS := $(wildcard messages stages workers engine tests bench examples)

# The demo: autotune the tiled CPU matmul of examples/cpu over examples/cpu/space.json with the
# timing backend (whole-process wall time). See examples/cpu/README.md.
DEMO_BUILD := g++ -O2 -std=c++17 -march=native -DTILE_I={TILE_I} -DTILE_J={TILE_J} -DTILE_K={TILE_K} -DUNROLL={UNROLL} matmul.cpp -o {OUT}
DEMO_CMD   := {BIN} --n 256

.PHONY: all deps deps-demo configure build build-demo demo test test-asan test-tsan fuzz fuzz-build \
        fuzz-replay bench gpu-bundle format format-check function-size clean

all: build

# The packages: `deps-demo` only what the demo builds and runs with, `deps` everything the tests, the
# sanitizer and fuzz builds and the format check add (scripts/install-deps says which and why).
deps-demo:
	scripts/install-deps demo

deps:
	scripts/install-deps

configure:
	$(CMAKE) -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

# Everything: rocm-perf, its helper programs, the tests, the benchmarks, the CUDA backend where
# nvcc is found.
build: deps configure
	$(CMAKE) --build $(BUILD_DIR) -j$(JOBS)

# What the demo runs, and only that: rocm-perf (its compile workers are rocm-perf too). No tests,
# benchmarks or CUDA programs are built; the same build folder serves `make test` afterwards.
build-demo: deps-demo configure
	$(CMAKE) --build $(BUILD_DIR) -j$(JOBS) --target rocm-perf

demo: build-demo
	$(ROCM_PERF) autotune --space examples/cpu/space.json --source examples/cpu/matmul.cpp \
	  --build-template "$(DEMO_BUILD)" \
	  --cmd-template "$(DEMO_CMD)" \
	  --runs 5 --warmup 1 --timeout 30 --db $(BUILD_DIR)/demo.db

test: build
	$(CTEST) --test-dir $(BUILD_DIR) --output-on-failure -j2 --timeout 300

# The sanitizer builds (.ci/run runs both after `make test`). Their presets (CMakePresets.json:
# asan, tsan) build only what their tests need: those tests, rocm-perf (started as a worker) and
# the fake tools; no system or gpu tests, no benchmarks, no CUDA backend, and -g1 (line tables) for
# debug information. ASan+UBSan is a Debug build by clang (a third less compile time than GCC's
# for the same instrumentation) of the unit and integration tests and the fuzz targets, and stops
# at the first finding (UBSan too: -fno-sanitize-recover); TSan runs the integration tests, the label
# whose tests start threads (unit tests start none), and reads tests/sanitizers/tsan.supp, where
# every suppression says why it is there. tests/sanitizers/README.md has the details.
test-asan: deps
	$(CMAKE) --preset asan
	$(CMAKE) --build --preset asan -j$(JOBS)
	$(CTEST) --preset asan

test-tsan: deps
	$(CMAKE) --preset tsan
	$(CMAKE) --build --preset tsan -j$(JOBS)
	$(CTEST) --preset tsan

# libFuzzer targets (tests/fuzz/README.md), built by clang with ASan+UBSan in build-fuzz/ (and
# without coverage in build-asan/). `make fuzz-replay` runs every committed corpus file once (CI);
# `make fuzz` fuzzes each target for
# FUZZ_TIME seconds or FUZZ_RUNS executions, whichever comes first (0 and -1: no limit), adding
# what it finds to a scratch corpus under build-fuzz/corpus/ (copy inputs worth keeping into
# tests/fuzz/corpus/<target>/ by hand); a crash stops it and leaves the input in
# build-fuzz/artifacts/<target>/. FUZZ_TARGETS picks some and FUZZ_FLAGS adds libFuzzer flags, e.g.
# `make fuzz FUZZ_TARGETS=fuzz_codec FUZZ_TIME=0 FUZZ_RUNS=10000000 FUZZ_FLAGS=-fork=2`.
FUZZ_DIR     := build-fuzz
FUZZ_TARGETS ?= fuzz_codec fuzz_space fuzz_rocpd_reader fuzz_code_object fuzz_argv_check \
                fuzz_compile_job fuzz_unified_diff fuzz_llm_answer
FUZZ_TIME    ?= 60
FUZZ_RUNS    ?= -1
FUZZ_FLAGS   ?=

fuzz-build: deps
	$(CMAKE) --preset fuzz
	$(CMAKE) --build --preset fuzz -j$(JOBS)

# The replay uses the asan build (clang, ASan+UBSan: RPL_BUILD_FUZZ_REPLAY), which CI has built
# for make test-asan already, rather than build-fuzz/, whose libraries carry coverage for fuzzing.
fuzz-replay: deps
	$(CMAKE) --preset asan
	$(CMAKE) --build --preset asan -j$(JOBS) --target rpl_fuzzers
	tests/fuzz/replay build-asan $(FUZZ_TARGETS)

fuzz: fuzz-build
	for target in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_DIR)/corpus/$$target $(FUZZ_DIR)/artifacts/$$target; \
	  $(FUZZ_DIR)/tests/fuzz/$$target $(FUZZ_DIR)/corpus/$$target tests/fuzz/corpus/$$target \
	    -max_total_time=$(FUZZ_TIME) -runs=$(FUZZ_RUNS) \
	    -artifact_prefix=$(FUZZ_DIR)/artifacts/$$target/ -print_final_stats=1 $(FUZZ_FLAGS); \
	done

bench: build
	$(BUILD_DIR)/bin/sweep
	$(BUILD_DIR)/bin/overhead

# Build, then collect a relocatable bundle for a GPU host; there: bash scripts/gpu-check .bundle
gpu-bundle: build
	scripts/bundle $(BUILD_DIR) .bundle

format: deps
	find $(FORMAT_DIRS) -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.cu' \) -print0 \
	  | xargs -0 -r clang-format -i

# Fails, listing the files, when any source differs from `make format`'s output (.ci/run runs it).
# One clang-format per 40 files, two at once (`--dry-run --Werror` names each file that differs),
# not one per file: 65 s to about 10 s on 2 cores.
format-check: deps
	@command -v clang-format >/dev/null || { echo "format-check: clang-format is not installed;" \
	  "fix: make deps" >&2; exit 2; }
	@report=$$(find $(FORMAT_DIRS) -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.cu' \) \
	  -print0 | xargs -0 -r -n 40 -P $(JOBS) clang-format --style=file --dry-run --Werror 2>&1) \
	  && status=0 || status=$$?; \
	unformatted=$$(sed -nE 's/^(.+):[0-9]+:[0-9]+: error: code should be clang-formatted.*/\1/p' \
	  <<<"$$report" | sort -u); \
	if [ -n "$$unformatted" ]; then \
	  echo "format-check: these files differ from clang-format's output; fix: make format" >&2; \
	  echo "$$unformatted" >&2; exit 1; \
	elif [ "$$status" != 0 ]; then \
	  echo "format-check: clang-format failed:" >&2; echo "$$report" >&2; exit 1; \
	fi; echo "format-check: every source is clang-format clean"

# No function over 150 lines outside tests (house style §24; .ci/run runs it): scripts/function-size
# lists every function definition of messages/, stages/, workers/, engine/, bench/ and examples/
# with Universal Ctags (tests/ are exempt) and fails naming each one over, with its length: the
# lines from its name to its closing `}`, signature, comments, blank lines and the lambdas inside
# it included. No compile: under a second, where clang-tidy's readability-function-size (the check
# before, over a configure-only build folder) took 160 s of CI's two cores and reported the same
# twelve functions at commit 2c71fe0 (bench/README.md, "Build and CI times").
FUNCTION_SIZE_LINES ?= 150

function-size:
	scripts/function-size --limit $(FUNCTION_SIZE_LINES)

clean:
	rm -rf $(BUILD_DIR)
