#pragma once
/// Internal to workers/compilers/: a compiler's flags as data, and the walk that judges an argv by
/// them (argv_check.hpp says what is refused and why). A family's folder holds its table
/// (host/host_flags.cpp, nvcc/nvcc_flags.cpp, hipcc/hipcc_flags.cpp); a new flag is one line.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "workers/compilers/argv_check.hpp"

namespace rpl::workers::detail {

/// How a flag carries its value.
enum class value_form : std::uint8_t {
  none,            ///< exactly the spelling, no value: `-c`
  separate,        ///< exactly the spelling; the value is the next word: `-Xlinker VALUE`
  joined,          ///< glued to the spelling or the next word: `-I/dir`, `-I dir`
  equals,          ///< after '=' or the next word: `--output=FILE`, `--output FILE`
  prefix,          ///< any word that starts with the spelling; the value is the rest (`-Wl,a,b`)
  prefix_separate, ///< any word that starts with the spelling; the value is the next word
};

/// What a flag's value is, and so how it is judged.
enum class flag_role : std::uint8_t {
  plain,        ///< names no file (-D, -x, -std): not judged
  read_path,    ///< a file or folder the compiler reads: the job folder or a read root
  write_path,   ///< where the compiler writes: the job folder only
  library_name, ///< `-l NAME`: a name, never a path
  program_name, ///< `-fuse-ld=NAME`: a program's name, never a path (a path would run that file)
  refuse,       ///< never allowed; the rule's `why` says what it would do
  host_flags,   ///< host compiler flags (nvcc -Xcompiler, -Xpreprocessor): judged by the host table
  linker_flags, ///< linker flags (-Wl, -Xlinker, nvcc -Xnvlink): judged by the linker table
  tool_flags,   ///< another tool's flags (assembler, ptxas, -mllvm): judged by the tool table
};

struct flag_rule {
  std::string_view spelling;
  value_form form;
  flag_role role;
  std::string_view why = {}; ///< refuse: what the flag would do
  bool list = false;         ///< the value is a comma-separated list of words (-Wl,a,b)
};

/// One family's way of reading an argv.
struct argv_dialect {
  std::string_view name;                          ///< for messages: "nvcc", "host"
  std::vector<std::span<const flag_rule>> tables; ///< searched together; the longest spelling wins
  /// nvcc writes `-I=DIR` and `-o=FILE`: a joined value loses one leading '='. (gcc reads `-I=DIR`
  /// as relative to the sysroot, so there the '=' stays and the path is refused.)
  bool strip_equals = false;
  /// nvcc and hipcc run their steps through /bin/sh, pasting arguments into a command line: only
  /// characters that are never shell syntax may appear (letters, digits, `-_=+,./:`).
  bool shell_words = false;
  /// Words after `--` are inputs, whatever they look like (gcc, clang).
  bool double_dash_ends_options = true;
};

/// The dialects the payload flags are judged by.
const argv_dialect& host_dialect();
const argv_dialect& linker_dialect();
const argv_dialect& tool_dialect();

/// The first word of words[first...] that `dialect` refuses.
std::optional<argv_refusal> judge_words(const std::vector<std::string>& words,
                                        std::size_t first,
                                        const argv_dialect& dialect,
                                        const argv_limits& limits);

/// The tables (host/host_flags.cpp, hipcc/hipcc_flags.cpp, nvcc/nvcc_flags.cpp).
std::span<const flag_rule> host_flag_rules();
std::span<const flag_rule> hipcc_flag_rules();
std::span<const flag_rule> nvcc_flag_rules();

} // namespace rpl::workers::detail
