#include "engine/optimize/app_sanitizer.hpp"

#include <spdlog/spdlog.h>

#include "workers/lanes/kernel/sanitizer_pass.hpp"

namespace rpl::engine {

namespace {

/// One tool's verdict on a kernel's change: the candidate's run, and the original's when the
/// candidate's was not clean.
struct tool_verdict {
  workers::sanitizer_outcome run;
  std::string status; ///< "clean", "finding", "original_finding", "not_run"
  std::string reason;
};

/// Each verdict as a validation case in the kernel's last accepted attempt's record.
void record_outcomes(target_result& r, const std::vector<tool_verdict>& verdicts) {
  attempt_record* last = nullptr;
  for (auto& a : r.attempts)
    if (a.verdict == attempt_verdict::accepted)
      last = &a;
  if (last == nullptr)
    return;
  auto record = nlohmann::json::parse(last->validation, nullptr, false);
  if (!record.is_array())
    record = nlohmann::json::array();
  for (const auto& v : verdicts) {
    nlohmann::json entry = {{"case", "sanitizer:" + v.run.tool},
                            {"scope", "application"},
                            {"status", v.status},
                            {"reason", v.reason},
                            {"seconds", v.run.seconds},
                            {"log", v.run.log.string()}};
    if (!v.run.other_report.empty())
      entry["not_the_kernels"] = v.run.other_report;
    record.push_back(entry);
  }
  last->validation = record.dump();
}

/// `tool` on the rebuilt application, and on the original where that run is not clean.
tool_verdict judge(const target_result& r,
                   const std::string& tool,
                   const app_sanitizer_pass& pass,
                   const app_tools& tools) {
  const auto symbol = pass.symbols.find(r.kernel);
  app_sanitize_request request;
  request.argv = pass.argv;
  request.kernel = {symbol != pass.symbols.end() ? symbol->second : r.kernel, r.kernel};
  request.tool = tool;
  request.log_dir = pass.log_dir;
  request.log_stem = "app." + r.kernel;
  request.device = pass.device;
  request.timeout = pass.tool_timeout;
  tool_verdict v{tools.sanitize(request), "clean", ""};
  if (v.run.clean)
    return v;
  v.reason = v.run.first_report;
  if (v.run.timed_out && !v.run.reported) {
    v.status = "not_run";
    return v;
  }
  request.argv = pass.original_argv;
  request.log_stem = "original." + r.kernel;
  const auto original = tools.sanitize(request);
  v.run.seconds += original.seconds;
  if (original.clean || (original.timed_out && !original.reported)) {
    v.status = "finding";
    return v;
  }
  v.status = "original_finding";
  v.reason += "; the original application gives " + original.first_report +
              " under it too (log: " + original.log.string() + "), so it cannot judge the change";
  return v;
}

/// The kernel's change refused by `found`: its accepted attempts rejected at the sanitizer, the
/// kernel unchanged, its diff dropped.
void refuse(target_result& r, const workers::sanitizer_outcome& found) {
  const std::string why =
      "compute-sanitizer " + found.tool +
      " on the application rebuilt with the kernel's accepted change: " + found.first_report +
      " (log: " + found.log.string() + ")";
  for (auto& a : r.attempts) {
    if (a.verdict != attempt_verdict::accepted)
      continue;
    a.verdict = attempt_verdict::rejected;
    a.stage = attempt_stage::sanitizer;
    a.guard = sanitizer_finding(found.tool);
    a.detail = why;
  }
  r.status = "unchanged";
  r.reason = "its accepted change was refused by " + why;
  r.best_ns = r.original_ns;
  r.best_source.clear();
  r.accepted_diff.clear();
}

} // namespace

nlohmann::json sanitize_accepted(std::vector<target_result>& results,
                                 const app_sanitizer_pass& pass,
                                 const app_tools& tools,
                                 const std::atomic<bool>& stop) {
  const std::string missing = !tools.sanitize           ? "no sanitizer for this backend"
                              : tools.sanitizer_missing ? tools.sanitizer_missing()
                                                        : std::string();
  if (!missing.empty()) {
    spdlog::warn("the accepted changes are not sanitizer-checked on the application: {}", missing);
    return {{"ran", false}, {"not_run", missing}};
  }
  std::error_code ec;
  std::filesystem::create_directories(pass.log_dir, ec);
  nlohmann::json refused = nlohmann::json::object();
  double seconds = 0;
  for (auto& r : results) {
    if (r.status != "improved")
      continue;
    if (stop)
      return {{"ran", false}, {"not_run", "interrupted"}, {"refused", refused}};
    std::vector<tool_verdict> verdicts;
    for (const auto tool : workers::sanitizer_tools) {
      verdicts.push_back(judge(r, std::string(tool), pass, tools));
      const auto& v = verdicts.back();
      seconds += v.run.seconds;
      spdlog::info("{}: compute-sanitizer {} on the application: {}{} ({:.1f} s)", r.kernel, tool,
                   v.status, v.reason.empty() ? "" : ": " + v.reason, v.run.seconds);
      if (v.status == "finding")
        break;
    }
    record_outcomes(r, verdicts);
    if (verdicts.back().status == "finding") {
      refuse(r, verdicts.back().run);
      refused[r.kernel] = "sanitizer:" + verdicts.back().run.tool + ": " + verdicts.back().reason;
      spdlog::warn("{}: {}", r.kernel, r.reason);
    }
  }
  return {{"ran", true}, {"seconds", seconds}, {"refused", refused}};
}

} // namespace rpl::engine
