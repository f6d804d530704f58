#pragma once
/// What a compile worker decides from a request alone, before anything on its host is looked at
/// (issue 28): whether the request is well formed (an argv, safe source names), and the argv the
/// compiler would get in a job folder, which check_argv (workers/compilers/argv_check.hpp) then
/// judges. Which compiler runs is the host's question (workers/compilers/compiler_choice.hpp).
/// Pure: no file is opened, nothing runs (the fuzz target fuzz_compile_job drives it).

#include <filesystem>
#include <string>
#include <vector>

#include "messages/wire.hpp"

namespace rpl::workers {

/// The artifact's name in the job folder: what {OUT} becomes.
inline constexpr const char* artifact_file_name = "artifact.out";

/// Why `request` may not run anywhere: an empty argv or argv[0], or a source name that is empty,
/// holds a NUL, is absolute, uses '..', names no file or is the artifact's. Empty when it may.
std::string request_refusal(const messages::compile_request& request);

/// The argv a worker runs for `request` in `job_dir`: `program` first, {OUT} replaced by
/// job_dir/artifact.out everywhere, then the additions of the compiler's rules (nvcc's
/// --resource-usage). `wants_artifact` says whether {OUT} appeared.
std::vector<std::string> job_argv(const messages::compile_request& request,
                                  const std::filesystem::path& program,
                                  const std::filesystem::path& job_dir,
                                  bool& wants_artifact);

} // namespace rpl::workers
