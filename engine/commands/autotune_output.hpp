#pragma once
/// What `rocm-perf autotune` prints: a one-line progress display on a terminal (plain log lines in
/// a pipe), the ranked table, and the winner's median for --quiet.

#include <cstdio>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "engine/autotune/autotune.hpp"

namespace rpl::engine::commands {

/// "1.234" (nanoseconds shown as milliseconds with three decimals).
std::string format_ms(double ns);
/// "A=1 B=x": a configuration's parameters on one line.
std::string params_text(const nlohmann::json& params);

/// The progress observer: a line rewritten in place on a terminal, one log line per candidate in a
/// pipe, nothing when quiet.
class progress_printer {
public:
  progress_printer(bool interactive, bool quiet) : interactive_(interactive), quiet_(quiet) {}
  void operator()(const autotune_progress& p);
  /// Ends the in-place line, if one was printed.
  void finish();

private:
  bool interactive_;
  bool quiet_;
  bool printed_line_ = false;
};

/// The ten best, the invalid candidates with their reasons, and the winner.
void print_table(const autotune_result& result);

} // namespace rpl::engine::commands
