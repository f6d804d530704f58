#pragma once
/// A parsed CUDA/HIP translation unit as plain values: its top-level declarations in source order,
/// its file-scope preprocessor directives and its tokens, every position a byte offset into the
/// source text the model was made from. workers/source/clang_source.hpp fills it with libclang; the
/// source guard (source_guard.hpp) and the rule proposer (rule_transforms.hpp) only read it, so
/// their tests build models by hand.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rpl::stages::optimize {

/// [begin, end) in bytes.
struct byte_range {
  std::size_t begin = 0;
  std::size_t end = 0;
  bool contains(std::size_t offset) const { return offset >= begin && offset < end; }
  bool operator==(const byte_range&) const = default;
};

enum class decl_kind : std::uint8_t {
  kernel = 0,               ///< `__global__` function (or function template)
  device_function = 1,      ///< `__device__` only
  host_function = 2,        ///< no CUDA attribute, or `__host__` only
  host_device_function = 3, ///< `__host__ __device__`
  device_variable = 4,      ///< namespace-scope `__device__` variable
  constant_variable = 5,    ///< namespace-scope `__constant__` variable
  shared_variable = 6,      ///< namespace-scope `__shared__` variable
  host_variable = 7,        ///< namespace-scope variable without a CUDA attribute
  type = 8,                 ///< class, struct, union, enum, typedef, alias (and their templates)
  other = 9,                ///< static_assert, using-directive, anything else
};

const char* to_string(decl_kind kind);
bool is_function(decl_kind kind);
bool is_variable(decl_kind kind);

/// A for, while, do or range-for statement inside a function body.
struct loop_info {
  std::string keyword;            ///< "for", "while" or "do"
  std::size_t keyword_offset = 0; ///< where the keyword starts
  unsigned line = 0;              ///< 1-based
  unsigned depth = 0;             ///< 0: not inside another loop of the same function
  bool has_unroll_pragma = false; ///< a `#pragma unroll` (any form) directly precedes it
  bool in_macro = false;          ///< written inside a macro's body: cannot be edited in place
};

struct parameter_info {
  std::string type; ///< as clang spells it ("const float *__restrict")
  std::string name;
  bool operator==(const parameter_info&) const = default;
};

struct source_token {
  std::string spelling;
  std::size_t offset = 0;
};

/// One top-level declaration; the members of namespaces and `extern "C" { }` blocks are top-level
/// too (their `name` is unqualified, `qualified_name` carries the namespaces).
struct declaration {
  std::string name;
  std::string qualified_name; ///< "ns::name"; an anonymous namespace is "(anonymous)"
  std::string mangled_name;   ///< clang_Cursor_getMangling; the name itself for extern "C"
  decl_kind kind = decl_kind::other;
  byte_range range;  ///< with leading attributes, `extern "C"`, template<...>, and `;`
  unsigned line = 0; ///< of range.begin, 1-based
  bool is_definition = false;
  bool is_template = false;
  bool from_macro = false; ///< the declaration is a macro expansion; range is the invocation
  std::vector<std::string> tokens; ///< the spellings of the tokens in range
  std::vector<std::string> calls;  ///< qualified names of this TU's functions it calls or names
  // Functions only.
  std::string return_type;
  std::vector<parameter_info> parameters;
  std::vector<std::string> template_parameters; ///< "typename T", "int N"
  std::size_t body_offset = 0;                  ///< the body's `{` (valid when has_body)
  bool has_body = false;
  std::vector<loop_info> loops; ///< in source order
  bool has_launch_bounds = false;
  bool has_inline_asm = false;
};

/// A preprocessor directive outside every function body.
struct directive_info {
  byte_range range; ///< from '#' to the end of its last (continued) line, without the newline
  std::string text; ///< the directive's text, continuation lines joined as written
  unsigned line = 0;
  bool is_include = false;
  bool operator==(const directive_info&) const = default;
};

struct diagnostic_info {
  std::string file;
  unsigned line = 0;
  unsigned column = 0;
  bool is_error = false; ///< error or fatal (warnings are kept only as context)
  std::string message;
};

struct source_model {
  std::vector<declaration> declarations;  ///< in source order
  std::vector<directive_info> directives; ///< file-scope directives, in source order
  std::vector<source_token> tokens;       ///< every token of the file (comments excluded)
  std::vector<diagnostic_info> diagnostics;

  /// The definition of the function named `name` (plain or qualified); nullptr when none.
  const declaration* find_definition(std::string_view name) const;
  std::size_t error_count() const;
};

/// Every preprocessor directive of `text` (outside comments and string literals), in order.
std::vector<directive_info> scan_directives(std::string_view text);

/// Whether a `#pragma unroll` directive (optionally with a count) ends right before `offset`,
/// with only whitespace and comments between them.
bool unroll_pragma_precedes(std::string_view text, std::size_t offset);

/// 1-based line of `offset` in `text`.
unsigned line_of(std::string_view text, std::size_t offset);

} // namespace rpl::stages::optimize
