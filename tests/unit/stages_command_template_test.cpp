#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/search/command_template.hpp"

namespace rpl::stages {
namespace {

using argv = std::vector<std::string>;

argv split(std::string_view text, const std::map<std::string, std::string>& values = {}) {
  return command_template::parse(text, "--build-template").expand(values);
}

std::string parse_error(std::string_view text) {
  try {
    command_template::parse(text, "--build-template");
  } catch (const template_error& error) {
    return error.what();
  }
  return "";
}

TEST(stages_command_template, whitespace_separates_words) {
  EXPECT_EQ(split("hipcc  -O3\tkernel.hip\n-o out"),
            (argv{"hipcc", "-O3", "kernel.hip", "-o", "out"}));
  EXPECT_EQ(split("  leading and trailing  "), (argv{"leading", "and", "trailing"}));
}

TEST(stages_command_template, single_quotes_keep_everything_literally) {
  EXPECT_EQ(split(R"(echo 'a b  c' 'x\"y' '$HOME')"), (argv{"echo", "a b  c", R"(x\"y)", "$HOME"}));
}

TEST(stages_command_template, double_quotes_unescape_only_quote_and_backslash) {
  EXPECT_EQ(split(R"(echo "a \"b\" c" "back\\slash" "keep\n")"),
            (argv{"echo", R"(a "b" c)", R"(back\slash)", R"(keep\n)"}));
}

TEST(stages_command_template, backslash_outside_quotes_escapes_the_next_character) {
  EXPECT_EQ(split(R"(echo a\ b \' \")"), (argv{"echo", "a b", "'", "\""}));
}

TEST(stages_command_template, quoted_parts_join_with_adjacent_text_into_one_word) {
  EXPECT_EQ(split(R"(-D'A B'"C D"e)"), (argv{"-DA BC De"}));
}

TEST(stages_command_template, empty_quotes_are_kept_as_an_empty_argument) {
  EXPECT_EQ(split(R"(prog '' "" x)"), (argv{"prog", "", "", "x"}));
}

TEST(stages_command_template, shell_metacharacters_are_ordinary_characters) {
  EXPECT_EQ(split("prog a|b >out $X *"), (argv{"prog", "a|b", ">out", "$X", "*"}));
}

TEST(stages_command_template, placeholders_expand_anywhere_in_a_word) {
  const command_template parsed =
      command_template::parse("hipcc -DTILE={TILE} -o {OUT} x{A}y{B}z", "--build-template");
  EXPECT_EQ(parsed.placeholders(), (std::set<std::string>{"A", "B", "OUT", "TILE"}));
  EXPECT_EQ(parsed.expand({{"TILE", "16"}, {"OUT", "/tmp/a.out"}, {"A", "1"}, {"B", "2"}}),
            (argv{"hipcc", "-DTILE=16", "-o", "/tmp/a.out", "x1y2z"}));
  EXPECT_EQ(parsed.text(), "hipcc -DTILE={TILE} -o {OUT} x{A}y{B}z");
}

TEST(stages_command_template, placeholders_expand_inside_quotes) {
  EXPECT_EQ(split(R"(run "--size {N}" '{N}')", {{"N", "4"}}), (argv{"run", "--size 4", "4"}));
}

TEST(stages_command_template, expanded_values_are_never_re_split) {
  EXPECT_EQ(split("run {ARGS}", {{"ARGS", "a b"}}), (argv{"run", "a b"}));
  EXPECT_EQ(split("run {EMPTY}", {{"EMPTY", ""}}), (argv{"run", ""}));
}

TEST(stages_command_template, doubled_braces_are_literal) {
  EXPECT_EQ(split("echo {{TILE}} }}x{{"), (argv{"echo", "{TILE}", "}x{"}));
  EXPECT_TRUE(command_template::parse("echo {{TILE}}", "t").placeholders().empty());
}

TEST(stages_command_template, escaped_brace_is_literal) {
  EXPECT_EQ(split(R"(echo \{)"), (argv{"echo", "{"}));
}

TEST(stages_command_template, unterminated_single_quote_is_an_error_with_column) {
  EXPECT_EQ(parse_error("echo 'abc"),
            "--build-template: unterminated single quote at column 6; fix: close it with a "
            "matching '");
}

TEST(stages_command_template, unterminated_double_quote_is_an_error_with_column) {
  const std::string message = parse_error(R"(echo "a\")");
  EXPECT_NE(message.find("--build-template: unterminated double quote at column 6"),
            std::string::npos);
  EXPECT_NE(message.find("fix:"), std::string::npos);
}

TEST(stages_command_template, lone_brace_is_an_error_with_column) {
  EXPECT_NE(parse_error("echo {TILE").find("'{' at column 6 does not start a placeholder"),
            std::string::npos);
  EXPECT_NE(parse_error("echo {}").find("column 6"), std::string::npos);
  EXPECT_NE(parse_error("echo {1X}").find("column 6"), std::string::npos);
  EXPECT_NE(parse_error("echo {A-B}").find("column 6"), std::string::npos);
  EXPECT_NE(parse_error("echo a}b").find("lone '}' at column 7"), std::string::npos);
  EXPECT_NE(parse_error("echo {TILE").find("fix: "), std::string::npos);
}

TEST(stages_command_template, trailing_backslash_is_an_error) {
  EXPECT_NE(parse_error("echo a\\").find("trailing backslash at column 7"), std::string::npos);
}

TEST(stages_command_template, empty_template_is_an_error) {
  EXPECT_NE(parse_error("").find("--build-template: the template is empty; fix: "),
            std::string::npos);
  EXPECT_NE(parse_error("   \t").find("empty"), std::string::npos);
}

TEST(stages_command_template, check_names_the_unknown_placeholder_its_column_and_the_known_ones) {
  const command_template parsed =
      command_template::parse("hipcc -O3 -o {OUT} -DT={TILEX} k.hip", "--build-template");
  try {
    parsed.check({"OUT", "TILE", "UNROLL"});
    FAIL() << "expected template_error";
  } catch (const template_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("--build-template: unknown placeholder {TILEX} at column 24; known: "
                           "{OUT}, {TILE}, {UNROLL}; fix: "),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("did you mean {TILE}"), std::string::npos) << message;
  }
  EXPECT_NO_THROW(parsed.check({"OUT", "TILEX"}));
}

TEST(stages_command_template, expand_without_a_value_names_the_placeholder) {
  const command_template parsed = command_template::parse("run {N}", "--run-template");
  try {
    parsed.expand({});
    FAIL() << "expected template_error";
  } catch (const template_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("--run-template: placeholder {N} at column 5 has no value; fix: "),
              std::string::npos)
        << message;
  }
}

} // namespace
} // namespace rpl::stages
