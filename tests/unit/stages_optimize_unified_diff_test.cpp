#include <algorithm>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "stages/optimize/unified_diff.hpp"

namespace rpl::stages::optimize {
namespace {

std::string numbered_lines(int first, int last) {
  std::string out;
  for (int i = first; i <= last; ++i) {
    out += "line " + std::to_string(i) + "\n";
  }
  return out;
}

/// Lines starting with '+' or '-' in a diff's hunks (headers excluded).
std::size_t changed_lines(const std::string& diff) {
  std::size_t count = 0;
  std::size_t start = 0;
  while (start < diff.size()) {
    std::size_t end = diff.find('\n', start);
    const std::string line = diff.substr(start, end - start);
    if ((line[0] == '+' || line[0] == '-') && line.rfind("--- ", 0) != 0 &&
        line.rfind("+++ ", 0) != 0) {
      ++count;
    }
    start = end + 1;
  }
  return count;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

/// Length of the longest common subsequence of lines, by dynamic programming.
std::size_t lcs_length(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::vector<std::size_t>> t(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      t[i][j] = a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
    }
  }
  return t[a.size()][b.size()];
}

TEST(unified_diff, equal_texts_give_an_empty_diff) {
  EXPECT_EQ(make_unified_diff("", "", "k.cpp"), "");
  EXPECT_EQ(make_unified_diff("a\nb\n", "a\nb\n", "k.cpp"), "");
}

TEST(unified_diff, writes_hunks_as_diff_u_does) {
  const std::string before = numbered_lines(1, 10);
  std::string after = before;
  after.replace(after.find("line 5\n"), 7, "line five\n");
  EXPECT_EQ(make_unified_diff(before, after, "k.cpp"), "--- a/k.cpp\n"
                                                       "+++ b/k.cpp\n"
                                                       "@@ -2,7 +2,7 @@\n"
                                                       " line 2\n"
                                                       " line 3\n"
                                                       " line 4\n"
                                                       "-line 5\n"
                                                       "+line five\n"
                                                       " line 6\n"
                                                       " line 7\n"
                                                       " line 8\n");
}

TEST(unified_diff, writes_empty_ranges_as_diff_does_and_single_lines_counted) {
  EXPECT_EQ(make_unified_diff("", "a\nb\n", "f"), "--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n");
  EXPECT_EQ(make_unified_diff("a\nb\n", "", "f"), "--- a/f\n+++ b/f\n@@ -1,2 +0,0 @@\n-a\n-b\n");
  // ",1" written out (diff(1) omits it): a header without counts is read as uncounted.
  EXPECT_EQ(make_unified_diff("a\n", "b\n", "f"), "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n-a\n+b\n");
  // An insertion with no context names the line it follows.
  EXPECT_EQ(make_unified_diff("a\nb\n", "a\nx\nb\n", "f", 0),
            "--- a/f\n+++ b/f\n@@ -1,0 +2,1 @@\n+x\n");
}

TEST(unified_diff, an_added_line_that_reads_like_a_file_header_round_trips) {
  // fuzz_unified_diff: "++ bb" added in a one-line hunk is written "+++ bb"; before the next "@@"
  // it was read as the next file's header when the hunk's header carried no counts.
  const std::string before = "x\nbb\ny\nz\nw\nv\nu\nt\ns\nq\n";
  const std::string after = "x\n++ bb\ny\nz\nw\nv\nu\nt\ns\nQ\n";
  const std::string diff = make_unified_diff(before, after, "f", 0);
  const patch_result r = apply_unified_diff(before, diff);
  ASSERT_TRUE(r.ok) << r.error << "\n" << diff;
  EXPECT_EQ(r.text, after);
}

TEST(unified_diff, marks_a_last_line_without_newline) {
  EXPECT_EQ(make_unified_diff("a\nb", "a\nc", "f"),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"
            "\\ No newline at end of file\n");
  EXPECT_EQ(make_unified_diff("a\nb", "a\nb\n", "f"),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n");
}

TEST(unified_diff, joins_changes_within_twice_the_context) {
  const std::string before = numbered_lines(1, 30);
  std::string near = before;
  near.replace(near.find("line 5\n"), 7, "five\n");
  near.replace(near.find("line 12\n"), 8, "twelve\n"); // 6 unchanged lines between: one hunk
  std::string far = before;
  far.replace(far.find("line 5\n"), 7, "five\n");
  far.replace(far.find("line 13\n"), 8, "thirteen\n"); // 7 unchanged lines between: two hunks
  const std::string one = make_unified_diff(before, near, "f");
  const std::string two = make_unified_diff(before, far, "f");
  EXPECT_NE(one.find("@@ -2,14 +2,14 @@"), std::string::npos) << one;
  EXPECT_NE(two.find("@@ -2,7 +2,7 @@"), std::string::npos) << two;
  EXPECT_NE(two.find("@@ -10,7 +10,7 @@"), std::string::npos) << two;
}

TEST(unified_diff, applies_what_it_makes_for_random_texts) {
  std::mt19937 rng(20240611);
  const std::vector<std::string> vocabulary = {"a\n", "b\n",      "c\n",  "{\n",       "}\n",
                                               "\n",  "x = 1;\n", "\r\n", "\tint k;\n"};
  auto pick = [&](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::string> a(pick(round % 10 == 0 ? 3 : 40));
    for (auto& line : a) {
      line = vocabulary[pick(vocabulary.size())];
    }
    std::vector<std::string> b = a;
    const std::size_t edits = pick(8);
    for (std::size_t e = 0; e < edits; ++e) {
      const std::size_t kind = pick(3);
      if (kind == 0 || b.empty()) {
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(pick(b.size() + 1)),
                 vocabulary[pick(vocabulary.size())]);
      } else if (kind == 1) {
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(pick(b.size())));
      } else {
        b[pick(b.size())] = vocabulary[pick(vocabulary.size())];
      }
    }
    std::string before;
    std::string after;
    for (const auto& line : a) {
      before += line;
    }
    for (const auto& line : b) {
      after += line;
    }
    // Some texts lack their last newline, on either side or both.
    if (pick(4) == 0 && !before.empty()) {
      before.pop_back();
    }
    if (pick(4) == 0 && !after.empty()) {
      after.pop_back();
    }
    const std::size_t context = pick(5);
    const std::string diff = make_unified_diff(before, after, "k.cpp", context);
    ASSERT_EQ(diff.empty(), before == after);
    if (diff.empty()) {
      continue;
    }
    const patch_result r = apply_unified_diff(before, diff);
    ASSERT_TRUE(r.ok) << "round " << round << ": " << r.error << "\n" << diff;
    ASSERT_EQ(r.text, after) << "round " << round << "\n" << diff;
    // Minimal: the changed lines are exactly those outside a longest common subsequence.
    const std::vector<std::string> la = split(before);
    const std::vector<std::string> lb = split(after);
    ASSERT_EQ(changed_lines(diff), la.size() + lb.size() - 2 * lcs_length(la, lb))
        << "round " << round << "\n"
        << diff;
  }
}

TEST(unified_diff, round_trips_large_unrelated_texts_quickly) {
  // Beyond 1024 edits the script is no longer minimal, but it must still be right.
  std::mt19937 rng(7);
  std::string before;
  std::string after;
  for (int i = 0; i < 6000; ++i) {
    before += "a" + std::to_string(rng() % 50) + "\n";
    after += (i % 3 == 0 ? "a" : "b") + std::to_string(rng() % 50) + "\n";
  }
  const std::string diff = make_unified_diff(before, after, "big.cpp");
  const patch_result r = apply_unified_diff(before, diff);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.text == after);
}

