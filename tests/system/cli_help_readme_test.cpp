// README and --help agree: every option a command's --help lists is documented in README.md.
#include <regex>

#include <gtest/gtest.h>

#include "support/test_support.hpp"

namespace rpl {
namespace {

class help_and_readme : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(help_and_readme, every_option_in_help_is_in_the_readme) {
  auto args = GetParam();
  args.push_back("--help");
  const auto out = rpl::testing::run_rocm_perf(args);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto readme = rpl::testing::read_text(rpl::testing::source_dir / "README.md");
  const std::regex option(R"(\n\s+(--[a-z0-9][a-z0-9-]*))");
  int options = 0;
  for (std::sregex_iterator it(out.output.begin(), out.output.end(), option), end; it != end;
       ++it) {
    const std::string name = (*it)[1];
    if (name == "--help")
      continue;
    ++options;
    EXPECT_NE(readme.find(name), std::string::npos) << name << " (rocm-perf " << args[0] << ")";
  }
  EXPECT_GT(options, 0) << out.output;
}

INSTANTIATE_TEST_SUITE_P(commands,
                         help_and_readme,
                         ::testing::Values(std::vector<std::string>{"autotune"},
                                           std::vector<std::string>{"worker", "compile"},
                                           std::vector<std::string>{"workers", "slurm"},
                                           std::vector<std::string>{"export"},
                                           std::vector<std::string>{"profile"},
                                           std::vector<std::string>{"analyze"},
                                           std::vector<std::string>{"compare"},
                                           std::vector<std::string>{"optimize"},
                                           std::vector<std::string>{"worker", "propose"}));

} // namespace
} // namespace rpl
