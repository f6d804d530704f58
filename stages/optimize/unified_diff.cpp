#include "stages/optimize/unified_diff.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rpl::stages::optimize {
namespace {

constexpr std::string_view no_newline_marker = "\\ No newline at end of file";
/// Past this many edits in one region, make_unified_diff gives up minimality for time (as diff(1)
/// does for very different files); the diff still turns `before` into `after`.
constexpr std::ptrdiff_t max_minimal_cost = 1024;
/// How far (in lines) a hunk may have moved from the line its header states.
constexpr std::size_t max_offset_lines = 50;
/// Larger line numbers and counts in a hunk header read as one more than this (no overflow).
constexpr std::size_t max_line_number = 999'999'999'999;

/// The lines of `text`, each with its '\n' (the last one without when the text lacks it), so that
/// "x" and "x\n" are different lines, as diff(1) sees them.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end + 1 - start));
    start = end + 1;
  }
  return lines;
}

enum class edit_kind { keep, remove, insert };

struct edit {
  edit_kind kind;
  std::size_t line; ///< index into `before` for keep and remove, into `after` for insert
};

/// Myers' O((N+M)D) difference in linear space: the middle snake splits each problem in two.
/// Lines are compared as small integers (one per distinct line).
class myers_diff {
public:
  myers_diff(const std::vector<int>& a, const std::vector<int>& b) : a_(a), b_(b) {}

  std::vector<edit> run() {
    const std::size_t max_d = (a_.size() + b_.size() + 1) / 2 + 1;
    forward_.assign(2 * max_d + 3, 0);
    backward_.assign(2 * max_d + 3, 0);
    solve(0, a_.size(), 0, b_.size());
    return std::move(edits_);
  }

private:
  struct snake {
    std::size_t x0, y0, x1, y1;
  };

  void solve(std::size_t a_lo, std::size_t a_hi, std::size_t b_lo, std::size_t b_hi) {
    std::size_t prefix_end = a_lo;
    while (a_lo < a_hi && b_lo < b_hi && a_[a_lo] == b_[b_lo]) {
      ++a_lo;
      ++b_lo;
    }
    for (std::size_t i = prefix_end; i < a_lo; ++i) {
      edits_.push_back({edit_kind::keep, i});
    }
    std::size_t suffix = 0;
    while (a_hi > a_lo && b_hi > b_lo && a_[a_hi - 1] == b_[b_hi - 1]) {
      --a_hi;
      --b_hi;
      ++suffix;
    }
    if (a_lo == a_hi) {
      for (std::size_t j = b_lo; j < b_hi; ++j) {
        edits_.push_back({edit_kind::insert, j});
      }
    } else if (b_lo == b_hi) {
      for (std::size_t i = a_lo; i < a_hi; ++i) {
        edits_.push_back({edit_kind::remove, i});
      }
    } else {
      // Both sides are non-empty and differ at both ends, so the distance is at least 2 and each
      // half around the middle snake is strictly closer: the recursion ends.
      const snake s = middle_snake(a_lo, a_hi, b_lo, b_hi);
      solve(a_lo, s.x0, b_lo, s.y0);
      for (std::size_t i = s.x0; i < s.x1; ++i) {
        edits_.push_back({edit_kind::keep, i});
      }
      solve(s.x1, a_hi, s.y1, b_hi);
    }
    for (std::size_t i = a_hi; i < a_hi + suffix; ++i) {
      edits_.push_back({edit_kind::keep, i});
    }
  }

