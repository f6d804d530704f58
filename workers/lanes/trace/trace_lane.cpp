#include "workers/lanes/trace/trace_lane.hpp"

#include <cctype>
#include <cerrno>
#include <exception>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <utility>

#include <spdlog/spdlog.h>
#include <stdlib.h>

#include "stages/trace/rocpd_reader.hpp"
#include "workers/process/descendant_reaper.hpp"

namespace rpl::workers {

namespace {

using messages::measure_status;

/// How a failed recorded run ended. recorded_run carries only a reason, whose first line words
/// the child's end with describe_exit() ("exited with status 3", "was killed by SIGSEGV (...)",
/// "timed out"; anything else is a launch error), so the status is read back from that wording.
/// Only the first line is read: the rest quotes the application's output.
struct failure_kind {
  measure_status status = measure_status::launch_failed;
  std::int32_t exit_code = 0;
};

failure_kind classify_failure(const std::string& reason) {
  const std::string first_line = reason.substr(0, reason.find('\n'));
  failure_kind kind;
  if (first_line.find(" timed out") != std::string::npos) {
    kind.status = measure_status::timed_out;
  } else if (first_line.find(" was killed by ") != std::string::npos) {
    kind.status = measure_status::crashed;
  } else if (const auto at = first_line.find(" exited with status "); at != std::string::npos) {
    kind.status = measure_status::nonzero_exit;
    kind.exit_code = static_cast<std::int32_t>(
        std::strtol(first_line.c_str() + at + sizeof(" exited with status ") - 1, nullptr, 10));
  }
  return kind;
}

/// A candidate key as a folder name: [A-Za-z0-9._-] kept, the rest '_', at most 80 characters.
std::string folder_name(const std::string& key) {
  std::string name;
  for (const char c : key.substr(0, 80)) {
    const auto u = static_cast<unsigned char>(c);
    name += std::isalnum(u) != 0 || c == '.' || c == '_' || c == '-' ? c : '_';
  }
  return name.empty() ? std::string("candidate") : name;
}

std::filesystem::path make_private_folder() {
  std::string pattern = (std::filesystem::temp_directory_path() / "rpl-trace-lane-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::filesystem::filesystem_error("trace lane: cannot create a work folder", pattern,
                                            std::error_code(errno, std::generic_category()));
  }
  return pattern;
}

/// The samples of one recorded run, or the reason it has none (a sentence after "run N: ").
struct run_samples {
  std::vector<std::int64_t> samples_ns;
  std::string reason; ///< empty when samples_ns holds something
};

run_samples read_samples(const recorded_run& run, const stages::rocpd::kernel_selector& selector) {
  run_samples out;
  stages::rocpd::dispatch_collector collector(selector);
  if (!run.databases.empty()) {
    try {
      const auto reader = stages::rocpd::reader::open(run.databases);
      reader.for_each_dispatch([&](const stages::rocpd::dispatch_row& row) {
        collector.add(row.kernel_name, row.pid, row.start_ns, row.end_ns);
      });
    } catch (const std::exception& error) {
      out.reason = std::string("its trace cannot be read: ") + error.what();
      return out;
    }
  }
  const stages::rocpd::run_selection selection = collector.finish();
  out.samples_ns = stages::rocpd::kernel_objective_samples(selection);
  if (out.samples_ns.empty()) {
    out.reason = stages::rocpd::describe_empty_selection(selector, selection);
  }
  return out;
}

} // namespace

trace_recorder_factory rocprofv3_recorder_factory(rocprofv3_options base) {
  return [base = std::move(base)](std::chrono::milliseconds timeout) -> trace_recorder_ptr {
    rocprofv3_options options = base;
    options.timeout = timeout;
    return std::make_unique<rocprofv3_recorder>(std::move(options));
  };
}

trace_recorder_factory cupti_recorder_factory(cupti_recorder_options base) {
  return [base = std::move(base)](std::chrono::milliseconds timeout) -> trace_recorder_ptr {
    cupti_recorder_options options = base;
    options.timeout = timeout;
    return std::make_unique<cupti_recorder>(std::move(options));
  };
}

