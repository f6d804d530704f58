#pragma once
/// Unified diffs of one file, made and applied in memory: how a proposal travels (messages/
/// proposal.hpp) and what `optimize --out` writes. Applying is strict: every context and removed
/// line must match where the hunk says (or within a small offset), or the patch is refused with the
/// hunk and the line that differs; nothing fuzzy, nothing executed.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

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

} // namespace rpl::stages::optimize
