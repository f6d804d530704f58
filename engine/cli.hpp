#pragma once
/// The `rocm-perf` command line (CLI11): `autotune` and `worker compile`. Exceptions from start-up
/// and configuration end here and become an error message and an exit code.

namespace rpl::engine {

/// Exit codes: 0 success, 1 the run failed, 2 bad input, 3 no valid candidate, 130 interrupted.
int run_cli(int argc, char** argv);

} // namespace rpl::engine
