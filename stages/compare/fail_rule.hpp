#pragma once
/// compare's CI gate. `--fail-on slower:5%`: the run fails (exit 1) when some kernel's verdict is
/// `slower` and the low end of its ratio's interval is above 1 + 5 % (so it is slower by more than
/// 5 % with the stated confidence, not merely in the point estimate); `slower` alone (or
/// `slower:0%`) fails on any `slower` verdict. `--fail-on critical-path:2%`: fails when NEW's
/// critical path is more than 2 % longer than BASE's (what the application waits for, so a kernel
/// slower in the shadow of another does not trip it).

#include <optional>
#include <string>
#include <vector>

#include "stages/compare/comparison.hpp"

namespace rpl::stages::compare {

struct fail_rule {
  enum class kind { slower, critical_path };
  double slower_than = 0; ///< a fraction: 0.05 for "slower:5%"
  kind what = kind::slower;
};

/// Parses "slower", "slower:5%", "slower:5" (percent) or "critical-path:2%"; nullopt with `error`
/// set (naming the text and the accepted forms) otherwise.
std::optional<fail_rule> parse_fail_rule(const std::string& text, std::string& error);

/// What trips `rule`: the kernels, "name (ratio 1.103, interval 1.081-1.126)", or the critical
/// path, "critical path 12.000 ms -> 12.500 ms (+4.2 %)".
std::vector<std::string> tripped(const comparison& c, const fail_rule& rule);

} // namespace rpl::stages::compare
