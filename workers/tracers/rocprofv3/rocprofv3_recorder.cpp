#include "workers/tracers/rocprofv3/rocprofv3_recorder.hpp"

#include <cstdlib>

#include "workers/process/find_program.hpp"
#include "workers/tracers/detail/recorded_child.hpp"

namespace rpl::workers {

std::optional<std::filesystem::path> find_rocprofv3(const std::filesystem::path& explicit_path) {
  if (!explicit_path.empty()) {
    return explicit_path;
  }
  if (const char* env = std::getenv("ROCPROFV3"); env != nullptr && *env != '\0') {
    return std::filesystem::path(env);
  }
  return find_on_path("rocprofv3");
}

rocprofv3_recorder::rocprofv3_recorder(rocprofv3_options options) : options_(std::move(options)) {}

recorded_run rocprofv3_recorder::record(const std::vector<std::string>& argv,
                                        const std::filesystem::path& folder,
                                        unsigned run) {
  std::filesystem::create_directories(folder);
  child_options child;
  child.argv = {options_.executable.string(),
                "--kernel-trace",
                "--output-format",
                "rocpd",
                "-d",
                folder.string(),
                "--"};
  child.argv.insert(child.argv.end(), argv.begin(), argv.end());
  child.environment = options_.environment;
  const auto outcome = tracers_detail::run_recorded_child(
      child, options_.timeout, options_.echo_output, "rocprofv3, run " + std::to_string(run));
  recorded_run out;
  out.wall = outcome.wall;
  out.leftovers = outcome.leftovers;
  if (!outcome.succeeded()) {
    out.status = record_status::run_failed;
    out.reason = "rocprofv3 " + tracers_detail::describe_failure(outcome) +
                 "; fix: run with --debug to see rocprofv3's output\n" +
                 tracers_detail::output_tail(outcome);
    return out;
  }
  out.databases = tracers_detail::find_databases(folder);
  return out;
}

} // namespace rpl::workers
