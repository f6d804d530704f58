#!/usr/bin/env bash
# bench/build_times/run.sh [--demo] [--ci] [--ref REF] [--keep]
#
# Times what a newcomer and CI wait for, from a fresh clone with no compiler cache
# (CCACHE_DISABLE=1), so that the figures in bench/README.md ("Build and CI times") can be
# re-measured on any machine: packages are installed first (not timed), then
#   --demo  `make demo` (configure, build rocm-perf, the CPU demo run), against the 5-minute target
#   --ci    `bash .ci/run` (format check, make test, ASan+UBSan, TSan, fuzz replay), against the
#           40-minute target; its per-stage wall times come from .ci/run's own table
# Default: both, demo first, each in its own fresh clone of REF (default HEAD) under $TMPDIR.
# Prints one line per measurement and the ratio to its target. --keep leaves the clones.
# Run it on a quiet machine: a second build on the same cores doubles every figure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
do_demo=0 do_ci=0 ref=HEAD keep=0
while (($#)); do
  case $1 in
    --demo) do_demo=1 ;;
    --ci) do_ci=1 ;;
    --ref) ref=${2:?--ref needs a commit}; shift ;;
    --keep) keep=1 ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "build_times: unknown argument '$1'; fix: see --help" >&2; exit 2 ;;
  esac
  shift
done
((do_demo || do_ci)) || do_demo=1 do_ci=1

commit=$(git -C "$here" rev-parse --verify "$ref^{commit}" 2>/dev/null) ||
  { echo "build_times: '$ref' is not a commit of $here; fix: --ref COMMIT" >&2; exit 2; }
echo "build_times: commit $commit, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
"$here/scripts/install-deps" >/dev/null

work=$(mktemp -d "${TMPDIR:-/tmp}/rpl-build-times.XXXXXX")
trap '((keep)) || rm -rf "$work"' EXIT # a failed measurement keeps its clone and log

fresh_clone() { # name
  git clone --quiet --no-hardlinks "$here" "$work/$1"
  git -C "$work/$1" checkout --quiet "$commit"
}

status=0
if ((do_demo)); then
  fresh_clone demo
  start=$SECONDS
  if ! (cd "$work/demo" && CCACHE_DISABLE=1 make demo >"$work/demo.log" 2>&1); then
    echo "build_times: make demo FAILED (log: $work/demo.log)"; tail -20 "$work/demo.log"; status=1; keep=1
  fi
  took=$((SECONDS - start))
  printf 'make demo        %5d s  (%d min %02d s)  target 300 s: %.2f of it\n' \
    "$took" $((took / 60)) $((took % 60)) "$(awk -v t="$took" 'BEGIN { print t / 300 }')"
fi
if ((do_ci)); then
  fresh_clone ci
  start=$SECONDS
  if ! (cd "$work/ci" && CCACHE_DISABLE=1 bash .ci/run >"$work/ci.log" 2>&1); then
    echo "build_times: .ci/run FAILED (log: $work/ci.log)"; tail -30 "$work/ci.log"; status=1; keep=1
  fi
  took=$((SECONDS - start))
  sed -n '/== ci: stage wall times/,$p' "$work/ci.log"
  printf '.ci/run          %5d s  (%d min %02d s)  target 2400 s: %.2f of it\n' \
    "$took" $((took / 60)) $((took % 60)) "$(awk -v t="$took" 'BEGIN { print t / 2400 }')"
  grep -E 'tests passed|tests failed' "$work/ci.log" || true
fi
((keep)) && echo "build_times: clones and logs kept in $work"
exit $status
