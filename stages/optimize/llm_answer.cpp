#include "stages/optimize/llm_answer.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <vector>

#include "stages/optimize/unified_diff.hpp"
#include "stages/search/candidate_key.hpp"

namespace rpl::stages::optimize {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && is_space(text.back()))
    text.remove_suffix(1);
  return text;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string without_cr(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')
      continue;
    out += text[i];
  }
  return out;
}

/// Lines without their '\n'; a text ending in '\n' has no empty last line.
std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const auto end = text.find('\n', begin);
    if (end == std::string_view::npos) {
      lines.emplace_back(text.substr(begin));
      break;
    }
    lines.emplace_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

/// A line of `text` quoted for an error: trimmed and cut.
std::string quote(std::string_view text) {
  auto shown = std::string(trim(text));
  if (shown.size() > 100)
    shown = shown.substr(0, 97) + "...";
  return "`" + shown + "`";
}

std::string clip_words(std::string_view text, std::size_t max_chars) {
  if (text.size() <= max_chars)
    return std::string(text);
  if (max_chars <= 3)
    return std::string(text.substr(0, max_chars));
  auto keep = max_chars - 3;
  if (const auto space = text.rfind(' ', keep); space != std::string_view::npos && space > keep / 2)
    keep = space;
  return std::string(trim(text.substr(0, keep))) + "...";
}

// ---- code blocks ---------------------------------------------------------------------------

struct code_block {
  std::size_t open = 0;  ///< line index of the opening fence
  std::size_t close = 0; ///< line index of the closing fence (lines.size() when unterminated)
  std::string language;  ///< first word of the info string, lower case
  std::vector<std::string> body;
};

/// The fenced blocks of `lines` (``` or ~~~, three or more, any indentation), in order.
std::vector<code_block> find_blocks(const std::vector<std::string>& lines) {
  std::vector<code_block> blocks;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    std::size_t indent = 0;
    while (indent < line.size() && (line[indent] == ' ' || line[indent] == '\t'))
      ++indent;
    const auto rest = line.substr(indent);
    if (rest.empty() || (rest[0] != '`' && rest[0] != '~'))
      continue;
    const char mark = rest[0];
    std::size_t run = 0;
    while (run < rest.size() && rest[run] == mark)
      ++run;
    if (run < 3)
      continue;
    const auto info = trim(rest.substr(run));
    if (mark == '`' && info.find('`') != std::string_view::npos)
      continue; // inline code, not a fence
    code_block block;
    block.open = i;
    block.language = lower(info.substr(0, std::min(info.find_first_of(" \t{"), info.size())));
    block.close = lines.size();
    for (std::size_t j = i + 1; j < lines.size(); ++j) {
      const auto closing = trim(lines[j]);
      if (closing.size() >= run && closing.find_first_not_of(mark) == std::string_view::npos) {
        block.close = j;
        break;
      }
      std::string_view body = lines[j];
      // A fence indented in a list indents its body too; strip exactly that much.
      if (indent > 0 && body.size() >= indent &&
          body.substr(0, indent).find_first_not_of(" \t") == std::string_view::npos)
        body.remove_prefix(indent);
      block.body.emplace_back(body);
    }
    i = block.close; // an unterminated fence runs to the end
    blocks.push_back(std::move(block));
  }
  return blocks;
}

bool is_diff_language(std::string_view language) {
  return starts_with(language, "diff") || language == "patch" || language == "udiff";
}

bool is_code_language(std::string_view language) {
  static constexpr std::string_view languages[] = {"",   "cuda", "cu",  "cuh", "cpp", "c++", "cxx",
                                                   "cc", "c",    "hip", "h",   "hpp", "hxx"};
  return std::find(std::begin(languages), std::end(languages), language) != std::end(languages);
}

bool has_hunk(const std::vector<std::string>& lines) {
  return std::any_of(lines.begin(), lines.end(),
                     [](const std::string& line) { return starts_with(line, "@@"); });
}

bool diff_like(std::string_view line) {
  return !line.empty() &&
         (line[0] == ' ' || line[0] == '+' || line[0] == '-' || line[0] == '\\' ||
          starts_with(line, "@@") || starts_with(line, "diff ") || starts_with(line, "index "));
}

