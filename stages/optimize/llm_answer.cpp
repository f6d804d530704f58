#include "stages/optimize/llm_answer.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <utility>
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

struct parsed_hunks {
  std::vector<diff_hunk> hunks;
  std::string error;
};

std::string hunk_name(const diff_hunk& h) {
  return "hunk " + std::to_string(h.number) + " (" + h.header + ")";
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

/// Checks the file header "--- `from`" / "+++ `to`" against the diff's first one (`file`, set
/// here when empty): one file, changed, not created or deleted. Empty when it passes.
std::string check_file_header(std::string_view from,
                              std::string_view to,
                              std::string& file,
                              const std::string& source_name) {
  const auto path = header_path(to);
  if (path == "/dev/null" || header_path(from) == "/dev/null")
    return "the answer's diff creates or deletes a file; fix: send one unified diff that changes " +
           source_name + " only";
  if (file.empty())
    file = path;
  else if (base_name(path) != base_name(file))
    return "the answer's diff changes two files (" + file + " and " + path +
           "); fix: send one unified diff that changes " + source_name + " only";
  return {};
}

/// Whether `lines[at]`, where a hunk stopped, ends the diff: prose or an elided "..." line, not
/// the next hunk, a file header or a `diff --git`/`index` line.
bool ends_the_diff(const std::vector<std::string_view>& lines, std::size_t at) {
  return at < lines.size() && !starts_with(lines[at], "@@") && !is_file_header(lines, at) &&
         !starts_with(lines[at], "diff ") && !starts_with(lines[at], "index ");
}

/// The hunks of the answer's diff, read by unified_diff's reader with their counts recounted.
/// Lines before the first hunk and git headers are skipped; a line that is not a hunk line ends
/// the diff, unless more hunks follow it (then it is an error: the model elided lines).
parsed_hunks parse_hunks(const std::vector<std::string>& diff_lines,
                         const std::string& source_name) {
  const std::vector<std::string_view> lines(diff_lines.begin(), diff_lines.end());
  parsed_hunks out;
  std::string file; // the first file header's path
  std::size_t i = 0;
  while (i < lines.size()) {
    if (is_file_header(lines, i)) {
      out.error = check_file_header(lines[i], lines[i + 1], file, source_name);
      if (!out.error.empty())
        return out;
      i += 2;
      continue;
    }
    if (!starts_with(lines[i], "@@")) {
      ++i; // prose or headers before the first hunk, or after a `diff`/`index` line
      continue;
    }
    auto h = read_hunk(lines, i, out.hunks.size() + 1, hunk_counts::recounted, out.error);
    if (!h)
      return out;
    out.hunks.push_back(std::move(*h));
    if (!ends_the_diff(lines, i))
      continue;
    const bool more = std::any_of(lines.begin() + static_cast<std::ptrdiff_t>(i), lines.end(),
                                  [](std::string_view l) { return starts_with(l, "@@"); });
    if (more) {
      out.error = hunk_name(out.hunks.back()) + " holds the line " + quote(lines[i]) +
                  ", which is not a context (' '), removed ('-') or added ('+') line; fix: "
                  "send every line of each hunk, nothing elided";
      return out;
    }
    break;
  }
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

/// Where a hunk's old lines occur in the source, from `min_pos` on: exactly, else equal but for
/// whitespace; the nearest to the stated line first.
std::optional<std::size_t> find_old_lines(const std::vector<std::string>& src,
                                          const std::vector<hunk_line*>& old_lines,
                                          std::size_t stated,
                                          std::size_t min_pos) {
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
  return exact ? exact : loose;
}

/// Why a hunk's old lines occur nowhere: the place that matches longest and its first differing
/// line.
std::string not_found_error(const diff_hunk& h,
                            const std::vector<std::string>& src,
                            const std::vector<hunk_line*>& old_lines,
                            std::size_t stated,
                            std::size_t min_pos,
                            const std::string& source_name) {
  std::size_t best_at = std::min(stated, src.empty() ? 0 : src.size() - 1);
  std::size_t best_length = 0;
  for (std::size_t p = min_pos; p < src.size(); ++p) {
    std::size_t k = 0;
    while (k < old_lines.size() && p + k < src.size() &&
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
  if (best_length > 0 && best_at + best_length < src.size() && best_length < old_lines.size()) {
    error += "; the closest place, line " + std::to_string(best_at + 1) + ", differs at line " +
             std::to_string(best_at + best_length + 1) + ": the source has " +
             quote(src[best_at + best_length]) + ", the hunk has " +
             quote(old_lines[best_length]->text);
  } else if (best_length == 0) {
    error += "; its first old line " + quote(old_lines[0]->text) + " is nowhere in the file";
  }
  return error + "; fix: copy context and removed lines exactly from the source as given";
}

/// The exact diff of the placed hunks, or why one has no place.
struct placed_diff {
  std::string diff;
  std::string error;
};

/// Where hunk `h` starts in the source (0-based), its old lines taking the source's text; or why
/// it has no place.
std::optional<std::size_t> place_hunk(diff_hunk& h,
                                      const source_lines& source,
                                      std::size_t min_pos,
                                      const std::string& source_name,
                                      std::string& error) {
  const auto& src = source.lines;
  std::vector<hunk_line*> old_lines;
  for (auto& line : h.lines)
    if (line.kind != '+')
      old_lines.push_back(&line);
  if (old_lines.empty()) {
    // A pure insertion: "-N,0" inserts after line N.
    if (!h.old_start) {
      error = hunk_name(h) + " has no context lines and no line number; fix: give 3 lines of "
                             "context around each change";
      return std::nullopt;
    }
    const auto at = std::max(*h.old_start, min_pos);
    if (at > src.size()) {
      error = hunk_name(h) + " inserts after line " + std::to_string(*h.old_start) + ", but " +
              source_name + " has " + std::to_string(src.size()) +
              " lines; fix: give 3 lines of context around each change";
      return std::nullopt;
    }
    return at;
  }
  const auto stated = h.old_start && *h.old_start > 0 ? *h.old_start - 1 : 0;
  const auto at = find_old_lines(src, old_lines, stated, min_pos);
  if (!at) {
    error = not_found_error(h, src, old_lines, stated, min_pos, source_name);
    return std::nullopt;
  }
  for (std::size_t k = 0; k < old_lines.size(); ++k) {
    old_lines[k]->text = src[*at + k];
    old_lines[k]->no_newline = *at + k + 1 == src.size() && !source.ends_with_newline;
  }
  return at;
}

/// Writes hunk `h`, placed at old line `at` and new line `new_at` (0-based), as diff -u does.
void append_hunk(std::string& out, const diff_hunk& h, std::size_t at, std::size_t new_at) {
  const auto old_label = h.old_count == 0 ? at : at + 1;
  const auto new_label = h.new_count == 0 ? new_at : new_at + 1;
  out += "@@ -" + std::to_string(old_label) + "," + std::to_string(h.old_count) + " +" +
         std::to_string(new_label) + "," + std::to_string(h.new_count) + " @@\n";
  for (const auto& line : h.lines) {
    out += line.kind;
    out += line.text;
    out += '\n';
    if (line.no_newline)
      out += "\\ No newline at end of file\n";
  }
}

/// Places each hunk where its old lines are in `source` and returns the exact diff, or an error.
placed_diff place_hunks(std::vector<diff_hunk> hunks,
                        const source_lines& source,
                        const std::string& source_name) {
  std::string out = "--- a/" + source_name + "\n+++ b/" + source_name + "\n";
  std::size_t min_pos = 0;
  long delta = 0; // new lines minus old lines of the hunks so far
  for (auto& h : hunks) {
    std::string error;
    const auto at = place_hunk(h, source, min_pos, source_name, error);
    if (!at)
      return {{}, error};
    append_hunk(out, h, *at, static_cast<std::size_t>(static_cast<long>(*at) + delta));
    // read_hunk counted the lines; placing changed their text, not their kinds.
    delta += static_cast<long>(h.new_count) - static_cast<long>(h.old_count);
    min_pos = *at + h.old_count;
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

// ---- the steps of parse_llm_answer -------------------------------------------------------------

/// The answer as lines (CR removed) and its fenced blocks.
struct answer_text {
  std::vector<std::string> lines;
  std::vector<code_block> blocks;
  std::vector<bool> in_block; ///< per line: a fence or inside one
};

/// Marks the lines of `block`, its fences included, in `marks`.
void mark_block(const code_block& block, std::vector<bool>& marks) {
  for (auto i = block.open; i < marks.size() && i <= block.close; ++i)
    marks[i] = true;
}

answer_text read_answer(std::string_view content) {
  answer_text answer;
  answer.lines = split_lines(without_cr(content));
  answer.blocks = find_blocks(answer.lines);
  answer.in_block.assign(answer.lines.size(), false);
  for (const auto& block : answer.blocks)
    mark_block(block, answer.in_block);
  return answer;
}

/// Where the change is in the answer and what it is.
struct located_change {
  std::string shape;                   ///< parsed_answer::shape; empty when none was found
  std::vector<std::string> diff_lines; ///< a diff's lines
  std::optional<std::string> replaced; ///< a kernel replacement's patched source
  std::vector<bool> taken;             ///< per answer line: part of the change
  std::string error;
};

/// The first ```diff (or patch) fence, else the first fence holding an @@ hunk.
const code_block* find_diff_block(const std::vector<code_block>& blocks, std::string& shape) {
  for (const auto& block : blocks)
    if (is_diff_language(block.language)) {
      shape = "diff fence";
      return &block;
    }
  for (const auto& block : blocks)
    if (has_hunk(block.body)) {
      shape = "fenced diff";
      return &block;
    }
  return nullptr;
}

/// The first code fence holding a definition of the kernel, put in place of the source's.
void find_kernel_replacement(const answer_text& answer,
                             const messages::propose_request& request,
                             const std::string& source_text,
                             located_change& change) {
  for (const auto& block : answer.blocks) {
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
      change.error = "the answer holds a new definition of `" + request.kernel +
                     "` but no diff, and " + request.source_name +
                     " has no definition of it to replace; fix: send one unified diff of " +
                     request.source_name + " in a ```diff fence";
      return;
    }
    change.replaced = source_text.substr(0, ours->begin) +
                      body.substr(theirs->begin, theirs->end - theirs->begin) +
                      source_text.substr(ours->end);
    change.shape = "kernel replacement";
    mark_block(block, change.taken);
    return;
  }
}

/// Finds the change, first match wins (llm_answer.hpp): a diff fence, a fence holding a hunk, an
/// unfenced diff, a kernel replacement.
located_change locate_change(const answer_text& answer,
                             const messages::propose_request& request,
                             const std::string& source_text) {
  located_change change;
  change.taken.assign(answer.lines.size(), false);
  if (const auto* block = find_diff_block(answer.blocks, change.shape)) {
    change.diff_lines = block->body;
    mark_block(*block, change.taken);
  } else if (const auto range = find_unfenced_diff(answer.lines, answer.in_block)) {
    change.shape = "unfenced diff";
    for (auto i = range->first; i < range->second; ++i) {
      change.diff_lines.push_back(answer.lines[i]);
      change.taken[i] = true;
    }
  } else {
    find_kernel_replacement(answer, request, source_text, change);
  }
  if (change.shape.empty() && change.error.empty())
    change.error = "the answer holds no unified diff (no ```diff fence, no @@ hunk) and no "
                   "definition of `" +
                   request.kernel + "`; fix: send one unified diff of " + request.source_name +
                   " in a ```diff fence";
  return change;
}

struct patched_source {
  std::string text;
  std::string error;
};

/// The source (CR removed) with the answer's diff lines applied: hunks read, recounted, placed
/// where their lines are, then applied strictly.
patched_source apply_answer_diff(const std::vector<std::string>& diff_lines,
                                 const std::string& source_text,
                                 const std::string& name) {
  auto hunks = parse_hunks(diff_lines, name);
  if (!hunks.error.empty())
    return {{}, hunks.error};
  const source_lines source{split_lines(source_text),
                            source_text.empty() || source_text.back() == '\n'};
  const auto placed = place_hunks(std::move(hunks.hunks), source, name);
  if (!placed.error.empty())
    return {{}, "the answer's diff does not apply to " + name + ": " + placed.error};
  auto applied = apply_unified_diff(source_text, placed.diff);
  if (!applied.ok)
    return {{},
            "the answer's diff does not apply to " + name + ": " + applied.error +
                "; fix: send one unified diff against the source exactly as given"};
  return {std::move(applied.text), {}};
}

struct answer_prose {
  std::string title;
  std::string rationale;
};

/// Title and rationale from the prose around the change; code blocks are left out and part
/// paragraphs. The title is the first `Title:` line, else the first line of prose.
answer_prose
read_prose(const answer_text& answer, const std::vector<bool>& taken, const std::string& kernel) {
  const auto& lines = answer.lines;
  answer_prose out;
  bool blank_pending = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (taken[i] || answer.in_block[i]) {
      blank_pending = !out.rationale.empty();
      continue;
    }
    if (out.title.empty())
      if (auto found = title_of(lines[i]); found && !found->empty()) {
        out.title = *found;
        continue;
      }
    if (trim(lines[i]).empty()) {
      blank_pending = !out.rationale.empty();
      continue;
    }
    if (blank_pending)
      out.rationale += "\n\n";
    else if (!out.rationale.empty())
      out.rationale += "\n";
    blank_pending = false;
    out.rationale += std::string(trim(lines[i]));
  }
  for (std::size_t i = 0; i < lines.size() && out.title.empty(); ++i)
    if (!taken[i] && !answer.in_block[i])
      out.title = std::string(strip_markdown(lines[i]));
  if (out.title.empty())
    out.title = "LLM change to " + kernel;
  return out;
}

parsed_answer failed(std::string shape, std::string error) {
  parsed_answer result;
  result.shape = std::move(shape);
  result.error = std::move(error);
  return result;
}

} // namespace

parsed_answer parse_llm_answer(std::string_view content,
                               const messages::propose_request& request,
                               const answer_limits& limits) {
  const auto& name = request.source_name;
  const auto answer = read_answer(content);
  const auto source_text = without_cr(request.source);
  auto change = locate_change(answer, request, source_text);
  if (!change.error.empty())
    return failed(change.shape, change.error);

  auto patched = change.replaced ? patched_source{*change.replaced, {}}
                                 : apply_answer_diff(change.diff_lines, source_text, name);
  if (!patched.error.empty())
    return failed(change.shape, patched.error);
  if (request.source.find("\r\n") != std::string::npos)
    patched.text = with_crlf(patched.text);
  auto diff = make_unified_diff(request.source, patched.text, name);
  if (diff.empty())
    return failed(change.shape, "the answer's change leaves " + name +
                                    " as it was; fix: send a diff that changes `" + request.kernel +
                                    "`");

  const auto prose = read_prose(answer, change.taken, request.kernel);
  parsed_answer result;
  result.ok = true;
  result.shape = change.shape;
  result.proposal.id = "llm:" + content_hash(diff).substr(0, 12);
  result.proposal.title = clip_words(prose.title, limits.title_chars);
  result.proposal.rationale = clip_words(prose.rationale, limits.rationale_chars);
  result.proposal.diff = std::move(diff);
  return result;
}

} // namespace rpl::stages::optimize