  /// The middle snake of a[a_lo,a_hi) against b[b_lo,b_hi), in absolute coordinates. Diagonal k is
  /// x - y; the backward search runs on the reversed sequences, where diagonal k' meets forward
  /// diagonal delta - k'.
  snake middle_snake(std::size_t a_lo, std::size_t a_hi, std::size_t b_lo, std::size_t b_hi) {
    const auto n = static_cast<std::ptrdiff_t>(a_hi - a_lo);
    const auto m = static_cast<std::ptrdiff_t>(b_hi - b_lo);
    const std::ptrdiff_t delta = n - m;
    const bool odd = (delta % 2) != 0;
    const std::ptrdiff_t max_d = (n + m + 1) / 2;
    const auto offset = static_cast<std::ptrdiff_t>(forward_.size() / 2);
    auto vf = [&](std::ptrdiff_t k) -> std::ptrdiff_t& {
      return forward_[static_cast<std::size_t>(k + offset)];
    };
    auto vb = [&](std::ptrdiff_t k) -> std::ptrdiff_t& {
      return backward_[static_cast<std::size_t>(k + offset)];
    };
    auto a_at = [&](std::ptrdiff_t x) { return a_[a_lo + static_cast<std::size_t>(x)]; };
    auto b_at = [&](std::ptrdiff_t y) { return b_[b_lo + static_cast<std::size_t>(y)]; };
    auto absolute = [&](std::ptrdiff_t x0, std::ptrdiff_t y0, std::ptrdiff_t x1,
                        std::ptrdiff_t y1) {
      return snake{a_lo + static_cast<std::size_t>(x0), b_lo + static_cast<std::size_t>(y0),
                   a_lo + static_cast<std::size_t>(x1), b_lo + static_cast<std::size_t>(y1)};
    };
    vf(1) = 0;
    vb(1) = 0;
    for (std::ptrdiff_t d = 0; d <= max_d; ++d) {
      for (std::ptrdiff_t k = -d; k <= d; k += 2) {
        std::ptrdiff_t x =
            (k == -d || (k != d && vf(k - 1) < vf(k + 1))) ? vf(k + 1) : vf(k - 1) + 1;
        std::ptrdiff_t y = x - k;
        const std::ptrdiff_t x0 = x;
        const std::ptrdiff_t y0 = y;
        while (x < n && y < m && a_at(x) == b_at(y)) {
          ++x;
          ++y;
        }
        vf(k) = x;
        const std::ptrdiff_t back_k = delta - k;
        if (odd && back_k >= -(d - 1) && back_k <= d - 1 && x + vb(back_k) >= n) {
          return absolute(x0, y0, x, y);
        }
      }
      for (std::ptrdiff_t k = -d; k <= d; k += 2) {
        std::ptrdiff_t x =
            (k == -d || (k != d && vb(k - 1) < vb(k + 1))) ? vb(k + 1) : vb(k - 1) + 1;
        std::ptrdiff_t y = x - k;
        const std::ptrdiff_t x0 = x;
        const std::ptrdiff_t y0 = y;
        while (x < n && y < m && a_at(n - x - 1) == b_at(m - y - 1)) {
          ++x;
          ++y;
        }
        vb(k) = x;
        const std::ptrdiff_t forward_k = delta - k;
        if (!odd && forward_k >= -d && forward_k <= d && vf(forward_k) + x >= n) {
          return absolute(n - x, m - y, n - x0, m - y0);
        }
      }
      if (d >= max_minimal_cost) {
        // Too far apart to be worth a minimal script (O((N+M)D) time): split at the point the
        // forward search reached furthest, which leaves both halves smaller.
        std::ptrdiff_t best_x = 0;
        std::ptrdiff_t best_y = 0;
        for (std::ptrdiff_t k = -d; k <= d; k += 2) {
          const std::ptrdiff_t x = vf(k);
          const std::ptrdiff_t y = x - k;
          if (x <= n && y >= 0 && y <= m && x + y > best_x + best_y) {
            best_x = x;
            best_y = y;
          }
        }
        if (best_x + best_y > 0 && best_x + best_y < n + m) {
          return absolute(best_x, best_y, best_x, best_y);
        }
      }
    }
    // Unreachable: the searches meet by d = ceil((n + m) / 2).
    return absolute(n, m, n, m);
  }

  const std::vector<int>& a_;
  const std::vector<int>& b_;
  std::vector<std::ptrdiff_t> forward_;
  std::vector<std::ptrdiff_t> backward_;
  std::vector<edit> edits_;
};

/// The edit script from `before` to `after`, with every run of changes written as its removals
/// first, then its insertions (the order diff(1) prints).
std::vector<edit> diff_lines(const std::vector<std::string_view>& before,
                             const std::vector<std::string_view>& after) {
  std::unordered_map<std::string_view, int> ids;
  auto to_ids = [&](const std::vector<std::string_view>& lines) {
    std::vector<int> out;
    out.reserve(lines.size());
    for (const auto line : lines) {
      out.push_back(ids.emplace(line, static_cast<int>(ids.size())).first->second);
    }
    return out;
  };
  const std::vector<int> a = to_ids(before);
  const std::vector<int> b = to_ids(after);
  std::vector<edit> raw = myers_diff(a, b).run();
  std::vector<edit> ordered;
  ordered.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size();) {
    if (raw[i].kind == edit_kind::keep) {
      ordered.push_back(raw[i++]);
      continue;
    }
    std::size_t end = i;
    while (end < raw.size() && raw[end].kind != edit_kind::keep) {
      ++end;
    }
    for (std::size_t j = i; j < end; ++j) {
      if (raw[j].kind == edit_kind::remove) {
        ordered.push_back(raw[j]);
      }
    }
    for (std::size_t j = i; j < end; ++j) {
      if (raw[j].kind == edit_kind::insert) {
        ordered.push_back(raw[j]);
      }
    }
    i = end;
  }
  return ordered;
}

