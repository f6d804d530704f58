#include "stages/optimize/source_model.hpp"

#include <algorithm>
#include <cctype>

namespace rpl::stages::optimize {

const char* to_string(decl_kind kind) {
  switch (kind) {
  case decl_kind::kernel: return "kernel";
  case decl_kind::device_function: return "device function";
  case decl_kind::host_function: return "host function";
  case decl_kind::host_device_function: return "host-device function";
  case decl_kind::device_variable: return "__device__ variable";
  case decl_kind::constant_variable: return "__constant__ variable";
  case decl_kind::shared_variable: return "__shared__ variable";
  case decl_kind::host_variable: return "host variable";
  case decl_kind::type: return "type";
  case decl_kind::other: return "declaration";
  }
  return "declaration";
}

bool is_function(decl_kind kind) {
  return kind == decl_kind::kernel || kind == decl_kind::device_function ||
         kind == decl_kind::host_function || kind == decl_kind::host_device_function;
}

bool is_variable(decl_kind kind) {
  return kind == decl_kind::device_variable || kind == decl_kind::constant_variable ||
         kind == decl_kind::shared_variable || kind == decl_kind::host_variable;
}

const declaration* source_model::find_definition(std::string_view name) const {
  for (const declaration& d : declarations) {
    if (d.is_definition && is_function(d.kind) && (d.name == name || d.qualified_name == name)) {
      return &d;
    }
  }
  return nullptr;
}

std::size_t source_model::error_count() const {
  return static_cast<std::size_t>(std::count_if(
      diagnostics.begin(), diagnostics.end(), [](const diagnostic_info& d) { return d.is_error; }));
}

unsigned line_of(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1u + static_cast<unsigned>(std::count(
                  text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

std::vector<directive_info> scan_directives(std::string_view text) {
  std::vector<directive_info> out;
  bool line_start = true; // only whitespace since the last newline
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    const char c = text[i];
    if (c == '\n') {
      line_start = true;
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
    } else if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n') {
        ++i;
      }
    } else if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      const std::size_t close = text.find("*/", i + 2);
      i = close == std::string_view::npos ? n : close + 2; // a comment keeps line_start
    } else if (c == '#' && line_start) {
      std::size_t end = i;
      while (end < n) {
        if (text[end] == '\n') {
          std::size_t back = end;
          if (back > i && text[back - 1] == '\r') {
            --back;
          }
          if (back > i && text[back - 1] == '\\') {
            ++end;
            continue;
          }
          break;
        }
        ++end;
      }
      std::size_t stop = end;
      while (stop > i && (text[stop - 1] == '\r' || text[stop - 1] == ' ')) {
        --stop;
      }
      directive_info d;
      d.range = {i, stop};
      d.text = std::string(text.substr(i, stop - i));
      d.line = line_of(text, i);
      std::size_t k = i + 1;
      while (k < stop && (text[k] == ' ' || text[k] == '\t')) {
        ++k;
      }
      d.is_include = text.substr(k, 7) == "include" || text.substr(k, 6) == "import";
      out.push_back(std::move(d));
      i = end;
    } else if (c == '"' ||
               (c == '\'' && (i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1]))))) {
      line_start = false;
      std::size_t k = i + 1;
      while (k < n && text[k] != c && text[k] != '\n') {
        k += text[k] == '\\' ? 2 : 1;
      }
      i = std::min(n, k + 1);
    } else {
      line_start = false;
      ++i;
    }
  }
  return out;
}

bool unroll_pragma_precedes(std::string_view text, std::size_t offset) {
  // Walk back over whitespace and comments to the previous line that holds code or a directive.
  std::size_t pos = std::min(offset, text.size());
  while (true) {
    while (pos > 0 && std::isspace(static_cast<unsigned char>(text[pos - 1]))) {
      --pos;
    }
    if (pos >= 2 && text[pos - 1] == '/' && text[pos - 2] == '*') {
      const std::size_t open = text.rfind("/*", pos - 2);
      if (open == std::string_view::npos) {
        return false;
      }
      pos = open;
      continue;
    }
    const std::size_t line_begin = text.rfind('\n', pos == 0 ? 0 : pos - 1);
    const std::size_t begin = line_begin == std::string_view::npos ? 0 : line_begin + 1;
    std::string_view line = text.substr(begin, pos - begin);
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) {
      return false;
    }
    line.remove_prefix(first);
    if (line.substr(0, 2) == "//") {
      pos = begin;
      continue;
    }
    if (line.empty() || line.front() != '#') {
      return false;
    }
    line.remove_prefix(1);
    const std::size_t word = line.find_first_not_of(" \t");
    if (word == std::string_view::npos) {
      return false;
    }
    line.remove_prefix(word);
    if (line.substr(0, 6) != "pragma") {
      return false;
    }
    line.remove_prefix(6);
    const std::size_t arg = line.find_first_not_of(" \t");
    return arg != std::string_view::npos && line.substr(arg, 6) == "unroll";
  }
}

} // namespace rpl::stages::optimize