trace_lane::trace_lane(trace_lane_options options)
    : options_(std::move(options)), selector_(options_.kernel_regex, options_.warmup_dispatches) {
  if (!options_.make_recorder) {
    throw std::invalid_argument("trace lane " + options_.name +
                                ": no recorder; fix: set trace_lane_options::make_recorder");
  }
  if (options_.work_folder.empty()) {
    work_folder_ = make_private_folder();
    owns_work_folder_ = true;
  } else {
    work_folder_ = options_.work_folder;
    std::filesystem::create_directories(work_folder_);
  }
}

trace_lane::~trace_lane() {
  if (owns_work_folder_ && !options_.keep_traces) {
    std::error_code ec;
    std::filesystem::remove_all(work_folder_, ec);
  }
}

messages::measure_result trace_lane::measure(const messages::measure_request& request) {
  messages::measure_result result;
  result.lane = options_.name;
  const std::chrono::milliseconds timeout(request.timeout_ms);
  const trace_recorder_ptr recorder = options_.make_recorder(timeout);
  const std::filesystem::path folder =
      work_folder_ / (std::to_string(++measurements_) + "-" + folder_name(request.candidate_key));

  const auto total = static_cast<std::int64_t>(request.warmup) + request.runs;
  std::vector<std::int64_t> samples;
  std::vector<pid_t> leftovers; // over every run, warm-ups included
  // Flags the result and says so in the log, once per measurement, on every way out.
  const auto report_leftovers = [&] {
    if (leftovers.empty())
      return;
    result.leftover_processes = static_cast<std::uint32_t>(leftovers.size());
    spdlog::warn("candidate {}: its runs on lane {} {}, killed them; the samples stand, the "
                 "candidate is flagged (leftover_processes)",
                 request.candidate_key, result.lane, describe_leftovers(leftovers));
  };
  for (std::int64_t index = 0; index < total; ++index) {
    const bool warmup = index < request.warmup;
    // Warm-ups are numbered -1, -2, ... and named "warm-up 1, 2, ..."; timed runs from 0.
    const auto run_index =
        static_cast<std::int32_t>(warmup ? -(index + 1) : index - request.warmup);
    const std::string run_name =
        warmup ? "warm-up " + std::to_string(-run_index) : "run " + std::to_string(run_index);
    const std::filesystem::path run_folder =
        folder /
        (warmup ? "warm-up-" + std::to_string(-run_index) : "run-" + std::to_string(run_index));
    const recorded_run run =
        recorder->record(request.argv, run_folder, static_cast<unsigned>(index + 1));
    leftovers.insert(leftovers.end(), run.leftovers.begin(), run.leftovers.end());

    run_samples read;
    if (run.status == record_status::run_failed) {
      const failure_kind kind = classify_failure(run.reason);
      result.status = kind.status;
      result.exit_code = kind.exit_code;
      read.reason = run.reason;
    } else if (run.status == record_status::no_trace) {
      result.status = measure_status::launch_failed;
      read.reason = run.reason;
    } else {
      read = read_samples(run, selector_);
      result.status = measure_status::launch_failed; // used only if the run gave no sample
    }
    if (!options_.keep_traces) {
      std::error_code ec;
      std::filesystem::remove_all(run_folder, ec);
    }
    if (!read.reason.empty()) {
      while (!read.reason.empty() && std::isspace(static_cast<unsigned char>(read.reason.back()))) {
        read.reason.pop_back();
      }
      result.failed_run = run_index;
      result.reason = run_name + ": " + read.reason;
      if (!options_.keep_traces) {
        std::error_code ec;
        std::filesystem::remove_all(folder, ec);
      }
      report_leftovers();
      return result;
    }
    if (!warmup) {
      samples.insert(samples.end(), read.samples_ns.begin(), read.samples_ns.end());
    }
  }
  if (!options_.keep_traces) {
    std::error_code ec;
    std::filesystem::remove_all(folder, ec);
  }

  result.status = measure_status::ok;
  result.exit_code = 0;
  result.failed_run = -1;
  result.samples_ns = std::move(samples);
  report_leftovers();
  return result;
}

} // namespace rpl::workers