/// "start,count" as diff(1) writes a range, an empty range naming the line before it, but with ",1"
/// written out: a header without counts is read as uncounted (a model's diff), and then a one-line
/// hunk adding "++ x" ("+++ x") before the next "@@" read as the next file's header
/// (fuzz_unified_diff found it, tests/fuzz/corpus/fuzz_unified_diff/added_line_like_a_header).
std::string format_range(std::size_t first_index, std::size_t count) {
  if (count == 0) {
    return std::to_string(first_index) + ",0";
  }
  return std::to_string(first_index + 1) + "," + std::to_string(count);
}

void append_body_line(std::string& out, char prefix, std::string_view line) {
  out += prefix;
  out += line;
  if (line.empty() || line.back() != '\n') {
    out += '\n';
    out += no_newline_marker;
    out += '\n';
  }
}

// ---------------------------------------------------------------------------------------------
// Reading hunks

patch_result failure(std::string message) {
  patch_result r;
  r.error = std::move(message);
  return r;
}

constexpr std::string_view fix_current = "fix: make the diff against the current source";

/// A line as an error message shows it: without its '\n', '\r' spelled out, long lines cut.
std::string shown(std::string_view line) {
  if (!line.empty() && line.back() == '\n') {
    line.remove_suffix(1);
  }
  std::string out;
  for (const char c : line) {
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "    ";
    } else {
      out += c;
    }
    if (out.size() >= 100) {
      out += "...";
      break;
    }
  }
  return "`" + out + "`";
}

/// A line without its '\n' (a '\r' before it stays).
std::string_view without_newline(std::string_view line) {
  if (!line.empty() && line.back() == '\n') {
    line.remove_suffix(1);
  }
  return line;
}

/// A line of the diff without its '\n' or "\r\n".
std::string_view bare(std::string_view line) {
  line = without_newline(line);
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  return line;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::string hunk_name(const diff_hunk& h) {
  return "hunk " + std::to_string(h.number) + " (" + h.header + ")";
}

/// Parses a line number at `text`, advancing `text` past its digits; one past max_line_number
/// stands for any larger one. False when there is none.
bool parse_number(std::string_view& text, std::size_t& value) {
  std::size_t digits = 0;
  value = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    value =
        std::min(value * 10 + static_cast<std::size_t>(text[digits] - '0'), max_line_number + 1);
    ++digits;
  }
  text.remove_prefix(digits);
  return digits > 0;
}

/// Parses "N" or "N,M" at `text`; advances `text`. Returns false when there is no number.
bool parse_range(std::string_view& text, std::size_t& start, std::size_t& count, bool& has_count) {
  if (!parse_number(text, start)) {
    return false;
  }
  has_count = !text.empty() && text.front() == ',';
  count = 1;
  if (has_count) {
    text.remove_prefix(1);
    return parse_number(text, count);
  }
  return true;
}

void skip_spaces(std::string_view& text) {
  while (!text.empty() && text.front() == ' ') {
    text.remove_prefix(1);
  }
}

/// Reads "@@ -a[,b] +c[,d] @@[ section]" into `h`; `counted` says whether a count was given. The
/// error says what is wrong when it cannot.
bool read_stated_header(std::string_view line, diff_hunk& h, bool& counted, std::string& error) {
  line = bare(line);
  std::string_view rest = line.substr(std::min<std::size_t>(2, line.size()));
  skip_spaces(rest);
  std::size_t old_start = 0;
  std::size_t new_start = 0;
  bool old_has_count = false;
  bool new_has_count = false;
  bool ok = starts_with(line, "@@") && !rest.empty() && rest.front() == '-';
  if (ok) {
    rest.remove_prefix(1);
    ok = parse_range(rest, old_start, h.old_count, old_has_count);
  }
  skip_spaces(rest);
  ok = ok && !rest.empty() && rest.front() == '+';
  if (ok) {
    rest.remove_prefix(1);
    ok = parse_range(rest, new_start, h.new_count, new_has_count);
  }
  skip_spaces(rest);
  ok = ok && starts_with(rest, "@@") &&
       std::max({old_start, h.old_count, new_start, h.new_count}) <= max_line_number;
  if (!ok) {
    error =
        "hunk " + std::to_string(h.number) + ": header " + shown(line) +
        " is not `@@ -START,COUNT +START,COUNT @@`; fix: write each hunk header as diff -u does";
    return false;
  }
  h.old_start = old_start;
  // diff(1) omits a count of 1; a header without any count (as models often write it) gets its
  // counts from the lines that follow instead.
  counted = old_has_count || new_has_count;
  return true;
}