TEST(unified_diff, round_trips_empty_files_and_lone_lines) {
  const std::vector<std::string> texts = {"", "\n", "a", "a\n", "a\nb", "\n\n", "a\r\nb\r\n"};
  for (const auto& before : texts) {
    for (const auto& after : texts) {
      const std::string diff = make_unified_diff(before, after, "f");
      if (before == after) {
        EXPECT_EQ(diff, "");
        continue;
      }
      const patch_result r = apply_unified_diff(before, diff);
      ASSERT_TRUE(r.ok) << r.error << "\n" << diff;
      EXPECT_EQ(r.text, after) << diff;
    }
  }
}

TEST(unified_diff, accepts_git_headers_and_a_markdown_fence) {
  const std::string before = numbered_lines(1, 8);
  const std::string diff = "Here is the change:\n"
                           "```diff\n"
                           "diff --git a/k.cpp b/k.cpp\n"
                           "index 1234567..89abcde 100644\n"
                           "--- a/k.cpp\n"
                           "+++ b/k.cpp\n"
                           "@@ -3,3 +3,4 @@ void kernel()\n"
                           " line 3\n"
                           "-line 4\n"
                           "+line 4a\n"
                           "+line 4b\n"
                           " line 5\n"
                           "```\n"
                           "This unrolls the loop.\n";
  const patch_result r = apply_unified_diff(before, diff);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.text, "line 1\nline 2\nline 3\nline 4a\nline 4b\nline 5\nline 6\nline 7\nline 8\n");
}

