// Argument errors, verb by verb: every one exits 2 (bad input), never CLI11's own codes, and says
// what was not understood and where help is.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/test_support.hpp"

namespace rpl {
namespace {

using rpl::testing::run_rocm_perf;

struct argument_case {
  std::string name;
  std::vector<std::string> args;
  std::vector<std::string> said; ///< each must appear in the output
};

void PrintTo(const argument_case& c, std::ostream* out) {
  *out << c.name;
}

class cli_arguments : public ::testing::TestWithParam<argument_case> {};

TEST_P(cli_arguments, exit_2_naming_what_was_not_understood_and_where_help_is) {
  const auto& c = GetParam();
  const auto out = run_rocm_perf(c.args);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  for (const auto& text : c.said) {
    EXPECT_NE(out.output.find(text), std::string::npos) << "missing '" << text << "' in:\n"
                                                        << out.output;
  }
}

INSTANTIATE_TEST_SUITE_P(
    every_verb,
    cli_arguments,
    ::testing::Values(
        argument_case{"no_verb", {}, {"A subcommand is required", "rocm-perf --help"}},
        argument_case{
            "unknown_verb",
            {"nosuchverb"},
            {"'nosuchverb' is not a verb", "autotune, profile, analyze, compare, inspect, worker"}},
        argument_case{"misspelt_verb", {"profil", "x"}, {"did you mean 'profile'?"}},
        argument_case{"autotune_unknown_option",
                      {"autotune", "--bogus"},
                      {"not understood: --bogus", "rocm-perf autotune --help"}},
        argument_case{"autotune_missing_value", {"autotune", "--space"}, {"--space"}},
        argument_case{"autotune_bad_number",
                      {"autotune", "--space", "s.json", "--source", "k.cpp", "--runs", "many"},
                      {"--runs", "rocm-perf autotune --help"}},
        argument_case{"profile_unknown_option",
                      {"profile", "--bogus"},
                      {"--bogus", "rocm-perf profile --help"}},
        argument_case{"analyze_unknown_option",
                      {"analyze", "--bogus"},
                      {"--bogus", "rocm-perf analyze --help"}},
        argument_case{"inspect_unknown_option",
                      {"inspect", "--bogus"},
                      {"--bogus", "rocm-perf inspect --help"}},
        argument_case{"worker_without_kind", {"worker"}, {"rocm-perf worker --help"}},
        argument_case{"worker_unknown_kind",
                      {"worker", "compil"},
                      {"'compil' is not a verb", "did you mean 'compile'?"}},
        argument_case{"worker_compile_unknown_option",
                      {"worker", "compile", "--bogus"},
                      {"not understood: --bogus", "rocm-perf worker compile --help"}}),
    [](const auto& test) { return test.param.name; });

} // namespace
} // namespace rpl
