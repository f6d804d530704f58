// libFuzzer target: check_argv (workers/compilers/argv_check.hpp), the compile worker's judgement
// of a job's arguments, on arbitrary words (issue 28).
//
// The first byte picks the compiler (g++, clang++, nvcc, hipcc, or one no family claims); the rest
// is split at '\n' into the words after it (a NUL stays inside a word). A finding is a crash or an
// exception; a refusal whose message does not name its flag; a verdict that changes when asked
// twice; or an argv let through that holds what no dialect ever lets through: a word starting
// with '@', a NUL, or (nvcc, hipcc, an unknown compiler) a character outside the shell-safe set.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "workers/compilers/argv_check.hpp"

namespace {

namespace w = rpl::workers;

constexpr const char* compilers[] = {"g++", "clang++", "/usr/local/cuda/bin/nvcc", "hipcc", "mycc"};
constexpr std::string_view shell_safe = "-_=+,./:";

bool safe_in_shell(const std::string& word) {
  for (const char c : word) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && shell_safe.find(c) == std::string_view::npos)
      return false;
  }
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  const std::size_t family = data[0] % (sizeof compilers / sizeof compilers[0]);
  std::vector<std::string> argv = {compilers[family]};
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  std::size_t begin = 0;
  while (begin <= rest.size() && !rest.empty()) {
    const auto end = rest.find('\n', begin);
    argv.emplace_back(rest.substr(begin, end == std::string_view::npos ? end : end - begin));
    if (end == std::string_view::npos)
      break;
    begin = end + 1;
  }
  const w::argv_limits limits{"/tmp/rpl-job-1-1-fuzz", {"/opt/vendor/include"}};
  const auto verdict = w::check_argv(argv, limits);
  const auto again = w::check_argv(argv, limits);
  if (verdict.has_value() != again.has_value() ||
      (verdict && (verdict->flag != again->flag || verdict->why != again->why)))
    __builtin_trap();
  if (verdict) {
    if (verdict->why.empty() || verdict->message().rfind("refused flag " + verdict->flag, 0) != 0)
      __builtin_trap();
    return 0;
  }
  const bool shell = family >= 2; // nvcc, hipcc and the unknown compiler
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    if ((!word.empty() && word.front() == '@') || word.find('\0') != std::string::npos)
      __builtin_trap();
    if (shell && !safe_in_shell(word))
      __builtin_trap();
  }
  return 0;
}
