#pragma once
/// Unified diffs of one file, made and applied in memory: how a proposal travels (messages/
/// proposal.hpp) and what `optimize --out` writes. Applying is strict: every context and removed
/// line must match where the hunk says (or within a small offset), or the patch is refused with the
/// hunk and the line that differs; nothing fuzzy, nothing executed.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rpl::stages::optimize {

/// The unified diff turning `before` into `after` ("--- a/NAME", "+++ b/NAME", @@ hunks with
/// `context` lines around each change); empty when the texts are equal. Lines end with '\n'; a
/// last line without one is marked "\ No newline at end of file" as diff(1) does. Minimal (Myers)
/// while the texts differ by up to about a thousand lines; past that, correct but not minimal.
std::string make_unified_diff(std::string_view before,
                              std::string_view after,
                              std::string_view name,
                              std::size_t context = 3);

struct patch_result {
  bool ok = false;
  std::string text;  ///< the patched text when ok
  std::string error; ///< when not ok: which hunk, which line, what was expected and found
};

/// Applies `diff` (one file's unified diff, as make_unified_diff writes it or an LLM answers it:
/// headers optional, hunk line counts checked) to `text`. Also read: a markdown ```diff fence
/// around it, and hunk headers without counts (`@@ -5 +5 @@`), whose lines then tell the counts.
/// Each hunk must match exactly at its stated line or, nearest first, within 50 lines of it, after
/// the previous hunk; CRLF lines match only CRLF lines.
patch_result apply_unified_diff(std::string_view text, std::string_view diff);

/// Several diffs made against the same `text` (each kernel's accepted change to one source file),
/// applied together: each diff's hunks placed in `text` as apply_unified_diff places them, and the
/// text with all of them in line order. A diff that does not apply, or that touches a line another
/// diff before it in `diffs` changes (or inserts where it inserts), is left out whole.
struct combined_patch {
  std::string text;                 ///< `text` with the applied diffs
  std::vector<std::size_t> applied; ///< indices into `diffs`, in order
  /// Indices into `diffs` left out, each with why.
  std::vector<std::pair<std::size_t, std::string>> left_out;
};
combined_patch apply_unified_diffs(std::string_view text, const std::vector<std::string>& diffs);

// ---- reading hunks: apply_unified_diff's reader, shared with llm_answer's -----------------------

/// One line of a hunk's body.
struct hunk_line {
  char kind = ' ';         ///< ' ' context, '-' removed, '+' added
  std::string text;        ///< without the prefix and the '\n' (a '\r' before it stays)
  bool no_newline = false; ///< followed by "\ No newline at end of file"
};

/// One hunk as the diff writes it, before it is placed in a file.
struct diff_hunk {
  std::size_t number = 0; ///< 1-based, for messages
  std::string header;     ///< "@@ -40,7 +40,8 @@", the section text after it left out
  /// The header's first old line (1-based; for an empty range, the line before it); none when a
  /// recounted header gives no number (`@@ ... @@`).
  std::optional<std::size_t> old_start;
  std::size_t old_count = 0; ///< context and removed lines
  std::size_t new_count = 0; ///< context and added lines
  std::vector<hunk_line> lines;
};

/// How a hunk's header counts are taken.
enum class hunk_counts {
  /// As diff -u writes them: `@@ -START,COUNT +START,COUNT @@`, the body exactly that long; a
  /// header without counts (`@@ -5 +5 @@`) reads on to the first line that cannot be in a hunk,
  /// blank lines at its end being spacing.
  as_stated,
  /// As models write them: any line starting with `@@` (a `-START` read when there is one), counts
  /// ignored; the body reads on to the first line that cannot be in a hunk, empty context lines at
  /// its end are spacing, and a `\` marker before the first line marks nothing.
  recounted,
};

/// Whether `lines[at]` starts a file header: "--- " with "+++ " on the next line.
bool is_file_header(const std::vector<std::string_view>& lines, std::size_t at);

/// Reads the hunk whose header is `lines[next]` (lines with or without their '\n') as hunk
/// `number`, and moves `next` past it: to the next `@@` line, a file header, a line that cannot be
/// in a hunk, or the end. A blank line inside is an empty context line whose space was trimmed.
/// Empty when the header cannot be read, the counts are wrong, a `\` marker follows no line or
/// the hunk has no lines: then `error` names the hunk and says what to fix.
std::optional<diff_hunk> read_hunk(const std::vector<std::string_view>& lines,
                                   std::size_t& next,
                                   std::size_t number,
                                   hunk_counts counts,
                                   std::string& error);

} // namespace rpl::stages::optimize
