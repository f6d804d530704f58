#include "workers/compile/compile_request_check.hpp"

#include <cstring>

#include "workers/compilers/compiler_rules.hpp"

namespace rpl::workers {

namespace {

namespace fs = std::filesystem;

constexpr const char* out_placeholder = "{OUT}";

/// Empty when `name` may be written inside the job directory, else why it may not.
std::string check_source_name(const std::string& name) {
  if (name.empty())
    return "is empty";
  if (name.find('\0') != std::string::npos)
    return "contains a NUL byte";
  const fs::path path(name);
  if (path.is_absolute() || name.front() == '/')
    return "is an absolute path";
  for (const fs::path& part : path) {
    if (part == "..")
      return "contains '..'";
  }
  const fs::path normal = path.lexically_normal();
  if (normal.empty() || normal == "." || !normal.has_filename())
    return "does not name a file";
  if (normal == artifact_file_name)
    return std::string("collides with the artifact path ") + artifact_file_name;
  return {};
}

std::string substitute_out(const std::string& word, const std::string& artifact, bool& used) {
  std::string result;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t found = word.find(out_placeholder, begin);
    if (found == std::string::npos)
      break;
    used = true;
    result.append(word, begin, found - begin);
    result += artifact;
    begin = found + std::strlen(out_placeholder);
  }
  result.append(word, begin, std::string::npos);
  return result;
}

} // namespace

std::string request_refusal(const messages::compile_request& request) {
  if (request.argv.empty() || request.argv.front().empty())
    return "the compile request has an empty argv";
  for (const messages::source_file& source : request.sources) {
    const std::string why = check_source_name(source.name);
    if (!why.empty()) {
      return "source name '" + source.name + "' " + why +
             "; names must be relative paths inside the job directory, without '..'";
    }
  }
  return {};
}

std::vector<std::string> job_argv(const messages::compile_request& request,
                                  const fs::path& program,
                                  const fs::path& job_dir,
                                  bool& wants_artifact) {
  const std::string artifact = (job_dir / artifact_file_name).string();
  std::vector<std::string> argv = {program.string()};
  for (std::size_t i = 1; i < request.argv.size(); ++i)
    argv.push_back(substitute_out(request.argv[i], artifact, wants_artifact));
  return compiler_rules_for(argv).worker_argv(std::move(argv));
}

} // namespace rpl::workers