/// A model's header: `@@`, then the old start when a `-START` follows; anything else is ignored.
void read_recounted_header(std::string_view line, diff_hunk& h) {
  std::string_view rest = line.substr(std::min<std::size_t>(2, line.size()));
  skip_spaces(rest);
  std::size_t start = 0;
  if (!rest.empty() && rest.front() == '-') {
    rest.remove_prefix(1);
    if (parse_number(rest, start)) {
      h.old_start = start;
    }
  }
}

bool ends_in_crlf(std::string_view line) {
  return line.size() >= 2 && line.substr(line.size() - 2) == "\r\n";
}

/// A line of the diff with nothing on it ("\n", "\r\n", or "" where lines come without '\n').
bool is_blank(std::string_view line) {
  return bare(line).empty();
}

bool is_body_line(std::string_view line) {
  return is_blank(line) || line.front() == ' ' || line.front() == '+' || line.front() == '-' ||
         line.front() == '\\';
}

/// Whether an uncounted hunk ends at `lines[at]` because the next file's header starts there: a
/// file header, or (as_stated, where a lone `---`/`+++` line before a hunk is taken for a header
/// cut short) "--- " or "+++ " followed by "+++ " or "@@".
bool starts_next_file(const std::vector<std::string_view>& lines,
                      std::size_t at,
                      hunk_counts counts) {
  if (is_file_header(lines, at)) {
    return true;
  }
  return counts == hunk_counts::as_stated && at + 1 < lines.size() &&
         (starts_with(lines[at], "--- ") || starts_with(lines[at], "+++ ")) &&
         (starts_with(lines[at + 1], "+++ ") || starts_with(lines[at + 1], "@@"));
}

/// Context and removed lines, context and added lines.
std::pair<std::size_t, std::size_t> count_sides(const std::vector<hunk_line>& lines) {
  std::size_t old_count = 0;
  std::size_t new_count = 0;
  for (const auto& line : lines) {
    old_count += line.kind != '+' ? 1 : 0;
    new_count += line.kind != '-' ? 1 : 0;
  }
  return {old_count, new_count};
}

/// Drops the lines at the end of an uncounted hunk that are spacing rather than context: blank
/// lines of the diff (as_stated, `trailing_blank` of them), or any empty context line (recounted).
void drop_trailing_spacing(diff_hunk& h, hunk_counts counts, std::size_t trailing_blank) {
  if (counts == hunk_counts::as_stated) {
    h.lines.resize(h.lines.size() - trailing_blank);
    return;
  }
  while (!h.lines.empty() && h.lines.back().kind == ' ' && bare(h.lines.back().text).empty()) {
    h.lines.pop_back();
  }
}

