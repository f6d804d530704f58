#include "engine/commands/profile_output.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>

#include "stages/analysis/report_text.hpp"
#include "stages/trace/rocpd_schema.hpp"
#include "stages/trace/thread_trace.hpp"

namespace rpl::engine::commands {

namespace {

/// Writes `text` to `path`; false (said on stderr, naming the option) when it cannot.
bool write_file(const std::filesystem::path& path, const std::string& text, const char* option) {
  std::error_code ec;
  if (path.has_parent_path())
    std::filesystem::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "rocm-perf: error: %s %s: cannot write it; fix: choose a writable path\n",
                 option, path.c_str());
    return false;
  }
  return true;
}

} // namespace

int emit_report(const stages::profile_report& report,
                const report_options& options,
                const analysis_inputs* inputs) {
  const nlohmann::json document = stages::to_json(report);
  std::optional<analysis_outputs> analyzed;
  std::vector<std::filesystem::path> written;
  if (inputs != nullptr) {
    analysis_inputs wanted = *inputs;
    for (const auto& peak : options.peaks) {
      const auto eq = peak.find('=');
      char* end = nullptr;
      const double value = eq == std::string::npos ? 0 : std::strtod(peak.c_str() + eq + 1, &end);
      if (eq == std::string::npos || eq == 0 || end == peak.c_str() + eq + 1 || *end != '\0' ||
          !(value > 0)) {
        std::fprintf(stderr,
                     "rocm-perf: error: --peak %s: expected KEY=VALUE with a positive number; "
                     "fix: e.g. --peak hbm=4.8e12 (bytes/s) or --peak fp32=6.7e13 (FLOP/s)\n",
                     peak.c_str());
        return 2;
      }
      wanted.peak_overrides[peak.substr(0, eq)] = value;
    }
    wanted.want_timeline = !options.perfetto.empty() || !options.html.empty();
    wanted.want_dag = !options.out.empty();
    wanted.thread_traces.insert(wanted.thread_traces.end(), options.thread_traces.begin(),
                                options.thread_traces.end());
    try {
      analyzed = analyze_application(report, wanted);
    } catch (const stages::rocpd::rocpd_error& error) {
      std::fprintf(stderr, "rocm-perf: error: %s\n", error.what());
      return 2;
    } catch (const stages::att::thread_trace_error& error) {
      std::fprintf(stderr, "rocm-perf: error: --thread-trace %s\n", error.what());
      return 2;
    }
  }
  if (!options.out.empty()) {
    if (!write_file(options.out / "profile.json", document.dump(2) + '\n', "--out"))
      return 2;
    written.push_back(options.out / "profile.json");
    if (analyzed) {
      if (!write_file(options.out / "analysis.json",
                      stages::analysis::to_json(analyzed->analysis).dump(2) + '\n', "--out"))
        return 2;
      written.push_back(options.out / "analysis.json");
      if (!write_file(options.out / "dag.json", analyzed->dag.dump(2) + '\n', "--out"))
        return 2;
      written.push_back(options.out / "dag.json");
      if (!write_file(options.out / "roofline.json",
                      stages::analysis::to_json(analyzed->roofline).dump(2) + '\n', "--out"))
        return 2;
      written.push_back(options.out / "roofline.json");
    }
  }
  if (analyzed && !options.perfetto.empty()) {
    if (!write_file(options.perfetto,
                    stages::analysis::perfetto_trace(analyzed->ops, analyzed->flows).dump() + '\n',
                    "--perfetto"))
      return 2;
    written.push_back(options.perfetto);
  }
  if (analyzed && !options.html.empty()) {
    analyzed->page.timeline = std::move(analyzed->ops);
    if (!write_file(options.html, stages::analysis::html_report(analyzed->page), "--report"))
      return 2;
    written.push_back(options.html);
  }
  if (options.json) {
    std::cout << document.dump(2) << std::endl;
  } else if (options.quiet) {
    std::printf("%.6f\n", stages::milliseconds(report.stability.median_ns));
  } else {
    std::fputs(stages::report_text(report).c_str(), stdout);
    if (analyzed)
      std::printf("\n%s", stages::analysis::limits_text(analyzed->analysis).c_str());
    if (!written.empty())
      std::printf("\n");
    for (const auto& path : written)
      std::printf("wrote %s\n", path.c_str());
  }
  return 0;
}

} // namespace rpl::engine::commands