/// [begin, end) of an unfenced diff among the lines not in a block, or nullopt.
std::optional<std::pair<std::size_t, std::size_t>>
find_unfenced_diff(const std::vector<std::string>& lines, const std::vector<bool>& in_block) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (in_block[i])
      continue;
    const bool headers = starts_with(lines[i], "--- ") && i + 1 < lines.size() &&
                         !in_block[i + 1] && starts_with(lines[i + 1], "+++ ");
    if (!headers && !starts_with(lines[i], "@@"))
      continue;
    auto end = i;
    while (end < lines.size() && !in_block[end]) {
      if (diff_like(lines[end])) {
        ++end;
        continue;
      }
      // A blank line belongs to the diff when more of it follows (an empty context line).
      if (trim(lines[end]).empty()) {
        auto next = end;
        while (next < lines.size() && !in_block[next] && trim(lines[next]).empty())
          ++next;
        if (next < lines.size() && !in_block[next] && diff_like(lines[next]) &&
            !starts_with(lines[next], "--- ")) {
          end = next;
          continue;
        }
      }
      break;
    }
    return std::make_pair(i, end);
  }
  return std::nullopt;
}

// ---- hunks ---------------------------------------------------------------------------------

struct hunk_line {
  char kind = ' '; ///< ' ', '-', '+'
  std::string text;
  bool no_newline = false; ///< followed by "\ No newline at end of file"
};

struct hunk {
  std::size_t number = 0; ///< 1-based, for errors
  std::string header;     ///< as the model wrote it
  std::size_t old_start = 0;
  bool has_numbers = false;
  std::vector<hunk_line> lines;
};

struct parsed_hunks {
  std::vector<hunk> hunks;
  std::string error;
};

std::string hunk_name(const hunk& h) {
  return "hunk " + std::to_string(h.number) + " (" + std::string(trim(h.header)) + ")";
}

/// The path named by a "--- "/"+++ " line, without a/ b/ prefixes and timestamps.
std::string header_path(std::string_view line) {
  auto path = trim(line.substr(4));
  if (const auto tab = path.find('\t'); tab != std::string_view::npos)
    path = path.substr(0, tab);
  if (starts_with(path, "a/") || starts_with(path, "b/"))
    path.remove_prefix(2);
  return std::string(path);
}

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

parsed_hunks parse_hunks(const std::vector<std::string>& lines, const std::string& source_name) {
  parsed_hunks out;
  std::string file; // the first file header's path
  hunk* current = nullptr;
  auto finish = [&]() {
    if (current != nullptr) // trailing blank lines are layout, not context
      while (!current->lines.empty() && current->lines.back().kind == ' ' &&
             current->lines.back().text.empty())
        current->lines.pop_back();
    current = nullptr;
  };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (starts_with(line, "--- ") && i + 1 < lines.size() && starts_with(lines[i + 1], "+++ ")) {
      finish();
      auto path = header_path(lines[i + 1]);
      if (path == "/dev/null" || header_path(line) == "/dev/null") {
        out.error = "the answer's diff creates or deletes a file; fix: send one unified diff that "
                    "changes " +
                    source_name + " only";
        return out;
      }
      if (file.empty())
        file = path;
      else if (base_name(path) != base_name(file)) {
        out.error = "the answer's diff changes two files (" + file + " and " + path +
                    "); fix: send one unified diff that changes " + source_name + " only";
        return out;
      }
      ++i;
      continue;
    }
    if (starts_with(line, "diff ") || starts_with(line, "index ")) {
      finish();
      continue;
    }
    if (starts_with(line, "@@")) {
      finish();
      hunk h;
      h.number = out.hunks.size() + 1;
      h.header = std::string(line);
      unsigned long old_start = 0;
      h.has_numbers = std::sscanf(h.header.c_str(), "@@ -%lu", &old_start) == 1;
      h.old_start = old_start;
      out.hunks.push_back(std::move(h));
      current = &out.hunks.back();
      continue;
    }
    if (current == nullptr)
      continue; // prose or headers before the first hunk
    if (line.empty()) {
      current->lines.push_back({' ', "", false});
    } else if (line[0] == ' ' || line[0] == '-' || line[0] == '+') {
      current->lines.push_back({line[0], std::string(line.substr(1)), false});
    } else if (line[0] == '\\') {
      if (!current->lines.empty())
        current->lines.back().no_newline = true;
    } else {
      // Not a hunk line: the diff ends here, unless more hunks follow (an elided "..." line).
      const bool more = std::any_of(lines.begin() + static_cast<std::ptrdiff_t>(i), lines.end(),
                                    [](const std::string& l) { return starts_with(l, "@@"); });
      if (more) {
        out.error = hunk_name(*current) + " holds the line " + quote(line) +
                    ", which is not a context (' '), removed ('-') or added ('+') line; fix: "
                    "send every line of each hunk, nothing elided";
        return out;
      }
      break;
    }
  }
  finish();
  if (out.hunks.empty())
    out.error = "the answer's diff has no @@ hunk; fix: send a unified diff with @@ hunks";
  return out;
}