TEST(unified_diff, reads_hunk_headers_without_counts) {
  const std::string before = numbered_lines(1, 8);
  // diff(1)'s own form: a count of one is left out.
  patch_result r = apply_unified_diff(before, "@@ -5 +5 @@\n-line 5\n+five\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.text, "line 1\nline 2\nline 3\nline 4\nfive\nline 6\nline 7\nline 8\n");
  // A model's form: no counts at all, the lines tell them; trailing blank lines are spacing.
  r = apply_unified_diff(before, "@@ -4 +4 @@\n line 4\n-line 5\n+five\n+5b\n line 6\n\n\n"
                                 "@@ -8 +9 @@\n-line 8\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.text, "line 1\nline 2\nline 3\nline 4\nfive\n5b\nline 6\nline 7\n");
}

TEST(unified_diff, applies_a_hunk_that_moved_up_to_fifty_lines) {
  const std::string before = numbered_lines(1, 200);
  const std::string diff = "@@ -100,3 +100,3 @@\n line 130\n-line 131\n+changed\n line 132\n";
  const patch_result r = apply_unified_diff(before, diff);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NE(r.text.find("line 130\nchanged\nline 132\n"), std::string::npos);
  const patch_result too_far =
      apply_unified_diff(before, "@@ -60,3 +60,3 @@\n line 130\n-line 131\n+changed\n line 132\n");
  ASSERT_FALSE(too_far.ok);
  EXPECT_EQ(too_far.error, "hunk 1 (@@ -60,3 +60,3 @@): line 60 expected `line 130` but the file "
                           "has `line 60` (nor within 50 lines of it); fix: make the diff against "
                           "the current source");
}

TEST(unified_diff, takes_the_nearest_of_several_matches) {
  const std::string before = "x\nx\ny\nx\n";
  const patch_result r = apply_unified_diff(before, "@@ -3 +3 @@\n-x\n+z\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.text, "x\nz\ny\nx\n"); // lines 2 and 4 are both one away: the earlier wins
}

TEST(unified_diff, names_the_hunk_and_the_line_that_differs) {
  const std::string before =
      numbered_lines(1, 50) + "    for (int k = 0; k < n; ++k) {\n" + numbered_lines(52, 60);
  const std::string diff = "@@ -1,3 +1,3 @@\n line 1\n-line 2\n+two\n line 3\n"
                           "@@ -49,3 +49,3 @@\n line 49\n line 50\n"
                           "-    for (int k0 = 0; k0 < n; ++k0) {\n"
                           "+    for (int k0 = 0; k0 < n; k0 += 4) {\n";
  const patch_result r = apply_unified_diff(before, diff);
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.error, "hunk 2 (@@ -49,3 +49,3 @@): line 51 expected `    for (int k0 = 0; k0 < n; "
                     "++k0) {` but the file has `    for (int k = 0; k < n; ++k) {` (nor within 50 "
                     "lines of it, after hunk 1); fix: make the diff against the current source");
}

TEST(unified_diff, checks_each_hunks_counts) {
  const std::string before = numbered_lines(1, 8);
  patch_result r = apply_unified_diff(before, "@@ -2,3 +2,3 @@\n line 2\n-line 3\n+three\n");
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.error,
            "hunk 1 (@@ -2,3 +2,3 @@): the header counts 3 old and 3 new lines but the "
            "hunk has 2 and 2; fix: correct the counts (old = context + removed lines, new "
            "= context + added lines)");
  r = apply_unified_diff(before, "@@ -2,2 +2,2 @@\n line 2\n-line 3\n+three\n line 4\n");
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("is past the lines the header counts"), std::string::npos) << r.error;
  r = apply_unified_diff(before, "--- a/f\n+++ b/f\n");
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("has no hunk"), std::string::npos) << r.error;
  r = apply_unified_diff(before, "@@ -x +2 @@\n-line 2\n");
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("is not `@@ -START,COUNT +START,COUNT @@`"), std::string::npos);
}

