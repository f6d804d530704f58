#include <cstdint>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "stages/search/expression.hpp"

namespace rpl::stages {
namespace {

using value_table = std::map<std::string, expression_number, std::less<>>;

expression_lookup lookup_in(const value_table& table) {
  return [&table](std::string_view name) -> std::optional<expression_number> {
    const auto found = table.find(name);
    if (found == table.end()) {
      return std::nullopt;
    }
    return found->second;
  };
}

expression_number eval(std::string_view text, const value_table& table = {}) {
  return expression::parse(text).evaluate_number(lookup_in(table));
}

std::int64_t eval_int(std::string_view text, const value_table& table = {}) {
  const expression_number result = eval(text, table);
  EXPECT_TRUE(std::holds_alternative<std::int64_t>(result)) << text;
  return std::holds_alternative<std::int64_t>(result) ? std::get<std::int64_t>(result) : -999;
}

// The column the parser reports for `text`, or 0 when it parses.
std::size_t parse_error_column(std::string_view text) {
  try {
    expression::parse(text);
  } catch (const expression_error& error) {
    return error.column();
  }
  return 0;
}

std::string parse_error_message(std::string_view text) {
  try {
    expression::parse(text);
  } catch (const expression_error& error) {
    return error.what();
  }
  return "";
}

TEST(stages_expression, multiplication_binds_tighter_than_addition) {
  EXPECT_EQ(eval_int("2 + 3 * 4"), 14);
  EXPECT_EQ(eval_int("(2 + 3) * 4"), 20);
  EXPECT_EQ(eval_int("10 - 4 - 3"), 3); // left-associative
  EXPECT_EQ(eval_int("100 / 10 / 5"), 2);
}

TEST(stages_expression, unary_minus_binds_tighter_than_multiplication) {
  EXPECT_EQ(eval_int("-2 * 3"), -6);
  EXPECT_EQ(eval_int("- -4"), 4);
  EXPECT_EQ(eval_int("2 - -3"), 5);
}

TEST(stages_expression, comparison_binds_looser_than_arithmetic) {
  EXPECT_EQ(eval_int("1 + 1 == 2"), 1);
  EXPECT_EQ(eval_int("2 * 3 < 5"), 0);
}

TEST(stages_expression, not_binds_looser_than_comparison) {
  EXPECT_EQ(eval_int("not 1 > 2"), 1); // not (1 > 2)
  EXPECT_EQ(eval_int("!0"), 1);
  EXPECT_EQ(eval_int("not not 5"), 1);
}

TEST(stages_expression, and_binds_tighter_than_or) {
  EXPECT_EQ(eval_int("1 or 0 and 0"), 1); // 1 or (0 and 0)
  EXPECT_EQ(eval_int("(1 or 0) and 0"), 0);
  EXPECT_EQ(eval_int("0 || 1 && 1"), 1);
}

TEST(stages_expression, logic_yields_zero_or_one) {
  EXPECT_EQ(eval_int("7 and 3"), 1);
  EXPECT_EQ(eval_int("0 or 9"), 1);
  EXPECT_EQ(eval_int("0 or 0"), 0);
  EXPECT_EQ(eval_int("1 && 0"), 0);
}

TEST(stages_expression, every_comparison_operator_works) {
  EXPECT_EQ(eval_int("1 < 2"), 1);
  EXPECT_EQ(eval_int("2 <= 2"), 1);
  EXPECT_EQ(eval_int("3 > 2"), 1);
  EXPECT_EQ(eval_int("2 >= 3"), 0);
  EXPECT_EQ(eval_int("2 == 2"), 1);
  EXPECT_EQ(eval_int("2 != 2"), 0);
  EXPECT_EQ(eval_int("1.5 < 2"), 1);
}

TEST(stages_expression, integer_division_truncates_toward_zero) {
  EXPECT_EQ(eval_int("7 / 2"), 3);
  EXPECT_EQ(eval_int("-7 / 2"), -3);
  EXPECT_EQ(eval_int("7 / -2"), -3);
}

TEST(stages_expression, any_float_operand_makes_float_arithmetic) {
  const expression_number result = eval("7.0 / 2");
  ASSERT_TRUE(std::holds_alternative<double>(result));
  EXPECT_DOUBLE_EQ(std::get<double>(result), 3.5);
  EXPECT_DOUBLE_EQ(std::get<double>(eval("1 + 0.5")), 1.5);
  EXPECT_DOUBLE_EQ(std::get<double>(eval("X / 4", {{"X", 2.0}})), 0.5);
  EXPECT_DOUBLE_EQ(std::get<double>(eval("1e3")), 1000.0);
  EXPECT_DOUBLE_EQ(std::get<double>(eval(".25")), 0.25);
}

TEST(stages_expression, integers_stay_exact_beyond_double_precision) {
  EXPECT_EQ(eval_int("9007199254740993 + 0"), 9007199254740993);
  EXPECT_EQ(eval_int("9007199254740993 == 9007199254740992"), 0);
}

TEST(stages_expression, modulo_follows_the_sign_of_the_left_operand) {
  EXPECT_EQ(eval_int("17 % 5"), 2);
  EXPECT_EQ(eval_int("-7 % 2"), -1);
  EXPECT_EQ(eval_int("TILE % 8 == 0", {{"TILE", std::int64_t{64}}}), 1);
}

TEST(stages_expression, modulo_on_a_float_is_an_error) {
  EXPECT_THROW(eval("7.5 % 2"), expression_error);
}

TEST(stages_expression, variables_are_looked_up_and_listed_in_order_of_first_use) {
  const expression parsed = expression::parse("TILE_I * TILE_J <= 4096 and TILE_I >= UNROLL");
  EXPECT_EQ(parsed.variables(), (std::vector<std::string>{"TILE_I", "TILE_J", "UNROLL"}));
  EXPECT_EQ(parsed.variable_columns(), (std::vector<std::size_t>{1, 10, 39}));
  const value_table table{
      {"TILE_I", std::int64_t{64}}, {"TILE_J", std::int64_t{64}}, {"UNROLL", std::int64_t{4}}};
  EXPECT_TRUE(parsed.holds(lookup_in(table)));
  const value_table too_big{
      {"TILE_I", std::int64_t{128}}, {"TILE_J", std::int64_t{64}}, {"UNROLL", std::int64_t{4}}};
  EXPECT_FALSE(parsed.holds(lookup_in(too_big)));
  EXPECT_DOUBLE_EQ(expression::parse("A * 2").evaluate(lookup_in({{"A", std::int64_t{21}}})), 42.0);
}

TEST(stages_expression, unknown_variable_is_reported_with_its_column) {
  const expression parsed = expression::parse("TILE + MISSING > 3");
  try {
    parsed.evaluate(lookup_in({{"TILE", std::int64_t{1}}}));
    FAIL() << "expected an error";
  } catch (const expression_error& error) {
    EXPECT_EQ(error.column(), 8u);
    EXPECT_NE(std::string(error.what()).find("unknown variable 'MISSING'"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("fix:"), std::string::npos);
  }
}

TEST(stages_expression, integer_division_and_modulo_by_zero_are_errors_at_the_operator) {
  for (const char* text : {"4 / (2 - 2)", "4 % (2 - 2)"}) {
    try {
      eval(text);
      FAIL() << text;
    } catch (const expression_error& error) {
      EXPECT_EQ(error.column(), 3u) << text;
      EXPECT_NE(std::string(error.what()).find("by zero"), std::string::npos);
    }
  }
}

TEST(stages_expression, float_division_by_zero_is_an_error_too) {
  EXPECT_THROW(eval("1.0 / 0"), expression_error);
}

TEST(stages_expression, and_short_circuits_so_guards_prevent_division_by_zero) {
  EXPECT_EQ(eval_int("B != 0 and A / B > 1", {{"A", std::int64_t{4}}, {"B", std::int64_t{0}}}), 0);
  EXPECT_EQ(eval_int("B == 0 or A / B > 1", {{"A", std::int64_t{4}}, {"B", std::int64_t{0}}}), 1);
}

TEST(stages_expression, integer_overflow_is_an_error) {
  EXPECT_THROW(eval("9223372036854775807 + 1"), expression_error);
  EXPECT_THROW(eval("4611686018427387904 * 2"), expression_error);
}

TEST(stages_expression, rejects_two_operators_in_a_row_with_column) {
  EXPECT_EQ(parse_error_column("TILE * * 2"), 8u);
  EXPECT_EQ(parse_error_message("TILE * * 2"),
            "column 8: unexpected '*'; fix: write an operand between operators");
}

TEST(stages_expression, rejects_a_trailing_operator_at_the_operator) {
  EXPECT_EQ(parse_error_column("TILE <= "), 6u);
  EXPECT_NE(parse_error_message("TILE <= ").find("'<=' has no right operand"), std::string::npos);
  EXPECT_EQ(parse_error_column("1 and"), 3u);
}

TEST(stages_expression, rejects_an_unclosed_parenthesis_at_the_opening_one) {
  EXPECT_EQ(parse_error_column("(1 + (2 * 3)"), 1u);
  EXPECT_NE(parse_error_message("(1 + 2").find("never closed"), std::string::npos);
}

TEST(stages_expression, rejects_a_stray_closing_parenthesis) {
  EXPECT_EQ(parse_error_column("1 + 2)"), 6u);
  EXPECT_EQ(parse_error_column("()"), 2u);
}

TEST(stages_expression, rejects_an_unknown_character_with_column) {
  EXPECT_EQ(parse_error_column("TILE $ 2"), 6u);
  EXPECT_NE(parse_error_message("TILE $ 2").find("unexpected character '$'"), std::string::npos);
  EXPECT_EQ(parse_error_column("A = 2"), 3u);
  EXPECT_NE(parse_error_message("A = 2").find("'=='"), std::string::npos);
  EXPECT_EQ(parse_error_column("A & B"), 3u);
}

TEST(stages_expression, rejects_an_empty_expression) {
  EXPECT_EQ(parse_error_column(""), 1u);
  EXPECT_EQ(parse_error_column("   "), 1u);
  EXPECT_NE(parse_error_message("").find("empty"), std::string::npos);
}

TEST(stages_expression, rejects_operands_without_an_operator_between_them) {
  EXPECT_EQ(parse_error_column("TILE 8"), 6u);
  EXPECT_EQ(parse_error_column("2x"), 2u);
}

TEST(stages_expression, rejects_a_leading_binary_operator) {
  EXPECT_EQ(parse_error_column("* 2"), 1u);
  EXPECT_EQ(parse_error_column("and 1"), 1u);
}

TEST(stages_expression, rejects_chained_comparisons) {
  EXPECT_EQ(parse_error_column("1 < 2 < 3"), 7u);
}

TEST(stages_expression, rejects_integer_literals_that_do_not_fit_64_bits) {
  EXPECT_EQ(parse_error_column("1 + 99999999999999999999"), 5u);
}

TEST(stages_expression, every_error_message_carries_a_fix) {
  for (const char* text : {"", "(", ")", "1 +", "1 2", "a $", "a = b", "1 < 2 < 3", "1e"}) {
    EXPECT_NE(parse_error_message(text).find("; fix: "), std::string::npos) << text;
  }
}

} // namespace
} // namespace rpl::stages
