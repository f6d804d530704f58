// scripts/function-size (`make function-size`, .ci/run): the house rule "no function over 150
// lines outside tests" holds only while the check can fail. Here it fails on a function one line
// over, passes one exactly at the limit, names bad input, and passes the tree itself.
#include <string>

#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "workers/process/child_process.hpp"

namespace rpl::testing {
namespace {

workers::child_outcome function_size(const std::vector<std::string>& args) {
  workers::child_options options;
  options.argv = {(source_dir / "scripts" / "function-size").string()};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  return workers::run_child(options, std::chrono::minutes(1));
}

/// A function whose definition spans `lines` lines, from its name to its closing brace.
std::string function_of(const std::string& name, int lines) {
  std::string text = "int " + name + "(int x) {\n";
  for (int i = 0; i < lines - 3; ++i) {
    text += "  x += " + std::to_string(i) + ";\n";
  }
  return text + "  return x;\n}\n";
}

TEST(function_size_check, fails_naming_a_function_one_line_over_and_passes_one_at_the_limit) {
  temp_dir dir;
  std::filesystem::create_directories(dir / "engine");
  write_file(dir / "engine" / "long.cpp",
             "namespace rpl {\n" + function_of("at_limit", 150) + function_of("over", 151) + "}\n");
  write_file(dir / "engine" / "kernel.cu", function_of("device_long", 160));

  const auto failed = function_size({(dir / "engine").string()});
  ASSERT_TRUE(failed.launched) << failed.launch_error;
  EXPECT_EQ(failed.exit_code, 1) << failed.output;
  EXPECT_NE(failed.output.find("rpl::over is 151 lines (over 150)"), std::string::npos)
      << failed.output;
  EXPECT_NE(failed.output.find("device_long is 160 lines"), std::string::npos) << failed.output;
  EXPECT_EQ(failed.output.find("at_limit"), std::string::npos) << failed.output;

  const auto raised = function_size({"--limit", "160", (dir / "engine").string()});
  EXPECT_EQ(raised.exit_code, 0) << raised.output;
  EXPECT_NE(raised.output.find("none of 3 functions is over 160 lines"), std::string::npos)
      << raised.output;
}

TEST(function_size_check, bad_input_is_exit_2_with_a_fix) {
  const auto missing = function_size({"/nonexistent/rpl-folder"});
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("does not exist; fix:"), std::string::npos) << missing.output;
  const auto limit = function_size({"--limit", "many"});
  EXPECT_EQ(limit.exit_code, 2) << limit.output;
  const auto option = function_size({"--lines"});
  EXPECT_EQ(option.exit_code, 2) << option.output;
}

TEST(function_size_check, no_function_of_the_tree_is_over_150_lines) {
  const auto tree = function_size({});
  EXPECT_EQ(tree.exit_code, 0) << tree.output;
}

} // namespace
} // namespace rpl::testing