/// Reads hunk `h`'s body from `lines` at `next` (advanced past it). Counted, it reads exactly that
/// many lines; otherwise until the next header or a line that cannot be in a hunk.
bool read_hunk_body(const std::vector<std::string_view>& lines,
                    std::size_t& next,
                    hunk_counts counts,
                    bool counted,
                    diff_hunk& h,
                    std::string& error) {
  std::size_t old_seen = 0;
  std::size_t new_seen = 0;
  std::size_t trailing_blank = 0; // blank diff lines at the end so far
  while (next < lines.size() && !(counted && old_seen >= h.old_count && new_seen >= h.new_count)) {
    const std::string_view line = lines[next];
    if (starts_with(line, "@@") || !is_body_line(line) ||
        (!counted && starts_next_file(lines, next, counts))) {
      break;
    }
    ++next;
    const bool blank = is_blank(line);
    if (!blank && line.front() == '\\') {
      if (h.lines.empty() && counts == hunk_counts::recounted) {
        continue; // a model's stray marker: it marks nothing
      }
      if (h.lines.empty()) {
        error = hunk_name(h) + ": `" + std::string(bare(line)) +
                "` follows no line; fix: put it right after the last line of the file";
        return false;
      }
      h.lines.back().no_newline = true;
      trailing_blank = 0;
      continue;
    }
    // An empty line inside a hunk is an empty context line whose leading space was trimmed.
    const char kind = blank ? ' ' : line.front();
    h.lines.push_back({kind, std::string(without_newline(blank ? line : line.substr(1))), false});
    old_seen += kind != '+' ? 1 : 0;
    new_seen += kind != '-' ? 1 : 0;
    trailing_blank = blank ? trailing_blank + 1 : 0;
  }
  // A "\ No newline" marker may follow the last counted line.
  if (next < lines.size() && starts_with(lines[next], "\\") && !h.lines.empty()) {
    h.lines.back().no_newline = true;
    ++next;
  }
  if (!counted) {
    drop_trailing_spacing(h, counts, trailing_blank);
    std::tie(h.old_count, h.new_count) = count_sides(h.lines);
  }
  std::tie(old_seen, new_seen) = count_sides(h.lines);
  if (old_seen != h.old_count || new_seen != h.new_count) {
    error =
        hunk_name(h) + ": the header counts " + std::to_string(h.old_count) + " old and " +
        std::to_string(h.new_count) + " new lines but the hunk has " + std::to_string(old_seen) +
        " and " + std::to_string(new_seen) +
        "; fix: correct the counts (old = context + removed lines, new = context + added lines)";
    return false;
  }
  if (h.lines.empty()) {
    error = hunk_name(h) + ": has no lines; fix: drop the empty hunk";
    return false;
  }
  return true;
}

/// The diff's lines (each ending in '\n'), inside its markdown fence when it has one.
std::vector<std::string_view> diff_lines_of(std::string_view diff) {
  std::vector<std::string_view> lines = split_lines(diff);
  std::size_t open = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (starts_with(lines[i], "```")) {
      open = i;
      break;
    }
  }
  if (open == lines.size()) {
    return lines;
  }
  std::size_t close = open + 1;
  while (close < lines.size() && !starts_with(lines[close], "```")) {
    ++close;
  }
  return {lines.begin() + static_cast<std::ptrdiff_t>(open) + 1,
          lines.begin() + static_cast<std::ptrdiff_t>(close)};
}

