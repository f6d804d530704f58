#include "stages/optimize/tunable_macros.hpp"

#include <algorithm>
#include <cctype>
#include <variant>

namespace rpl::stages::optimize {

const std::vector<std::int64_t>& unroll_knob_values() {
  static const std::vector<std::int64_t> values = {0, 1, 2, 4, 8};
  return values;
}

std::string
unroll_knob_block(std::string_view macro, std::string_view local, std::string_view indent) {
  const std::string m(macro), l(local), in(indent);
  return "#ifndef " + m + "\n#define " + m + " 0\n#endif\n#if " + m + " > 0\n" + in +
         "constexpr int " + l + " = " + m + ";\n#pragma unroll " + l + "\n#endif\n";
}

std::vector<configuration> knob_configurations(const std::vector<messages::tunable_macro>& knobs) {
  std::vector<configuration> out;
  if (knobs.empty()) {
    return out;
  }
  std::vector<std::size_t> digit(knobs.size(), 0);
  for (const auto& k : knobs) {
    if (k.values.empty()) {
      return out;
    }
  }
  for (;;) {
    configuration c;
    for (std::size_t i = 0; i < knobs.size(); ++i) {
      c.params.emplace_back(knobs[i].name, param_value(knobs[i].values[digit[i]]));
    }
    out.push_back(std::move(c));
    // The last knob varies fastest.
    std::size_t i = knobs.size();
    while (i > 0) {
      --i;
      if (++digit[i] < knobs[i].values.size()) {
        break;
      }
      digit[i] = 0;
      if (i == 0) {
        return out;
      }
    }
  }
}

bool set_knobs(std::string& text,
               const std::vector<messages::tunable_macro>& knobs,
               const configuration& config,
               std::string& error) {
  for (const auto& k : knobs) {
    const param_value* value = config.find(k.name);
    if (value == nullptr) {
      error = "the configuration has no value for " + k.name;
      return false;
    }
    const std::string line = "#define " + k.name + " " + std::to_string(k.default_value) + "\n";
    // At the start of a line, exactly once.
    std::size_t at = std::string::npos;
    int count = 0;
    for (std::size_t p = text.find(line); p != std::string::npos; p = text.find(line, p + 1)) {
      if (p == 0 || text[p - 1] == '\n') {
        at = p;
        ++count;
      }
    }
    if (count != 1) {
      error = "the knob " + k.name + " is not defined exactly once as `" +
              line.substr(0, line.size() - 1) + "` in the patched source";
      return false;
    }
    text.replace(at, line.size(), "#define " + k.name + " " + to_string(*value) + "\n");
  }
  return true;
}

namespace {

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

} // namespace

std::string without_knob_values(std::string_view text, const std::vector<std::string>& names) {
  std::string out;
  out.reserve(text.size());
  std::size_t p = 0;
  while (p < text.size()) {
    const std::size_t eol = std::min(text.find('\n', p), text.size());
    std::string_view line = text.substr(p, eol - p);
    for (const auto& name : names) {
      const std::string head = "#define " + name + " ";
      if (line.substr(0, head.size()) == head) {
        line = line.substr(0, head.size());
        out.append(line);
        out += '?';
        line = {};
        break;
      }
    }
    out.append(line);
    if (eol < text.size()) {
      out += '\n';
    }
    p = eol + 1;
  }
  return out;
}

bool knobs_used_only_within(std::string_view text,
                            const std::vector<std::string>& names,
                            std::size_t begin,
                            std::size_t end) {
  for (const auto& name : names) {
    if (name.empty()) {
      return false;
    }
    for (std::size_t p = text.find(name); p != std::string_view::npos; p = text.find(name, p + 1)) {
      const bool starts = p == 0 || !word_char(text[p - 1]);
      const std::size_t after = p + name.size();
      const bool ends = after >= text.size() || !word_char(text[after]);
      if (starts && ends && (p < begin || after > end)) {
        return false;
      }
    }
  }
  return true;
}

std::string describe(const configuration& config) {
  std::string out;
  for (const auto& [name, value] : config.params) {
    out += (out.empty() ? "" : ", ") + name + "=" + to_string(value);
  }
  return out;
}

} // namespace rpl::stages::optimize
