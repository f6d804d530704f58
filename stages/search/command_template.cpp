#include "stages/search/command_template.hpp"

#include <algorithm>
#include <utility>

#include "stages/search/edit_distance.hpp"

namespace rpl::stages {

namespace {

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::string braced(std::string_view name) {
  return "{" + std::string(name) + "}";
}

} // namespace

/// Splits one template text into words of literal and placeholder segments.
class command_template_parser {
public:
  command_template_parser(std::string_view text, std::string origin) : text_(text) {
    result_.text_ = std::string(text);
    result_.origin_ = std::move(origin);
  }

  command_template run() {
    std::size_t i = 0;
    while (i < text_.size()) {
      const char c = text_[i];
      if (is_blank(c)) {
        finish_word();
        ++i;
      } else if (c == '\'') {
        i = single_quoted(i);
      } else if (c == '"') {
        i = double_quoted(i);
      } else if (c == '\\') {
        if (i + 1 >= text_.size()) {
          fail("trailing backslash at column " + std::to_string(i + 1) +
               " escapes nothing; fix: remove it or write \\\\ for a literal backslash");
        }
        in_word_ = true;
        literal_ += text_[i + 1];
        i += 2;
      } else if (c == '{' || c == '}') {
        in_word_ = true;
        i = brace(i);
      } else {
        in_word_ = true;
        literal_ += c;
        ++i;
      }
    }
    finish_word();
    if (result_.words_.empty()) {
      fail("the template is empty; fix: give the command to run, e.g. "
           "'hipcc -O3 -DTILE={TILE} kernel.hip -o {OUT}'");
    }
    return std::move(result_);
  }

private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw template_error(result_.origin_ + ": " + problem);
  }

  std::size_t single_quoted(std::size_t open) {
    in_word_ = true;
    std::size_t i = open + 1;
    while (i < text_.size() && text_[i] != '\'') {
      if (text_[i] == '{' || text_[i] == '}') {
        i = brace(i);
      } else {
        literal_ += text_[i++];
      }
    }
    if (i >= text_.size()) {
      fail("unterminated single quote at column " + std::to_string(open + 1) +
           "; fix: close it with a matching '");
    }
    return i + 1;
  }

  std::size_t double_quoted(std::size_t open) {
    in_word_ = true;
    std::size_t i = open + 1;
    while (i < text_.size() && text_[i] != '"') {
      const char c = text_[i];
      if (c == '\\' && i + 1 < text_.size() && (text_[i + 1] == '"' || text_[i + 1] == '\\')) {
        literal_ += text_[i + 1];
        i += 2;
      } else if (c == '{' || c == '}') {
        i = brace(i);
      } else {
        literal_ += c;
        ++i;
      }
    }
    if (i >= text_.size()) {
      fail("unterminated double quote at column " + std::to_string(open + 1) +
           "; fix: close it with a matching \" (write \\\" for a literal quote inside)");
    }
    return i + 1;
  }

  // Handles '{' or '}' at `at`: a doubled brace is literal, {NAME} is a placeholder, anything else
  // is an error, because a stray brace is almost always a mistyped placeholder.
  std::size_t brace(std::size_t at) {
    const char c = text_[at];
    if (at + 1 < text_.size() && text_[at + 1] == c) {
      literal_ += c;
      return at + 2;
    }
    const std::string column = std::to_string(at + 1);
    if (c == '}') {
      fail("lone '}' at column " + column +
           "; fix: write }} for a literal '}' or open the "
           "placeholder with {");
    }
    std::size_t end = at + 1;
    while (end < text_.size() && is_name_char(text_[end])) {
      ++end;
    }
    if (end == at + 1 || !is_name_start(text_[at + 1]) || end >= text_.size() ||
        text_[end] != '}') {
      fail("'{' at column " + column +
           " does not start a placeholder; fix: write {NAME} with NAME made of letters, digits "
           "and _ (not starting with a digit), or {{ for a literal '{'");
    }
    flush_literal();
    command_template::segment placeholder;
    placeholder.literal = std::string(text_.substr(at + 1, end - at - 1));
    placeholder.is_placeholder = true;
    placeholder.column = at + 1;
    word_.push_back(std::move(placeholder));
    return end + 1;
  }

  void flush_literal() {
    if (!literal_.empty()) {
      command_template::segment piece;
      piece.literal = std::move(literal_);
      word_.push_back(std::move(piece));
      literal_.clear();
    }
  }

  void finish_word() {
    if (!in_word_) {
      return;
    }
    flush_literal();
    // A word of only quotes ('' or "") has no segments but is still an (empty) argument.
    result_.words_.push_back(std::move(word_));
    word_.clear();
    in_word_ = false;
  }

  std::string_view text_;
  command_template result_;
  command_template::word word_;
  std::string literal_;
  bool in_word_ = false;
};

command_template command_template::parse(std::string_view text, std::string origin) {
  return command_template_parser(text, std::move(origin)).run();
}

std::set<std::string> command_template::placeholders() const {
  std::set<std::string> names;
  for (const word& each : words_) {
    for (const segment& piece : each) {
      if (piece.is_placeholder) {
        names.insert(piece.literal);
      }
    }
  }
  return names;
}

void command_template::check(const std::set<std::string>& known) const {
  for (const word& each : words_) {
    for (const segment& piece : each) {
      if (!piece.is_placeholder || known.count(piece.literal) != 0) {
        continue;
      }
      std::string known_list;
      std::string closest;
      std::size_t closest_distance = 3; // suggest only near misses
      for (const std::string& name : known) {
        known_list += (known_list.empty() ? "" : ", ") + braced(name);
        const std::size_t distance = edit_distance(piece.literal, name);
        if (distance < closest_distance) {
          closest_distance = distance;
          closest = name;
        }
      }
      std::string fix = closest.empty()
                            ? "use one of the known placeholders or add a parameter named " +
                                  piece.literal + " to the space"
                            : "did you mean " + braced(closest) +
                                  "? use one of the known "
                                  "placeholders or add a parameter named " +
                                  piece.literal + " to the space";
      throw template_error(origin_ + ": unknown placeholder " + braced(piece.literal) +
                           " at column " + std::to_string(piece.column) + "; known: " +
                           (known_list.empty() ? "none" : known_list) + "; fix: " + fix);
    }
  }
}

std::vector<std::string>
command_template::expand(const std::map<std::string, std::string>& values) const {
  std::vector<std::string> argv;
  argv.reserve(words_.size());
  for (const word& each : words_) {
    std::string expanded;
    for (const segment& piece : each) {
      if (!piece.is_placeholder) {
        expanded += piece.literal;
        continue;
      }
      const auto found = values.find(piece.literal);
      if (found == values.end()) {
        throw template_error(origin_ + ": placeholder " + braced(piece.literal) + " at column " +
                             std::to_string(piece.column) +
                             " has no value; fix: add a parameter named " + piece.literal +
                             " to the space or remove the placeholder");
      }
      expanded += found->second;
    }
    argv.push_back(std::move(expanded));
  }
  return argv;
}

} // namespace rpl::stages