std::string squeeze(std::string_view text) {
  std::string out;
  for (const char c : text)
    if (!is_space(c))
      out += c;
  return out;
}

struct source_lines {
  std::vector<std::string> lines;
  bool ends_with_newline = true;
};

/// Places each hunk where its old lines are in `source` and returns the exact diff, or an error.
struct placed_diff {
  std::string diff;
  std::string error;
};

placed_diff
place_hunks(std::vector<hunk> hunks, const source_lines& source, const std::string& source_name) {
  const auto& src = source.lines;
  std::string out = "--- a/" + source_name + "\n+++ b/" + source_name + "\n";
  std::size_t min_pos = 0;
  long delta = 0;
  for (auto& h : hunks) {
    std::vector<hunk_line*> old_lines;
    for (auto& line : h.lines)
      if (line.kind != '+')
        old_lines.push_back(&line);
    if (h.lines.empty())
      return {{}, hunk_name(h) + " is empty; fix: send the hunk's lines or leave it out"};
    const auto stated = h.has_numbers && h.old_start > 0 ? h.old_start - 1 : 0;
    std::size_t at = 0;
    if (old_lines.empty()) {
      // A pure insertion: "-N,0" inserts after line N.
      if (!h.has_numbers)
        return {{},
                hunk_name(h) + " has no context lines and no line number; fix: give 3 lines "
                               "of context around each change"};
      at = std::max(h.old_start, min_pos);
      if (at > src.size())
        return {{},
                hunk_name(h) + " inserts after line " + std::to_string(h.old_start) + ", but " +
                    source_name + " has " + std::to_string(src.size()) + " lines"};
    } else {
      const auto count = old_lines.size();
      std::optional<std::size_t> exact;
      std::optional<std::size_t> loose;
      auto nearer = [&](std::optional<std::size_t> best, std::size_t candidate) {
        if (!best)
          return true;
        const auto distance = [&](std::size_t p) { return p > stated ? p - stated : stated - p; };
        return distance(candidate) < distance(*best);
      };
      for (std::size_t p = min_pos; p + count <= src.size(); ++p) {
        bool same = true;
        bool similar = true;
        for (std::size_t k = 0; k < count && similar; ++k) {
          if (src[p + k] != old_lines[k]->text) {
            same = false;
            similar = squeeze(src[p + k]) == squeeze(old_lines[k]->text);
          }
        }
        if (same && nearer(exact, p))
          exact = p;
        else if (!same && similar && nearer(loose, p))
          loose = p;
      }
      if (!exact && !loose) {
        // Name the place that matches longest, and its first differing line.
        std::size_t best_at = std::min(stated, src.empty() ? 0 : src.size() - 1);
        std::size_t best_length = 0;
        for (std::size_t p = min_pos; p < src.size(); ++p) {
          std::size_t k = 0;
          while (k < count && p + k < src.size() &&
                 squeeze(src[p + k]) == squeeze(old_lines[k]->text))
            ++k;
          if (k > best_length) {
            best_length = k;
            best_at = p;
          }
        }
        std::string error =
            hunk_name(h) + ": its context and removed lines do not occur in " + source_name;
        if (min_pos > 0)
          error += " after the previous hunk";
        if (best_length > 0 && best_at + best_length < src.size()) {
          error += "; the closest place, line " + std::to_string(best_at + 1) +
                   ", differs at line " + std::to_string(best_at + best_length + 1) +
                   ": the source has " + quote(src[best_at + best_length]) + ", the hunk has " +
                   quote(old_lines[best_length]->text);
        } else if (best_length == 0) {
          error += "; its first old line " + quote(old_lines[0]->text) + " is nowhere in the file";
        }
        error += "; fix: copy context and removed lines exactly from the source as given";
        return {{}, error};
      }
      at = exact ? *exact : *loose;
      for (std::size_t k = 0; k < count; ++k) {
        old_lines[k]->text = src[at + k];
        old_lines[k]->no_newline = at + k + 1 == src.size() && !source.ends_with_newline;
      }
    }
    const auto old_count = old_lines.size();
    const auto removed = static_cast<std::size_t>(std::count_if(
        h.lines.begin(), h.lines.end(), [](const hunk_line& line) { return line.kind == '-'; }));
    const auto new_size = h.lines.size() - removed; // context and added lines
    const auto new_at = static_cast<long>(at) + delta;
    const auto old_label = old_count == 0 ? at : at + 1;
    const auto new_label =
        new_size == 0 ? static_cast<std::size_t>(new_at) : static_cast<std::size_t>(new_at) + 1;
    out += "@@ -" + std::to_string(old_label) + "," + std::to_string(old_count) + " +" +
           std::to_string(new_label) + "," + std::to_string(new_size) + " @@\n";
    for (const auto& line : h.lines) {
      out += line.kind;
      out += line.text;
      out += '\n';
      if (line.no_newline)
        out += "\\ No newline at end of file\n";
    }
    delta += static_cast<long>(new_size) - static_cast<long>(old_count);
    min_pos = at + old_count;
  }
  return {out, {}};
}

