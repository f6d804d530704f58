# rocm-perf-lab: the two targets users type are `make demo` and `make test`.
# The others (deps, build, bench, format, clean) are the steps those two are made of; test-asan,
# test-tsan and fuzz-replay are CI's further checks (.ci/run), and fuzz runs the fuzzers by hand.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

BUILD_DIR  ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE      ?= cmake
CTEST      ?= ctest
export CCACHE_DIR ?= $(HOME)/.cache/ccache

ROCM_PERF := $(BUILD_DIR)/bin/rocm-perf
FORMAT_DIRS := $(wildcard messages stages workers engine tests bench examples)

# The demo: autotune the tiled CPU matmul of examples/cpu over examples/cpu/space.json with the
# timing backend (whole-process wall time). See examples/cpu/README.md.
DEMO_BUILD := g++ -O2 -std=c++17 -march=native -DTILE_I={TILE_I} -DTILE_J={TILE_J} -DTILE_K={TILE_K} -DUNROLL={UNROLL} matmul.cpp -o {OUT}
DEMO_CMD   := {BIN} --n 256

.PHONY: all deps build demo test test-asan test-tsan fuzz fuzz-build fuzz-replay bench gpu-bundle \
        format format-check clean

all: build

deps:
	scripts/install-deps

build: deps
	$(CMAKE) -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	$(CMAKE) --build $(BUILD_DIR) -j$(JOBS)

demo: build
	$(ROCM_PERF) autotune --space examples/cpu/space.json --source examples/cpu/matmul.cpp \
	  --build-template "$(DEMO_BUILD)" \
	  --cmd-template "$(DEMO_CMD)" \
	  --runs 5 --warmup 1 --timeout 30 --db $(BUILD_DIR)/demo.db

test: build
	$(CTEST) --test-dir $(BUILD_DIR) --output-on-failure -j2 --timeout 300

# The sanitizer builds (.ci/run runs both after `make test`). Their presets (CMakePresets.json:
# asan, tsan) build only what the unit and integration tests need: those tests, rocm-perf (started
# as a worker) and the fake tools; no system or gpu tests, no benchmarks, no CUDA backend, and -g1
# (line tables) for debug information. That keeps CI within 45 minutes on 2 cores with a cold
# ccache; tests/sanitizers/README.md has the measured times. ASan+UBSan is a Debug build and stops
# at the first finding (UBSan too: -fno-sanitize-recover); TSan reads tests/sanitizers/tsan.supp,
# where every suppression says why it is there.
test-asan: deps
	$(CMAKE) --preset asan
	$(CMAKE) --build --preset asan -j$(JOBS)
	$(CTEST) --preset asan

test-tsan: deps
	$(CMAKE) --preset tsan
	$(CMAKE) --build --preset tsan -j$(JOBS)
	$(CTEST) --preset tsan

# libFuzzer targets (tests/fuzz/README.md), built by clang with ASan+UBSan in build-fuzz/.
# `make fuzz-replay` runs every committed corpus file once (CI); `make fuzz` fuzzes each target for
# FUZZ_TIME seconds or FUZZ_RUNS executions, whichever comes first (0 and -1: no limit), adding
# what it finds to a scratch corpus under build-fuzz/corpus/ (copy inputs worth keeping into
# tests/fuzz/corpus/<target>/ by hand); a crash stops it and leaves the input in
# build-fuzz/artifacts/<target>/. FUZZ_TARGETS picks some and FUZZ_FLAGS adds libFuzzer flags, e.g.
# `make fuzz FUZZ_TARGETS=fuzz_codec FUZZ_TIME=0 FUZZ_RUNS=10000000 FUZZ_FLAGS=-fork=2`.
FUZZ_DIR     := build-fuzz
FUZZ_TARGETS ?= fuzz_codec fuzz_space fuzz_rocpd_reader fuzz_code_object
FUZZ_TIME    ?= 60
FUZZ_RUNS    ?= -1
FUZZ_FLAGS   ?=

fuzz-build: deps
	$(CMAKE) --preset fuzz
	$(CMAKE) --build --preset fuzz -j$(JOBS)

fuzz-replay: fuzz-build
	tests/fuzz/replay $(FUZZ_DIR) $(FUZZ_TARGETS)

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
format-check: deps
	@unformatted=$$(find $(FORMAT_DIRS) -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.cu' \) \
	  -exec sh -c 'clang-format --style=file "$$1" | cmp -s - "$$1" || echo "$$1"' _ {} \;); \
	if [ -n "$$unformatted" ]; then \
	  echo "format-check: these files differ from clang-format's output; fix: make format" >&2; \
	  echo "$$unformatted" >&2; exit 1; \
	fi; echo "format-check: every source is clang-format clean"

clean:
	rm -rf $(BUILD_DIR)