/// Reads every hunk of `lines`; headers before the first hunk are skipped, a second file refused.
bool parse_hunks(const std::vector<std::string_view>& lines,
                 std::vector<diff_hunk>& hunks,
                 std::string& error) {
  std::size_t next = 0;
  while (next < lines.size()) {
    const std::string_view line = lines[next];
    if (starts_with(line, "@@")) {
      auto h = read_hunk(lines, next, hunks.size() + 1, hunk_counts::as_stated, error);
      if (!h) {
        return false;
      }
      hunks.push_back(std::move(*h));
      continue;
    }
    if (!hunks.empty() && (starts_with(line, "--- ") || starts_with(line, "diff --git "))) {
      error = "diff: line " + std::to_string(next + 1) + " " + shown(bare(line)) +
              " starts a second file after " + std::to_string(hunks.size()) +
              " hunk(s); fix: give one diff per file";
      return false;
    }
    if (!hunks.empty() && !is_blank(line)) {
      if (line.front() == '+' || line.front() == '-' || line.front() == ' ') {
        const diff_hunk& h = hunks.back();
        error = hunk_name(h) + ": line " + std::to_string(next + 1) + " of the diff " +
                shown(bare(line)) + " is past the lines the header counts (" +
                std::to_string(h.old_count) + " old, " + std::to_string(h.new_count) +
                " new); fix: correct the counts (old = context + removed lines, new = context + "
                "added lines)";
        return false;
      }
    }
    ++next; // headers (diff --git, index, ---, +++) and prose around the hunks
  }
  if (hunks.empty()) {
    error = "diff: has no hunk (no line starting with `@@ -`); fix: give a unified diff as diff -u "
            "writes it";
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Applying

/// A hunk's old and new lines as they are in the files: with their '\n', but for a line marked
/// "\ No newline at end of file".
struct hunk_sides {
  std::vector<std::string> old_lines; ///< context and removed lines
  std::vector<std::string> new_lines; ///< context and added lines
};

hunk_sides sides_of(const diff_hunk& h) {
  hunk_sides sides;
  for (const auto& line : h.lines) {
    std::string text = line.no_newline ? line.text : line.text + '\n';
    if (line.kind != '+') {
      sides.old_lines.push_back(text);
    }
    if (line.kind != '-') {
      sides.new_lines.push_back(std::move(text));
    }
  }
  return sides;
}

/// Whether the old lines sit exactly at line `at` (0-based) of `file`.
bool matches_at(const std::vector<std::string_view>& file,
                const std::vector<std::string>& old_lines,
                std::size_t at) {
  if (at + old_lines.size() > file.size()) {
    return false;
  }
  for (std::size_t i = 0; i < old_lines.size(); ++i) {
    if (file[at + i] != old_lines[i]) {
      return false;
    }
  }
  return true;
}

/// Why the hunk does not match at its stated line: the first line that differs.
std::string mismatch_message(const std::vector<std::string_view>& file,
                             const diff_hunk& h,
                             const std::vector<std::string>& old_lines,
                             std::size_t at,
                             std::size_t earliest) {
  const std::string where = hunk_name(h) + ": ";
  const std::size_t low = at > max_offset_lines ? at - max_offset_lines : 0;
  const std::string searched =
      " (nor within " + std::to_string(max_offset_lines) + " lines of it" +
      (earliest > low ? ", after hunk " + std::to_string(h.number - 1) : std::string()) + "); ";
  for (std::size_t i = 0; i < old_lines.size(); ++i) {
    const std::string_view want = old_lines[i];
    const std::string line_number = std::to_string(at + i + 1);
    if (at + i >= file.size()) {
      return where + "line " + line_number + " expected " + shown(want) +
             " but the file has only " + std::to_string(file.size()) + " lines" + searched +
             std::string(fix_current);
    }
    const std::string_view have = file[at + i];
    if (have == want) {
      continue;
    }
    std::string hint;
    const bool have_cr = ends_in_crlf(have);
    if (bare(have) == bare(want) && have_cr != ends_in_crlf(want)) {
      hint = have_cr ? " (the file's lines end in CRLF, the diff's in LF)"
                     : " (the diff's lines end in CRLF, the file's in LF)";
    } else if (bare(have) == bare(want)) {
      hint = !want.empty() && want.back() == '\n'
                 ? " (the file has no newline at its end, the diff expects one)"
                 : " (the diff says the file has no newline at its end; it has one)";
    }
    return where + "line " + line_number + " expected " + shown(want) + " but the file has " +
           shown(have) + hint + searched + std::string(fix_current);
  }
  return where + "does not fit at line " + std::to_string(at + 1) + searched +
         std::string(fix_current);
}

/// Where hunk `h` goes in `file` (0-based): at its stated line or, nearest first, within
/// max_offset_lines of it, not before `earliest`; else why not.
std::optional<std::size_t> place_hunk(const std::vector<std::string_view>& file,
                                      const diff_hunk& h,
                                      const hunk_sides& sides,
                                      std::size_t stated,
                                      std::size_t earliest,
                                      std::string& error) {
  std::optional<std::size_t> found;
  for (std::size_t offset = 0; offset <= max_offset_lines && !found; ++offset) {
    // Nearest first; of two equally near places, the earlier.
    if (offset <= stated && stated - offset >= earliest &&
        matches_at(file, sides.old_lines, stated - offset)) {
      found = stated - offset;
    } else if (offset > 0 && stated + offset >= earliest &&
               matches_at(file, sides.old_lines, stated + offset)) {
      found = stated + offset;
    }
  }
  if (!found) {
    error = mismatch_message(file, h, sides.old_lines, stated, earliest);
    return std::nullopt;
  }
  auto lacks_newline = [](const std::string& line) { return line.empty() || line.back() != '\n'; };
  const auto& new_lines = sides.new_lines;
  const bool inner_lacks_newline =
      !new_lines.empty() && std::any_of(new_lines.begin(), new_lines.end() - 1, lacks_newline);
  if (inner_lacks_newline || (!new_lines.empty() && lacks_newline(new_lines.back()) &&
                              *found + h.old_count != file.size())) {
    error = hunk_name(h) + ": marks a line `\\ No newline at end of file` but ends at line " +
            std::to_string(*found + h.old_count) + " of " + std::to_string(file.size()) +
            "; fix: mark only the file's last line";
    return std::nullopt;
  }
  return found;
}

} // namespace

std::string make_unified_diff(std::string_view before,
                              std::string_view after,
                              std::string_view name,
                              std::size_t context) {
  if (before == after) {
    return {};
  }
  const std::vector<std::string_view> a = split_lines(before);
  const std::vector<std::string_view> b = split_lines(after);
  const std::vector<edit> edits = diff_lines(a, b);

  std::string out;
  out += "--- a/";
  out += name;
  out += "\n+++ b/";
  out += name;
  out += '\n';

  // Position of each edit in both texts: keeps and removals advance `before`, keeps and insertions
  // advance `after`.
  std::vector<std::size_t> a_pos(edits.size() + 1);
  std::vector<std::size_t> b_pos(edits.size() + 1);
  for (std::size_t i = 0; i < edits.size(); ++i) {
    a_pos[i + 1] = a_pos[i] + (edits[i].kind == edit_kind::insert ? 0 : 1);
    b_pos[i + 1] = b_pos[i] + (edits[i].kind == edit_kind::remove ? 0 : 1);
  }
  std::size_t i = 0;
  while (i < edits.size()) {
    while (i < edits.size() && edits[i].kind == edit_kind::keep) {
      ++i;
    }
    if (i == edits.size()) {
      break;
    }
    // A hunk runs from `context` keeps before its first change to `context` keeps after its last;
    // changes closer than 2 * context keeps share one hunk.
    const std::size_t first = i >= context ? i - context : 0;
    std::size_t last_change = i;
    std::size_t j = i;
    while (j < edits.size()) {
      if (edits[j].kind != edit_kind::keep) {
        last_change = j;
        ++j;
        continue;
      }
      std::size_t run = j;
      while (run < edits.size() && edits[run].kind == edit_kind::keep) {
        ++run;
      }
      if (run == edits.size() || run - j > 2 * context) {
        break;
      }
      j = run;
    }
    const std::size_t end = std::min(edits.size(), last_change + 1 + context);
    out += "@@ -" + format_range(a_pos[first], a_pos[end] - a_pos[first]) + " +" +
           format_range(b_pos[first], b_pos[end] - b_pos[first]) + " @@\n";
    for (std::size_t k = first; k < end; ++k) {
      const edit& e = edits[k];
      switch (e.kind) {
      case edit_kind::keep: append_body_line(out, ' ', a[e.line]); break;
      case edit_kind::remove: append_body_line(out, '-', a[e.line]); break;
      case edit_kind::insert: append_body_line(out, '+', b[e.line]); break;
      }
    }
    i = end;
  }
  return out;
}

bool is_file_header(const std::vector<std::string_view>& lines, std::size_t at) {
  return at + 1 < lines.size() && starts_with(lines[at], "--- ") &&
         starts_with(lines[at + 1], "+++ ");
}

std::optional<diff_hunk> read_hunk(const std::vector<std::string_view>& lines,
                                   std::size_t& next,
                                   std::size_t number,
                                   hunk_counts counts,
                                   std::string& error) {
  diff_hunk h;
  h.number = number;
  if (next >= lines.size()) {
    error = "hunk " + std::to_string(number) +
            ": missing; fix: give a unified diff as diff -u "
            "writes it";
    return std::nullopt;
  }
  const std::string_view line = bare(lines[next]);
  const std::size_t close = line.size() >= 2 ? line.find("@@", 2) : std::string_view::npos;
  h.header = std::string(close == std::string_view::npos ? line : line.substr(0, close + 2));
  bool counted = false;
  if (counts == hunk_counts::recounted) {
    read_recounted_header(line, h);
  } else if (!read_stated_header(line, h, counted, error)) {
    return std::nullopt;
  }
  ++next;
  if (!read_hunk_body(lines, next, counts, counted, h, error)) {
    return std::nullopt;
  }
  return h;
}

namespace {

/// A hunk placed in the file: `old_count` lines from `at` become `new_lines`.
struct placed_hunk {
  std::size_t at = 0;
  std::size_t old_count = 0;
  std::vector<std::string> new_lines;
};

/// Places every hunk of `diff` in `file`, in order; nullopt with `error` when one does not match.
std::optional<std::vector<placed_hunk>>
place_diff(const std::vector<std::string_view>& file, std::string_view diff, std::string& error) {
  std::string diff_text(diff);
  if (!diff_text.empty() && diff_text.back() != '\n') {
    diff_text += '\n'; // the diff's own last newline, often trimmed; not the file's
  }
  std::vector<diff_hunk> hunks;
  if (!parse_hunks(diff_lines_of(diff_text), hunks, error)) {
    return std::nullopt;
  }
  std::vector<placed_hunk> placed;
  std::size_t stated_end = 0; // where the previous hunk ends, as its header states it
  std::size_t earliest = 0;   // first line the next hunk may start at, as matched
  for (const diff_hunk& h : hunks) {
    // An empty old range names the line before it: "-5,0" inserts after line 5.
    const std::size_t start = h.old_start.value_or(0);
    const std::size_t stated = h.old_count == 0 || start == 0 ? start : start - 1;
    if (h.number > 1 && stated < stated_end) {
      error = hunk_name(h) + ": starts at line " + std::to_string(stated + 1) + ", before hunk " +
              std::to_string(h.number - 1) + " ends (line " + std::to_string(stated_end) +
              "); fix: order the hunks by line and merge the ones that overlap";
      return std::nullopt;
    }
    stated_end = stated + h.old_count;
    hunk_sides sides = sides_of(h);
    const auto found = place_hunk(file, h, sides, stated, earliest, error);
    if (!found) {
      return std::nullopt;
    }
    placed.push_back({*found, h.old_count, std::move(sides.new_lines)});
    earliest = *found + h.old_count;
  }
  return placed;
}

/// `file` with `hunks` (in file order, none overlapping) in place.
std::string splice(const std::vector<std::string_view>& file,
                   const std::vector<const placed_hunk*>& hunks,
                   std::size_t size_hint) {
  std::string text;
  text.reserve(size_hint);
  std::size_t cursor = 0;
  for (const placed_hunk* h : hunks) {
    for (; cursor < h->at; ++cursor) {
      text += file[cursor];
    }
    for (const auto& line : h->new_lines) {
      text += line;
    }
    cursor = h->at + h->old_count;
  }
  for (; cursor < file.size(); ++cursor) {
    text += file[cursor];
  }
  return text;
}

/// Whether two placed hunks touch the same lines, or insert at the same place (their order would
/// be a guess).
bool overlap(const placed_hunk& a, const placed_hunk& b) {
  if (a.at == b.at) {
    return true;
  }
  const placed_hunk& first = a.at < b.at ? a : b;
  const placed_hunk& second = a.at < b.at ? b : a;
  return second.at < first.at + first.old_count;
}

} // namespace

patch_result apply_unified_diff(std::string_view text, std::string_view diff) {
  const std::vector<std::string_view> file = split_lines(text);
  std::string error;
  const auto placed = place_diff(file, diff, error);
  if (!placed) {
    return failure(std::move(error));
  }
  std::vector<const placed_hunk*> order;
  for (const placed_hunk& h : *placed) {
    order.push_back(&h);
  }
  patch_result result;
  result.ok = true;
  result.text = splice(file, order, text.size());
  return result;
}

combined_patch apply_unified_diffs(std::string_view text, const std::vector<std::string>& diffs) {
  const std::vector<std::string_view> file = split_lines(text);
  combined_patch out;
  std::vector<std::vector<placed_hunk>> taken(diffs.size());
  for (std::size_t d = 0; d < diffs.size(); ++d) {
    std::string error;
    auto placed = place_diff(file, diffs[d], error);
    if (!placed) {
      out.left_out.push_back({d, std::move(error)});
      continue;
    }
    std::optional<std::string> clash;
    for (std::size_t e = 0; e < d && !clash; ++e) {
      for (const placed_hunk& mine : *placed) {
        const auto other = std::find_if(taken[e].begin(), taken[e].end(),
                                        [&](const placed_hunk& h) { return overlap(mine, h); });
        if (other != taken[e].end()) {
          clash = "its change at line " + std::to_string(mine.at + 1) +
                  " overlaps the change of diff " + std::to_string(e + 1) + " at line " +
                  std::to_string(other->at + 1);
          break;
        }
      }
    }
    if (clash) {
      out.left_out.push_back({d, *clash});
      continue;
    }
    taken[d] = std::move(*placed);
    out.applied.push_back(d);
  }
  std::vector<const placed_hunk*> order;
  for (const auto& hunks : taken) {
    for (const placed_hunk& h : hunks) {
      order.push_back(&h);
    }
  }
  std::sort(order.begin(), order.end(),
            [](const placed_hunk* a, const placed_hunk* b) { return a->at < b->at; });
  out.text = splice(file, order, text.size());
  return out;
}

} // namespace rpl::stages::optimize
