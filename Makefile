# rocm-perf-lab: the two targets users type are `make demo` and `make test`.
# The others (deps, build, bench, format, clean) are the steps those two are made of.

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

.PHONY: all deps build demo test bench gpu-bundle format format-check clean

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