TEST(unified_diff, refuses_overlapping_or_out_of_order_hunks) {
  const std::string before = numbered_lines(1, 20);
  const std::string late = "@@ -10,2 +10,2 @@\n-line 10\n-line 11\n+ten\n+eleven\n";
  const std::string early = "@@ -3,1 +3,1 @@\n-line 3\n+three\n";
  patch_result r = apply_unified_diff(before, late + early);
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.error, "hunk 2 (@@ -3,1 +3,1 @@): starts at line 3, before hunk 1 ends (line 11); "
                     "fix: order the hunks by line and merge the ones that overlap");
  r = apply_unified_diff(before, late + "@@ -11,1 +11,1 @@\n-line 11\n+x\n");
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("before hunk 1 ends"), std::string::npos);
  r = apply_unified_diff(before, early + late);
  ASSERT_TRUE(r.ok) << r.error;
}

TEST(unified_diff, refuses_a_second_file) {
  const std::string diff = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n"
                           "-a\n+b\n";
  const patch_result r = apply_unified_diff("a\n", diff);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("starts a second file"), std::string::npos) << r.error;
}

TEST(unified_diff, matches_crlf_only_when_both_sides_have_it) {
  const std::string before = "a\r\nb\r\nc\r\n";
  const std::string after = "a\r\nB\r\nc\r\n";
  const std::string crlf_diff = make_unified_diff(before, after, "f");
  patch_result r = apply_unified_diff(before, crlf_diff);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.text, after);
  r = apply_unified_diff(before, "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("the file's lines end in CRLF, the diff's in LF"), std::string::npos)
      << r.error;
  r = apply_unified_diff("a\nb\nc\n", crlf_diff);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("the diff's lines end in CRLF, the file's in LF"), std::string::npos)
      << r.error;
}

TEST(unified_diff, checks_the_missing_newline_at_the_end) {
  patch_result r =
      apply_unified_diff("a\nb\n", "@@ -2 +2 @@\n-b\n\\ No newline at end of file\n+c\n");
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("the diff says the file has no newline at its end; it has one"),
            std::string::npos)
      << r.error;
  r = apply_unified_diff("a\nb\nc\n", "@@ -2 +2 @@\n-b\n+B\n\\ No newline at end of file\n");
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("mark only the file's last line"), std::string::npos) << r.error;
  r = apply_unified_diff("a\nb", "@@ -2 +2 @@\n-b\n\\ No newline at end of file\n+c\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.text, "a\nc\n");
}

