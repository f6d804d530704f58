#pragma once
/// Reads an LLM's answer (a chat completion's content) into one proposal for the request's kernel.
/// Pure, and nothing in the answer is run: it is text, applied in memory to the request's source.
///
/// Where the diff is taken from, first match wins:
///   1. the first ```diff / ```patch fence (``` or ~~~, any indentation);
///   2. the first fence of another language whose body holds an @@ hunk;
///   3. an unfenced diff in the prose (`--- a/...` + `+++ b/...`, or an `@@ -` line);
///   4. a fence (```cuda, ```cpp, ```hip, ...) holding a full definition of the kernel: the
///      kernel's definition in the source (found by name with a brace matcher that skips comments
///      and strings) is replaced by that one.
/// The diff's hunks are then made exact before they are applied, since models rarely count lines
/// right: line counts are recounted from the hunk's body, a hunk whose lines are elsewhere moves
/// to the nearest place they occur (after the previous hunk), context and removed lines that differ
/// from the source only in whitespace take the source's text, and a blank line inside a hunk is an
/// empty context line. What still does not apply (apply_unified_diff) is an error naming the hunk.
/// The proposal's diff is make_unified_diff(source, patched): canonical, so the same change gets
/// the same id. CRLF answers and CRLF sources are both handled.

#include <cstddef>
#include <string>
#include <string_view>

#include "messages/proposal.hpp"

namespace rpl::stages::optimize {

struct answer_limits {
  std::size_t title_chars = 120;
  std::size_t rationale_chars = 2000;
};

struct parsed_answer {
  bool ok = false;
  /// When ok: id "llm:<12 hex digits of the diff's hash>", title (the answer's `Title:` line, else
  /// its first line of prose, else "LLM change to <kernel>"), rationale (the prose outside the
  /// code blocks, the title line left out, trimmed and cut to rationale_chars), diff.
  messages::proposal proposal;
  /// When not ok: why, worded for the model in a repair round (the hunk, the line that differs,
  /// what to send instead).
  std::string error;
  /// Which shape the change came in: "diff fence", "fenced diff", "unfenced diff",
  /// "kernel replacement"; empty when none was found.
  std::string shape;
};

/// The proposal in `content` for `request` (its kernel, source_name, source).
parsed_answer parse_llm_answer(std::string_view content,
                               const messages::propose_request& request,
                               const answer_limits& limits = {});

} // namespace rpl::stages::optimize
