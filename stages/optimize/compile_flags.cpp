#include "stages/optimize/compile_flags.hpp"

#include <filesystem>

namespace rpl::stages::optimize {

namespace {

bool flag_starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

} // namespace

std::string source_language(std::string_view source_path, std::string_view compiler) {
  if (std::filesystem::path(source_path).extension() == ".hip" ||
      flag_starts_with(std::filesystem::path(compiler).filename().string(), "hipcc")) {
    return "hip";
  }
  return "cuda";
}

std::vector<std::string> parser_flags(const std::vector<std::string>& words) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& f = words[i];
    if (f == "-D" || f == "-U" || f == "-I" || f == "-isystem") {
      if (i + 1 < words.size()) {
        out.push_back(f);
        out.push_back(words[++i]);
      }
    } else if (flag_starts_with(f, "-D") || flag_starts_with(f, "-U") ||
               flag_starts_with(f, "-I") || flag_starts_with(f, "-isystem") ||
               flag_starts_with(f, "-std=")) {
      out.push_back(f);
    } else if (flag_starts_with(f, "--std=")) {
      out.push_back(f.substr(1));
    }
  }
  return out;
}

} // namespace rpl::stages::optimize