// ---- kernel replacement ----------------------------------------------------------------------

/// Per character: 0 code, 1 comment or literal, 2 preprocessor line.
std::vector<std::uint8_t> code_mask(std::string_view text) {
  std::vector<std::uint8_t> mask(text.size(), 0);
  bool line_start = true;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (line_start && c == '#') {
      while (i < text.size() && text[i] != '\n') {
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\n')
          mask[i++] = 2;
        mask[i++] = 2;
      }
      continue;
    }
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (!is_space(c))
      line_start = false;
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n')
        mask[i++] = 1;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const auto end = text.find("*/", i + 2);
      const auto stop = end == std::string_view::npos ? text.size() : end + 2;
      while (i < stop)
        mask[i++] = 1;
      continue;
    }
    if (c == '"' || c == '\'') {
      mask[i++] = 1;
      while (i < text.size() && text[i] != c && text[i] != '\n') {
        if (text[i] == '\\' && i + 1 < text.size())
          mask[i++] = 1;
        mask[i++] = 1;
      }
      if (i < text.size())
        mask[i++] = 1;
      continue;
    }
    ++i;
  }
  return mask;
}

/// The index after the bracket closing the one at `open` (code characters only), or npos.
std::size_t
match_bracket(std::string_view text, const std::vector<std::uint8_t>& mask, std::size_t open) {
  const char opening = text[open];
  const char closing = opening == '(' ? ')' : opening == '{' ? '}' : '>';
  int depth = 0;
  for (std::size_t i = open; i < text.size(); ++i) {
    if (mask[i] != 0)
      continue;
    if (text[i] == opening)
      ++depth;
    else if (text[i] == closing && --depth == 0)
      return i + 1;
  }
  return std::string_view::npos;
}

struct text_span {
  std::size_t begin = 0;
  std::size_t end = 0;
};

