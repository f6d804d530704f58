#include "workers/compilers/detail/flag_table.hpp"

#include <cctype>
#include <cstdio>
#include <filesystem>

namespace rpl::workers::detail {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view table_loads_code = "loads code into the tool";
constexpr std::string_view table_sysroot = "moves the system headers and libraries to a folder the "
                                           "engine chooses";

/// GNU ld, lld and nvlink, as -Wl, -Xlinker, -Xoffload-linker and nvcc's -Xlinker and -Xnvlink
/// reach them. A word that is not a flag is an input file.
constexpr flag_rule table_linker_rules[] = {
    {"-plugin", value_form::prefix, flag_role::refuse, table_loads_code},
    {"--plugin", value_form::prefix, flag_role::refuse, table_loads_code},
    {"--load-pass-plugin", value_form::prefix, flag_role::refuse, table_loads_code},
    {"--sysroot", value_form::prefix, flag_role::refuse, table_sysroot},
    {"-o", value_form::joined, flag_role::write_path},
    {"--output", value_form::equals, flag_role::write_path},
    {"--output-file", value_form::equals, flag_role::write_path},
    {"-Map", value_form::equals, flag_role::write_path},
    {"--Map", value_form::equals, flag_role::write_path},
    {"--dependency-file", value_form::equals, flag_role::write_path},
    {"--out-implib", value_form::equals, flag_role::write_path},
    {"--reproduce", value_form::equals, flag_role::write_path},
    {"-L", value_form::joined, flag_role::read_path},
    {"--library-path", value_form::equals, flag_role::read_path},
    {"-Y", value_form::joined, flag_role::read_path},
    {"-T", value_form::joined, flag_role::read_path},
    {"-dT", value_form::joined, flag_role::read_path},
    {"--script", value_form::equals, flag_role::read_path},
    {"--default-script", value_form::equals, flag_role::read_path},
    {"-c", value_form::joined, flag_role::read_path}, // an MRI script
    {"--mri-script", value_form::equals, flag_role::read_path},
    {"-R", value_form::joined, flag_role::read_path}, // a file: its symbols only
    {"--just-symbols", value_form::equals, flag_role::read_path},
    {"-rpath-link", value_form::equals, flag_role::read_path},
    {"--rpath-link", value_form::equals, flag_role::read_path},
    {"--version-script", value_form::equals, flag_role::read_path},
    {"--dynamic-list", value_form::equals, flag_role::read_path},
    {"--retain-symbols-file", value_form::equals, flag_role::read_path},
    {"--symbol-ordering-file", value_form::equals, flag_role::read_path},
    {"-l", value_form::joined, flag_role::library_name},
    {"--library", value_form::equals, flag_role::library_name},
    // Embedded in the output, never opened at link time.
    {"-rpath", value_form::equals, flag_role::plain},
    {"--rpath", value_form::equals, flag_role::plain},
    {"-dynamic-linker", value_form::equals, flag_role::plain},
    {"--dynamic-linker", value_form::equals, flag_role::plain},
    {"-soname", value_form::equals, flag_role::plain},
    {"-h", value_form::joined, flag_role::plain},
    {"-e", value_form::joined, flag_role::plain},
    {"--entry", value_form::equals, flag_role::plain},
    {"-u", value_form::joined, flag_role::plain},
    {"--undefined", value_form::equals, flag_role::plain},
    {"--defsym", value_form::equals, flag_role::plain},
    {"-z", value_form::separate, flag_role::plain},
    {"-m", value_form::joined, flag_role::plain},
    {"-arch", value_form::equals, flag_role::plain},
};

/// The other tools a compiler passes words to: the assembler (-Wa, -Xassembler), ptxas (nvcc
/// -Xptxas), fatbinary, the archiver, the analyzer, LLVM's options (-mllvm).
constexpr flag_rule table_tool_rules[] = {
    {"-load", value_form::prefix, flag_role::refuse, table_loads_code},
    {"--load", value_form::prefix, flag_role::refuse, table_loads_code},
    {"-plugin", value_form::prefix, flag_role::refuse, table_loads_code},
    {"--plugin", value_form::prefix, flag_role::refuse, table_loads_code},
    {"-pass-plugin", value_form::prefix, flag_role::refuse, table_loads_code},
    {"--pass-plugin", value_form::prefix, flag_role::refuse, table_loads_code},
    {"-load-pass-plugin", value_form::prefix, flag_role::refuse, table_loads_code},
    {"--load-pass-plugin", value_form::prefix, flag_role::refuse, table_loads_code},
    {"-o", value_form::joined, flag_role::write_path},
    {"--output", value_form::equals, flag_role::write_path},
    {"--output-file", value_form::equals, flag_role::write_path},
    {"-MD", value_form::separate, flag_role::write_path},
    {"--MD", value_form::equals, flag_role::write_path},
    {"-info-output-file", value_form::equals, flag_role::write_path},
    {"-I", value_form::joined, flag_role::read_path},
    {"-arch", value_form::equals, flag_role::plain},
};

const std::string_view words_allowed_in_shell = "-_=+,./:";

bool starts_with(std::string_view word, std::string_view prefix) {
  return word.substr(0, prefix.size()) == prefix;
}

const flag_rule* find_rule(std::string_view word, const argv_dialect& dialect) {
  const flag_rule* best = nullptr;
  for (const auto table : dialect.tables) {
    for (const flag_rule& rule : table) {
      const std::string_view s = rule.spelling;
      bool matches = false;
      switch (rule.form) {
      case value_form::none:
      case value_form::separate: matches = word == s; break;
      case value_form::joined:
      case value_form::prefix:
      case value_form::prefix_separate: matches = starts_with(word, s); break;
      case value_form::equals:
        matches =
            word == s || (starts_with(word, s) && word.size() > s.size() && word[s.size()] == '=');
        break;
      }
      // Longest spelling wins (-isystem over -i..., -odir over -o); on a tie, the first table.
      if (matches && (best == nullptr || s.size() > best->spelling.size()))
        best = &rule;
    }
  }
  return best;
}

std::string shown(char c) {
  if (std::isprint(static_cast<unsigned char>(c)) != 0 && c != ' ')
    return std::string("'") + c + "'";
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", static_cast<unsigned char>(c));
  return c == ' ' ? "a space" : text;
}

/// What any word may not be, wherever it stands: a NUL (exec would cut the word there), a
/// response file, shell syntax for the compilers that use a shell.
std::optional<argv_refusal> judge_text(const std::string& word, const argv_dialect& dialect) {
  if (const auto nul = word.find('\0'); nul != std::string::npos) {
    // exec would cut the word there; the message shows where.
    return argv_refusal{word.substr(0, nul) + "\\0...", "contains a NUL byte", {}, false};
  }
  if (!word.empty() && word.front() == '@') {
    return argv_refusal{word,
                        "is a response file: the compiler would read more arguments from a "
                        "file the engine chooses and quote its lines in errors",
                        {},
                        false};
  }
  if (dialect.shell_words) {
    for (const char c : word) {
      if (std::isalnum(static_cast<unsigned char>(c)) == 0 &&
          words_allowed_in_shell.find(c) == std::string_view::npos) {
        return argv_refusal{word,
                            std::string(dialect.name) + " runs its steps through /bin/sh, where " +
                                shown(c) + " can be shell syntax; only letters, digits and " +
                                std::string(words_allowed_in_shell) + " may appear",
                            {},
                            false};
      }
    }
  }
  return std::nullopt;
}

/// `path` without a trailing separator, lexically normal.
fs::path clean(const fs::path& path) {
  fs::path normal = path.lexically_normal();
  if (!normal.has_filename() && normal != normal.root_path())
    normal = normal.parent_path();
  return normal;
}

bool inside(const fs::path& path, const fs::path& root) {
  if (root.empty())
    return false;
  const fs::path relative = path.lexically_relative(clean(root));
  return !relative.empty() && *relative.begin() != "..";
}

std::optional<argv_refusal>
judge_path(const std::string& flag, std::string_view value, bool read, const argv_limits& limits) {
  if (value.empty())
    return std::nullopt;
  const std::string text(value);
  if (value.front() == '=' || starts_with(value, "$SYSROOT")) {
    return argv_refusal{
        flag, "names a path inside the sysroot (" + text + "), outside the job folder", text, read};
  }
  const fs::path path(text);
  if (path.is_relative()) {
    for (const fs::path& part : path) {
      if (part == "..")
        return argv_refusal{flag, text + " climbs out of the job folder with '..'", text, read};
    }
    return std::nullopt; // the compiler runs in the job folder
  }
  const fs::path normal = clean(path);
  if (inside(normal, limits.job_dir))
    return std::nullopt;
  if (read) {
    for (const fs::path& root : limits.read_roots) {
      if (inside(normal, root))
        return std::nullopt;
    }
  }
  return argv_refusal{flag, text + " is outside the job folder", text, read};
}

/// A flag no table names: every value after its first '=' (split at ',' and '=') that is a path
/// must be inside the job folder, since nothing says whether the flag writes there.
std::optional<argv_refusal> judge_unknown(const std::string& word, const argv_limits& limits) {
  const auto equals = word.find('=');
  if (equals == std::string::npos)
    return std::nullopt;
  std::size_t begin = equals + 1;
  while (begin <= word.size()) {
    const auto end = word.find_first_of(",=", begin);
    const std::string_view segment = std::string_view(word).substr(
        begin, end == std::string::npos ? std::string::npos : end - begin);
    if (!segment.empty() && segment.front() == '|')
      return argv_refusal{word, "runs a program (a '|' value)", {}, false};
    if (auto refusal = judge_path(word, segment, false, limits))
      return refusal;
    if (end == std::string::npos)
      break;
    begin = end + 1;
  }
  return std::nullopt;
}

/// Words a flag passes on to another tool, judged together once the argv is read (a pair such as
/// `-Xclang -include -Xclang FILE` is one flag there).
struct payload {
  const argv_dialect* dialect;
  std::string via; ///< the first flag that passed words on, for the message
  std::vector<std::string> words;
};

constexpr int max_depth = 4;

std::optional<argv_refusal> judge(const std::vector<std::string>& words,
                                  std::size_t first,
                                  const argv_dialect& dialect,
                                  const argv_limits& limits,
                                  int depth) {
  payload host{&host_dialect(), {}, {}};
  payload linker{&linker_dialect(), {}, {}};
  payload tool{&tool_dialect(), {}, {}};
  bool inputs_only = false;
  for (std::size_t i = first; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (auto refusal = judge_text(word, dialect))
      return refusal;
    if (inputs_only || word.size() < 2 || word.front() != '-') {
      if (auto refusal = judge_path(word, word, true, limits))
        return refusal;
      continue;
    }
    if (word == "--" && dialect.double_dash_ends_options) {
      inputs_only = true;
      continue;
    }
    const flag_rule* rule = find_rule(word, dialect);
    if (rule == nullptr) {
      if (auto refusal = judge_unknown(word, limits))
        return refusal;
      continue;
    }
    if (rule->role == flag_role::refuse)
      return argv_refusal{word, std::string(rule->why), {}, false};
    const std::size_t length = rule->spelling.size();
    std::optional<std::string> value;
    std::string flag = word;
    const bool next_word =
        rule->form == value_form::separate || rule->form == value_form::prefix_separate ||
        ((rule->form == value_form::joined || rule->form == value_form::equals) &&
         word.size() == length);
    if (next_word) {
      if (i + 1 < words.size()) {
        value = words[++i];
        flag = word + " " + *value;
        if (auto refusal = judge_text(*value, dialect))
          return refusal;
      }
    } else if (rule->form == value_form::joined) {
      value = word.substr(length);
      if (dialect.strip_equals && value->front() == '=')
        value->erase(0, 1);
    } else if (rule->form == value_form::equals) {
      value = word.substr(length + 1);
    } else if (rule->form == value_form::prefix) {
      value = word.substr(length);
    }
    if (!value)
      continue; // a flag without its value: the compiler says so
    switch (rule->role) {
    case flag_role::plain:
    case flag_role::refuse: break;
    case flag_role::read_path:
    case flag_role::write_path:
      if (auto refusal = judge_path(flag, *value, rule->role == flag_role::read_path, limits))
        return refusal;
      break;
    case flag_role::library_name:
      if (value->find('/') != std::string::npos)
        return argv_refusal{flag,
                            "names a library by path, which is read wherever it points; "
                            "-l takes a name",
                            *value, true};
      break;
    case flag_role::program_name:
      if (value->find('/') != std::string::npos)
        return argv_refusal{
            flag, "runs the program at " + *value + " (only a name may follow)", {}, false};
      break;
    case flag_role::host_flags:
    case flag_role::linker_flags:
    case flag_role::tool_flags: {
      payload& to = rule->role == flag_role::host_flags     ? host
                    : rule->role == flag_role::linker_flags ? linker
                                                            : tool;
      if (to.via.empty())
        to.via = std::string(rule->spelling);
      if (!rule->list) {
        to.words.push_back(*value);
        break;
      }
      std::size_t begin = 0;
      for (;;) {
        const auto comma = value->find(',', begin);
        to.words.push_back(
            value->substr(begin, comma == std::string::npos ? comma : comma - begin));
        if (comma == std::string::npos)
          break;
        begin = comma + 1;
      }
      break;
    }
    }
  }
  for (payload* passed : {&host, &linker, &tool}) {
    if (passed->words.empty())
      continue;
    if (depth >= max_depth)
      return argv_refusal{passed->via, "passes words on too many levels deep", {}, false};
    if (auto refusal = judge(passed->words, 0, *passed->dialect, limits, depth + 1)) {
      refusal->why += " (passed on with " + passed->via + ")";
      return refusal;
    }
  }
  return std::nullopt;
}

} // namespace

const argv_dialect& host_dialect() {
  static const argv_dialect dialect{"host", {host_flag_rules(), hipcc_flag_rules()}};
  return dialect;
}

const argv_dialect& linker_dialect() {
  static const argv_dialect dialect{"linker", {table_linker_rules}};
  return dialect;
}

const argv_dialect& tool_dialect() {
  static const argv_dialect dialect{"tool", {table_tool_rules}};
  return dialect;
}

std::optional<argv_refusal> judge_words(const std::vector<std::string>& words,
                                        std::size_t first,
                                        const argv_dialect& dialect,
                                        const argv_limits& limits) {
  return judge(words, first, dialect, limits, 0);
}

} // namespace rpl::workers::detail
