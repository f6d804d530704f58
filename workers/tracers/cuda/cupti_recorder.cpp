#include "workers/tracers/cuda/cupti_recorder.hpp"

#include <cstdlib>

#include "workers/tracers/detail/recorded_child.hpp"

namespace rpl::workers {

std::optional<std::filesystem::path> find_cupti_tracer(const std::filesystem::path& explicit_path) {
  if (!explicit_path.empty()) {
    return explicit_path;
  }
  if (const char* env = std::getenv("RPL_CUPTI_TRACER"); env != nullptr && *env != '\0') {
    return std::filesystem::path(env);
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  for (const auto& candidate : {exe.parent_path().parent_path() / "lib" / "librpl_cupti_tracer.so",
                                exe.parent_path() / "librpl_cupti_tracer.so",
                                exe.parent_path() / "lib" / "librpl_cupti_tracer.so"}) {
    if (std::filesystem::exists(candidate, ec)) {
      return candidate;
    }
  }
  return std::nullopt;
}

cupti_recorder::cupti_recorder(cupti_recorder_options options) : options_(std::move(options)) {}

recorded_run cupti_recorder::record(const std::vector<std::string>& argv,
                                    const std::filesystem::path& folder,
                                    unsigned run) {
  std::filesystem::create_directories(folder);
  child_options child;
  child.argv = argv;
  child.environment = {{"CUDA_INJECTION64_PATH", options_.library.string()},
                       {"RPL_TRACE_DIR", folder.string()}};
  child.environment.insert(child.environment.end(), options_.environment.begin(),
                           options_.environment.end());
  const auto outcome = tracers_detail::run_recorded_child(
      child, options_.timeout, options_.echo_output, "application, run " + std::to_string(run));
  recorded_run out;
  out.wall = outcome.wall;
  const std::string app = tracers_detail::join_argv(argv);
  if (!outcome.succeeded()) {
    out.status = record_status::run_failed;
    out.reason = app + " " + tracers_detail::describe_failure(outcome) +
                 " under the CUPTI tracer; fix: run it alone, or with --debug to see its output\n" +
                 tracers_detail::output_tail(outcome);
    return out;
  }
  out.databases = tracers_detail::find_databases(folder);
  if (out.databases.empty()) {
    out.status = record_status::no_trace;
    out.reason = app + " left no trace: the tracer writes a database only for processes that use "
                       "CUDA; fix: check that the application launches CUDA kernels, and run with "
                       "--debug to see the tracer's messages";
  }
  return out;
}

} // namespace rpl::workers
