// libFuzzer target: a compile worker's job decoder (issue 28): the bytes of a COMPILE_REQUEST
// body, as a rogue engine would send them, through messages::decode, request_refusal and the argv
// the compiler would get in a job folder (job_argv), judged by check_argv
// (workers/compile/compile_request_check.hpp, workers/compilers/argv_check.hpp).
//
// A finding is a crash or any exception but decode_error; a source name let through that would be
// written outside the job folder; an {OUT} that does not become the artifact path in the job
// folder; an argv let through that holds a word starting with '@' or a NUL.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "messages/codec.hpp"
#include "messages/wire.hpp"
#include "workers/compile/compile_request_check.hpp"
#include "workers/compilers/argv_check.hpp"

namespace {

namespace fs = std::filesystem;
namespace m = rpl::messages;
namespace w = rpl::workers;

const fs::path job_dir = "/tmp/rpl-job-1-1-fuzz";

bool inside_job(const fs::path& path) {
  const fs::path relative = path.lexically_normal().lexically_relative(job_dir);
  return !relative.empty() && *relative.begin() != ".." && relative != ".";
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  m::compile_request request;
  try {
    request =
        m::decode<m::compile_request>(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const m::decode_error&) {
    return 0;
  }
  if (!w::request_refusal(request).empty())
    return 0;
  for (const auto& source : request.sources) {
    // What the worker writes: the job folder joined with the name, normalised.
    if (!inside_job(job_dir / fs::path(source.name).lexically_normal()))
      __builtin_trap();
  }
  bool wants_artifact = false;
  // argv[0] as the worker would run it: the job's own word stands in for the chosen program.
  const auto argv = w::job_argv(request, request.argv.front(), job_dir, wants_artifact);
  bool placeholder = false;
  for (std::size_t i = 1; i < request.argv.size(); ++i)
    placeholder = placeholder || request.argv[i].find("{OUT}") != std::string::npos;
  if (wants_artifact != placeholder)
    __builtin_trap();
  // Every {OUT} replaced (the artifact path has no braces, so none can form anew).
  for (std::size_t i = 1; i < argv.size(); ++i)
    if (argv[i].find("{OUT}") != std::string::npos)
      __builtin_trap();
  if (w::check_argv(argv, {job_dir, {}}))
    return 0;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    if ((!argv[i].empty() && argv[i].front() == '@') || argv[i].find('\0') != std::string::npos)
      __builtin_trap();
  }
  return 0;
}
