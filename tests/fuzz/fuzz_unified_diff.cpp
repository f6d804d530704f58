// libFuzzer target: unified diffs made and applied in memory (stages/optimize/unified_diff.hpp),
// how a proposal travels and what an LLM's diff is finally checked by.
//
// The input is TEXT, a NUL byte, then DIFF (without a NUL the whole input is TEXT and DIFF is
// empty). apply_unified_diff(TEXT, DIFF) runs first. Then the pair is read as two texts: the diff
// make_unified_diff(TEXT, DIFF) writes, with the input's size % 5 lines of context (3 is the
// default), must be empty exactly when the texts are equal and must turn TEXT into DIFF when
// applied; so must the diff from TEXT to the patched text when the patch applied. A finding is a
// crash, an exception, a patch that applies with an error or fails without one, an error that does
// not start with `hunk N` or `diff:` or gives no `fix:`, or a round trip that does not give its
// text back.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "stages/optimize/unified_diff.hpp"

namespace {

namespace o = rpl::stages::optimize;

void check(bool condition) {
  if (!condition) {
    __builtin_trap();
  }
}

/// make_unified_diff(before, after) applied to `before` gives `after`.
void check_round_trip(std::string_view before, std::string_view after, std::size_t context) {
  const std::string diff = o::make_unified_diff(before, after, "fuzz.cu", context);
  check(diff.empty() == (before == after));
  if (diff.empty()) {
    return;
  }
  const o::patch_result back = o::apply_unified_diff(before, diff);
  check(back.ok);
  check(back.text == after);
}

void check_error(const o::patch_result& result) {
  if (result.ok) {
    check(result.error.empty());
    return;
  }
  const std::string& error = result.error;
  check(error.rfind("hunk ", 0) == 0 || error.rfind("diff: ", 0) == 0);
  check(error.find("fix: ") != std::string::npos);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  const std::string_view diff =
      nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);

  const o::patch_result patched = o::apply_unified_diff(text, diff);
  check_error(patched);
  check_round_trip(text, diff, size % 5);
  if (patched.ok) {
    check_round_trip(text, patched.text, size % 5);
  }
  return 0;
}