TEST(unified_diff, reads_a_trimmed_empty_context_line) {
  const std::string before = "int f() {\n\n  return 1;\n}\n";
  // Editors and models strip the lone space of an empty context line.
  const patch_result r = apply_unified_diff(before, "@@ -1,3 +1,3 @@\n int f() {\n\n-  return 1;\n"
                                                    "+  return 2;\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.text, "int f() {\n\n  return 2;\n}\n");
}

TEST(unified_diff, read_hunk_checks_stated_counts_and_recounts_a_models) {
  const std::vector<std::string_view> lines = {"@@ -4,9 +41,2 @@ void k()\n",
                                               " a\n",
                                               "-b\n",
                                               "\\ No newline at end of file\n",
                                               "+c\n",
                                               " \n",
                                               "\n",
                                               "Thanks!\n"};
  std::size_t next = 0;
  std::string error;
  const auto recounted = read_hunk(lines, next, 1, hunk_counts::recounted, error);
  ASSERT_TRUE(recounted.has_value()) << error;
  EXPECT_EQ(next, 7u); // stopped at the prose
  EXPECT_EQ(recounted->header, "@@ -4,9 +41,2 @@");
  EXPECT_EQ(recounted->old_start, 4u);
  EXPECT_EQ(recounted->old_count, 2u); // the empty context lines at the end are spacing
  EXPECT_EQ(recounted->new_count, 2u);
  ASSERT_EQ(recounted->lines.size(), 3u);
  EXPECT_EQ(recounted->lines[1].kind, '-');
  EXPECT_EQ(recounted->lines[1].text, "b");
  EXPECT_TRUE(recounted->lines[1].no_newline);

  next = 0;
  EXPECT_FALSE(read_hunk(lines, next, 1, hunk_counts::as_stated, error).has_value());
  EXPECT_NE(error.find("the header counts 9 old and 2 new lines"), std::string::npos) << error;

  const std::vector<std::string_view> model = {"@@ ... @@", "-b", "+c"}; // no '\n' either
  next = 0;
  const auto unnumbered = read_hunk(model, next, 2, hunk_counts::recounted, error);
  ASSERT_TRUE(unnumbered.has_value()) << error;
  EXPECT_FALSE(unnumbered->old_start.has_value());
  EXPECT_EQ(unnumbered->lines.size(), 2u);
  next = 0;
  EXPECT_FALSE(read_hunk(model, next, 2, hunk_counts::as_stated, error).has_value());
  EXPECT_NE(error.find("hunk 2: header `@@ ... @@` is not"), std::string::npos) << error;
}

/// Lines 1..400 with line `at` (1-based) replaced by `with` (several lines).
std::string changed_at(const std::string& text, int at, const std::string& with) {
  const std::string line = "line " + std::to_string(at) + "\n";
  std::string out = text;
  out.replace(out.find(line), line.size(), with);
  return out;
}

TEST(unified_diff, combines_diffs_made_against_one_text_however_far_one_moves_the_other) {
  // Two kernels of one file, each changed against the original: the first adds 80 lines above
  // the second's change, past apply_unified_diff's 50-line search (how optimize's application
  // rebuild lost a second kernel's change on an H200, 2026-11-29).
  const std::string original = numbered_lines(1, 400);
  std::string many;
  for (int i = 0; i < 80; ++i)
    many += "added " + std::to_string(i) + "\n";
  const std::string first = changed_at(original, 100, many);
  const std::string second = changed_at(original, 200, "changed 200\n");
  const std::vector<std::string> diffs = {make_unified_diff(original, first, "app.cu"),
                                          make_unified_diff(original, second, "app.cu")};
  // Applied one after the other, the second does not apply: the reason for combining.
  const auto one = apply_unified_diff(original, diffs[0]);
  ASSERT_TRUE(one.ok);
  EXPECT_FALSE(apply_unified_diff(one.text, diffs[1]).ok);

  const auto both = apply_unified_diffs(original, diffs);
  EXPECT_EQ(both.applied, (std::vector<std::size_t>{0, 1}));
  EXPECT_TRUE(both.left_out.empty());
  EXPECT_EQ(both.text, changed_at(first, 200, "changed 200\n"));
  // In either order.
  const auto reversed = apply_unified_diffs(original, {diffs[1], diffs[0]});
  EXPECT_EQ(reversed.text, both.text);
  // One diff: what apply_unified_diff gives.
  EXPECT_EQ(apply_unified_diffs(original, {diffs[0]}).text, one.text);
}

TEST(unified_diff, leaves_out_a_diff_that_overlaps_an_earlier_one_or_does_not_apply) {
  const std::string original = numbered_lines(1, 100);
  const std::string a = changed_at(original, 50, "a 50\n");
  const std::string b = changed_at(original, 51, "b 51\n"); // within a's context lines
  const std::string c = changed_at(original, 90, "c 90\n");
  const std::vector<std::string> diffs = {
      make_unified_diff(original, a, "f.cu"), make_unified_diff(original, b, "f.cu"),
      make_unified_diff("x\ny\n", "x\nz\n", "f.cu"), // made against another text
      make_unified_diff(original, c, "f.cu")};
  const auto out = apply_unified_diffs(original, diffs);
  EXPECT_EQ(out.applied, (std::vector<std::size_t>{0, 3}));
  ASSERT_EQ(out.left_out.size(), 2u);
  EXPECT_EQ(out.left_out[0].first, 1u);
  EXPECT_NE(out.left_out[0].second.find("overlaps the change of diff 1"), std::string::npos)
      << out.left_out[0].second;
  EXPECT_EQ(out.left_out[1].first, 2u);
  EXPECT_EQ(out.text, changed_at(a, 90, "c 90\n"));
  // Nothing applies: the text as it was.
  const auto none = apply_unified_diffs(original, {diffs[2]});
  EXPECT_TRUE(none.applied.empty());
  EXPECT_EQ(none.text, original);
}

} // namespace
} // namespace rpl::stages::optimize
