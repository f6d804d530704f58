#include "workers/lanes/kernel/sanitizer_pass.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "messages/codec.hpp"
#include "workers/lanes/kernel/lane_process.hpp"
#include "workers/process/child_process.hpp"
#include "workers/process/exit_description.hpp"
#include "workers/process/find_program.hpp"

namespace rpl::workers {

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

/// compute-sanitizer's exit status when its tool reported an error (--error-exitcode).
constexpr int found_errors = 86;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// compute-sanitizer and its options, before the program it runs.
std::vector<std::string>
tool_argv(const sanitizer_options& options, std::string_view tool, const fs::path& log) {
  return {options.sanitizer.string(), "--tool", std::string(tool), "--error-exitcode",
          std::to_string(found_errors), "--log-file", log.string(), "--print-limit", "20",
          // The lane's (or the application's) own API calls are not the candidate's errors.
          "--report-api-errors", "no"};
}

std::vector<std::string>
sanitizer_argv(const sanitizer_options& options, std::string_view tool, const fs::path& log) {
  std::vector<std::string> argv = tool_argv(options, tool, log);
  argv.push_back(options.lane_program.string());
  argv.push_back("--no-red-zones"); // the tool must see each buffer's true end
  return argv;
}

/// Sends every request and reads its reply; empty when all were answered, else what went wrong.
std::string converse(lane_process& lane,
                     const std::vector<messages::kernel_lane_request>& requests,
                     clock_type::time_point deadline) {
  std::string payload;
  std::string error;
  if (lane.receive(payload, deadline, error) != frame_wait::frame)
    return "the lane gave no hello under the tool" + (error.empty() ? "" : " (" + error + ")");
  const auto hello = messages::decode<messages::kernel_lane_hello>(payload);
  if (hello.status != messages::kernel_lane_status::ok)
    return "no usable GPU under the tool: " + hello.reason;
  for (const auto& request : requests) {
    if (!lane.send(messages::encode(request), deadline, error))
      return "the lane stopped taking requests (" + error + ")";
    const frame_wait got = lane.receive(payload, deadline, error);
    if (got == frame_wait::timed_out)
      return "timed out";
    if (got != frame_wait::frame)
      return "the lane ended during a launch";
    const auto reply = messages::decode<messages::kernel_lane_reply>(payload);
    if (reply.status != messages::kernel_lane_status::ok)
      return std::string(messages::to_string(reply.status)) + ": " + reply.reason;
  }
  return {};
}

} // namespace

std::optional<fs::path> find_compute_sanitizer() {
  if (const char* env = std::getenv("RPL_COMPUTE_SANITIZER"); env != nullptr && *env != '\0')
    return fs::path(env);
  if (auto found = find_on_path("compute-sanitizer"))
    return found;
  const fs::path bundled = "/usr/local/cuda/bin/compute-sanitizer";
  if (::access(bundled.c_str(), X_OK) == 0)
    return bundled;
  return std::nullopt;
}

std::vector<std::string> sanitizer_reports(std::string_view log) {
  constexpr std::string_view prefix = "========= ";
  std::istringstream lines{std::string(log)};
  std::vector<std::string> reports;
  bool open = false; // the last report may take the location on the line after it
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) != 0)
      continue;
    const std::string body = line.substr(prefix.size());
    if (open) {
      open = false;
      const std::size_t at = body.find_first_not_of(' ');
      if (at != std::string::npos && at > 0 && body.compare(at, 3, "at ") == 0) {
        reports.back() += " " + body.substr(at);
        continue;
      }
    }
    // Not the tool's notices about itself ("Warning: Maximum number of hazards reached").
    if (body.empty() || body.front() == ' ' || body.rfind("COMPUTE-SANITIZER", 0) == 0 ||
        body.find("SUMMARY") != std::string::npos ||
        body.find("Maximum number of") != std::string::npos)
      continue;
    reports.push_back(body);
    open = true;
  }
  return reports;
}

std::string first_sanitizer_report(std::string_view log) {
  const auto reports = sanitizer_reports(log);
  return reports.empty() ? std::string() : reports.front();
}