/// The definition of function `name` in `text`, from its first specifier (template, __global__)
/// to its closing brace.
std::optional<text_span> find_definition(std::string_view text, std::string_view name) {
  if (name.empty())
    return std::nullopt;
  const auto mask = code_mask(text);
  auto skip_blank = [&](std::size_t i) {
    while (i < text.size() && (mask[i] != 0 || is_space(text[i])))
      ++i;
    return i;
  };
  for (auto at = text.find(name); at != std::string_view::npos; at = text.find(name, at + 1)) {
    const auto after = at + name.size();
    if (mask[at] != 0 || (at > 0 && is_identifier_char(text[at - 1])) ||
        (after < text.size() && is_identifier_char(text[after])))
      continue;
    auto i = skip_blank(after);
    if (i >= text.size() || text[i] != '(')
      continue;
    i = match_bracket(text, mask, i);
    // After the parameters: qualifiers, attributes, a trailing return type, then the body.
    bool definition = false;
    while (i != std::string_view::npos) {
      i = skip_blank(i);
      if (i >= text.size())
        break;
      const char c = text[i];
      if (c == '{') {
        definition = true;
        break;
      }
      if (is_identifier_char(c)) {
        while (i < text.size() && is_identifier_char(text[i]))
          ++i;
        const auto next = skip_blank(i);
        if (next < text.size() && text[next] == '(')
          i = match_bracket(text, mask, next);
        continue;
      }
      if (c == '-' && i + 1 < text.size() && text[i + 1] == '>') {
        i += 2;
        continue;
      }
      if (c == ':' || c == '<' || c == '>' || c == '*' || c == '&' || c == ',') {
        ++i;
        continue;
      }
      break; // ';', ')', an operator: a declaration or a call
    }
    if (!definition)
      continue;
    const auto end = match_bracket(text, mask, i);
    if (end == std::string_view::npos)
      return std::nullopt;
    auto begin = at;
    while (begin > 0) {
      const auto prev = begin - 1;
      if (mask[prev] == 2 ||
          (mask[prev] == 0 && (text[prev] == ';' || text[prev] == '{' || text[prev] == '}')))
        break;
      --begin;
    }
    begin = skip_blank(begin);
    return text_span{begin, end};
  }
  return std::nullopt;
}

// ---- title and rationale -----------------------------------------------------------------------

std::string_view strip_markdown(std::string_view line) {
  line = trim(line);
  while (!line.empty() && (line.front() == '#' || line.front() == '*' || line.front() == '_' ||
                           line.front() == '>' || line.front() == '-'))
    line.remove_prefix(1);
  while (!line.empty() && (line.back() == '*' || line.back() == '_'))
    line.remove_suffix(1);
  return trim(line);
}

/// The text after "Title:" (any case, markdown around it), or nullopt.
std::optional<std::string> title_of(std::string_view line) {
  auto text = strip_markdown(line);
  if (lower(text.substr(0, 6)) != "title:" && lower(text.substr(0, 8)) != "title**:")
    return std::nullopt;
  text.remove_prefix(text.find(':') + 1);
  return std::string(strip_markdown(text));
}

std::string with_crlf(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 32);
  for (const char c : text) {
    if (c == '\n')
      out += '\r';
    out += c;
  }
  return out;
}

} // namespace

