#pragma once
/// Build and run command templates: a command line with {NAME} placeholders, split into argv words
/// the way a POSIX shell splits words, but without ever running a shell.
///
/// Splitting rules:
///   - unquoted whitespace separates words;
///   - '...' keeps everything literally up to the next single quote;
///   - "..." keeps everything literally except \" and \\, which stand for " and \;
///   - a backslash outside quotes makes the next character literal (\{ is a literal brace);
///   - '' or "" alone is an empty argument and is kept.
/// Placeholders:
///   - {NAME} with NAME matching [A-Za-z_][A-Za-z0-9_]* may appear anywhere in a word, inside
///     single or double quotes too;
///   - {{ and }} stand for literal { and };
///   - a value is inserted as it is and never re-split, so a value containing spaces stays inside
///     its word, and a word made only of a placeholder whose value is empty is an empty argument.
/// No variables, globs, pipes or redirections: $, *, | and > are ordinary characters.

#include <cstddef>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rpl::stages {

/// A malformed template, an unknown placeholder or a missing value; the message names the origin,
/// the column, the problem and a fix.
class template_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A parsed command template.
class command_template {
public:
  /// Splits `text` into words; throws template_error for an unterminated quote, a trailing
  /// backslash, a brace that does not form a placeholder, or an empty template. `origin` names
  /// where the text came from in messages, e.g. "--build-template".
  static command_template parse(std::string_view text, std::string origin);

  /// Names of all placeholders used.
  std::set<std::string> placeholders() const;

  /// Throws template_error for the first placeholder (in text order) not in `known`.
  void check(const std::set<std::string>& known) const;

  /// The argv with every placeholder replaced; throws template_error for a placeholder that has no
  /// value in `values`.
  std::vector<std::string> expand(const std::map<std::string, std::string>& values) const;

  /// The text as given to parse().
  const std::string& text() const { return text_; }

  /// The origin as given to parse().
  const std::string& origin() const { return origin_; }

private:
  /// A literal piece of a word, or a placeholder (then `literal` is its name).
  struct segment {
    std::string literal;
    bool is_placeholder = false;
    std::size_t column = 0; ///< 1-based column of the '{' of a placeholder
  };
  using word = std::vector<segment>;

  friend class command_template_parser;

  std::string text_;
  std::string origin_;
  std::vector<word> words_;
};

} // namespace rpl::stages