sanitizer_outcome run_sanitizer(const sanitizer_options& options,
                                std::string_view tool,
                                const std::vector<messages::kernel_lane_request>& requests) {
  sanitizer_outcome out;
  out.tool = std::string(tool);
  out.log = options.log_dir / (options.log_stem + "." + out.tool + ".log");
  const auto start = clock_type::now();
  std::error_code ec;
  fs::remove(out.log, ec); // a stale log must not speak for this run
  lane_process_options spawn;
  spawn.argv = sanitizer_argv(options, tool, out.log);
  spawn.environment.emplace_back("CUDA_VISIBLE_DEVICES", std::to_string(options.device));
  lane_process lane = lane_process::spawn(spawn);
  std::string failure;
  std::string ended;
  if (!lane.running()) {
    failure = "could not start " + options.sanitizer.string() + ": " + lane.launch_error();
  } else {
    try {
      failure = converse(lane, requests, start + options.timeout);
    } catch (const messages::decode_error& e) {
      failure = std::string("unreadable frame from the lane (") + e.what() + ")";
    }
    ended = failure == "timed out" ? lane.kill() : lane.stop(std::chrono::seconds(60));
  }
  out.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  const std::string report = first_sanitizer_report(read_all(out.log));
  const std::optional<int> code = lane.exit_code();
  out.reported = !report.empty();
  out.timed_out = failure == "timed out";
  out.clean = failure.empty() && code == 0 && report.empty();
  if (out.clean)
    return out;
  if (!report.empty())
    out.first_report = report;
  else if (!failure.empty())
    out.first_report = "no report, but under " + out.tool + ": " + failure;
  else
    out.first_report = "no report, but compute-sanitizer " + ended;
  if (code == found_errors && report.empty())
    out.first_report += " (it exited with --error-exitcode " + std::to_string(found_errors) + ")";
  return out;
}

namespace {

/// Whether an application-pass report is the watched kernel's: not about the host's API calls,
/// and with initcheck (which watches every kernel) located in the kernel's function.
bool kernel_report(const std::string& report, std::string_view tool, const std::string& function) {
  if (report.rfind("Host API", 0) == 0 || report.rfind("Program hit", 0) == 0)
    return false;
  if (tool != "initcheck")
    return true;
  for (const char after : {'+', '('})
    if (report.find("at " + function + after) != std::string::npos)
      return true;
  return false;
}

} // namespace

sanitizer_outcome run_app_sanitizer(const sanitizer_options& options,
                                    std::string_view tool,
                                    const std::vector<std::string>& argv,
                                    const app_kernel_watch& kernel) {
  sanitizer_outcome out;
  out.tool = std::string(tool);
  out.log = options.log_dir / (options.log_stem + "." + out.tool + ".log");
  std::error_code ec;
  fs::remove(out.log, ec); // a stale log must not speak for this run
  child_options child;
  child.argv = tool_argv(options, tool, out.log);
  if (tool != "initcheck")
    child.argv.insert(child.argv.end(), {"--kernel-name", "kne=" + kernel.symbol});
  // The application's buffers may abut (whole 2 MiB pages): padding after each allocation makes
  // an access past one's end an access to no allocation, which memcheck reports.
  if (tool == "memcheck")
    child.argv.insert(child.argv.end(), {"--padding", "4096"});
  child.argv.insert(child.argv.end(), argv.begin(), argv.end());
  child.environment.emplace_back("CUDA_VISIBLE_DEVICES", std::to_string(options.device));
  child.max_output_bytes = 1 << 20;
  const child_outcome ran = run_child(child, options.timeout);
  out.seconds = std::chrono::duration<double>(ran.wall).count();
  out.timed_out = ran.timed_out;
  {
    std::ofstream saved(options.log_dir / (options.log_stem + "." + out.tool + ".out"),
                        std::ios::binary);
    saved << ran.output;
  }
  for (const auto& report : sanitizer_reports(read_all(out.log))) {
    const bool mine = kernel_report(report, tool, kernel.function);
    std::string& slot = mine ? out.first_report : out.other_report;
    if (slot.empty())
      slot = report;
    out.reported = out.reported || mine;
  }
  const bool ended = ran.launched && !ran.timed_out && ran.term_signal == 0 &&
                     (ran.exit_code == 0 || ran.exit_code == found_errors);
  out.clean = ended && !out.reported;
  if (!out.clean && !out.reported)
    out.first_report = "no report, but under " + out.tool + " the application " +
                       describe_exit(ran, options.timeout);
  return out;
}

} // namespace rpl::workers