parsed_answer parse_llm_answer(std::string_view content,
                               const messages::propose_request& request,
                               const answer_limits& limits) {
  parsed_answer result;
  const auto& name = request.source_name;
  const auto answer = without_cr(content);
  const auto lines = split_lines(answer);
  const auto blocks = find_blocks(lines);

  std::vector<bool> in_block(lines.size(), false);
  for (const auto& block : blocks)
    for (auto i = block.open; i <= std::min(block.close, lines.size() - 1); ++i)
      in_block[i] = true;

  const bool crlf = request.source.find("\r\n") != std::string::npos;
  const auto source_text = without_cr(request.source);
  source_lines source{split_lines(source_text), source_text.empty() || source_text.back() == '\n'};

  // Which lines hold the change, and which block (if any) they are.
  std::vector<std::string> diff_lines;
  std::vector<bool> taken(lines.size(), false);
  std::optional<std::string> replaced; // the patched text, for a kernel replacement
  auto take_block = [&](const code_block& block) {
    diff_lines = block.body;
    for (auto i = block.open; i <= std::min(block.close, lines.size() - 1); ++i)
      taken[i] = true;
  };
  const code_block* chosen = nullptr;
  for (const auto& block : blocks)
    if (is_diff_language(block.language)) {
      chosen = &block;
      result.shape = "diff fence";
      break;
    }
  if (chosen == nullptr)
    for (const auto& block : blocks)
      if (has_hunk(block.body)) {
        chosen = &block;
        result.shape = "fenced diff";
        break;
      }
  if (chosen != nullptr) {
    take_block(*chosen);
  } else if (const auto range = find_unfenced_diff(lines, in_block)) {
    result.shape = "unfenced diff";
    for (auto i = range->first; i < range->second; ++i) {
      diff_lines.push_back(lines[i]);
      taken[i] = true;
    }
  } else {
    for (const auto& block : blocks) {
      if (!is_code_language(block.language))
        continue;
      std::string body;
      for (const auto& line : block.body)
        body += line + "\n";
      const auto theirs = find_definition(body, request.kernel);
      if (!theirs)
        continue;
      const auto ours = find_definition(source_text, request.kernel);
      if (!ours) {
        result.error = "the answer holds a new definition of `" + request.kernel +
                       "` but no diff, and " + name +
                       " has no definition of it to replace; fix: send one unified diff of " +
                       name + " in a ```diff fence";
        return result;
      }
      replaced = source_text.substr(0, ours->begin) +
                 body.substr(theirs->begin, theirs->end - theirs->begin) +
                 source_text.substr(ours->end);
      result.shape = "kernel replacement";
      take_block(block);
      diff_lines.clear();
      break;
    }
  }
  if (result.shape.empty()) {
    result.error = "the answer holds no unified diff (no ```diff fence, no @@ hunk) and no "
                   "definition of `" +
                   request.kernel + "`; fix: send one unified diff of " + name +
                   " in a ```diff fence";
    return result;
  }

  std::string patched;
  if (replaced) {
    patched = *replaced;
  } else {
    auto hunks = parse_hunks(diff_lines, name);
    if (!hunks.error.empty()) {
      result.error = hunks.error;
      return result;
    }
    const auto placed = place_hunks(std::move(hunks.hunks), source, name);
    if (!placed.error.empty()) {
      result.error = "the answer's diff does not apply to " + name + ": " + placed.error;
      return result;
    }
    const auto applied = apply_unified_diff(source_text, placed.diff);
    if (!applied.ok) {
      result.error = "the answer's diff does not apply to " + name + ": " + applied.error +
                     "; fix: send one unified diff against the source exactly as given";
      return result;
    }
    patched = applied.text;
  }
  if (crlf)
    patched = with_crlf(patched);
  auto diff = make_unified_diff(request.source, patched, name);
  if (diff.empty()) {
    result.error = "the answer's change leaves " + name +
                   " as it was; fix: send a diff that changes `" + request.kernel + "`";
    return result;
  }

  // Title and rationale: the prose around the change; other code blocks are left out.
  std::vector<bool> prose(lines.size(), true);
  for (std::size_t i = 0; i < lines.size(); ++i)
    prose[i] = !taken[i] && !in_block[i];
  std::string title;
  std::string rationale;
  bool blank_pending = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!prose[i]) {
      blank_pending = !rationale.empty(); // a code block parts paragraphs
      continue;
    }
    if (title.empty())
      if (auto found = title_of(lines[i]); found && !found->empty()) {
        title = *found;
        continue;
      }
    if (trim(lines[i]).empty()) {
      blank_pending = !rationale.empty();
      continue;
    }
    if (blank_pending)
      rationale += "\n\n";
    else if (!rationale.empty())
      rationale += "\n";
    blank_pending = false;
    rationale += std::string(trim(lines[i]));
  }
  if (title.empty()) {
    for (std::size_t i = 0; i < lines.size() && title.empty(); ++i)
      if (prose[i])
        title = std::string(strip_markdown(lines[i]));
    if (title.empty())
      title = "LLM change to " + request.kernel;
  }

  result.ok = true;
  result.proposal.id = "llm:" + content_hash(diff).substr(0, 12);
  result.proposal.title = clip_words(title, limits.title_chars);
  result.proposal.rationale = clip_words(rationale, limits.rationale_chars);
  result.proposal.diff = std::move(diff);
  return result;
}

} // namespace rpl::stages::optimize
