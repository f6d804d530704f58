#include "engine/commands/profile_output.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>

#include "stages/analysis/report_text.hpp"

namespace rpl::engine::commands {

int emit_report(const stages::profile_report& report, const report_options& options) {
  const nlohmann::json document = stages::to_json(report);
  if (!options.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.out, ec);
    std::ofstream out(options.out / "profile.json");
    out << document.dump(2) << '\n';
    if (!out) {
      std::fprintf(stderr,
                   "rocm-perf: error: --out %s: cannot write profile.json; fix: choose a "
                   "writable folder\n",
                   options.out.c_str());
      return 2;
    }
  }
  if (options.json) {
    std::cout << document.dump(2) << std::endl;
  } else if (options.quiet) {
    std::printf("%.6f\n", stages::milliseconds(report.stability.median_ns));
  } else {
    std::fputs(stages::report_text(report).c_str(), stdout);
    if (!options.out.empty()) {
      std::printf("\nwrote %s\n", (options.out / "profile.json").c_str());
    }
  }
  return 0;
}

} // namespace rpl::engine::commands
