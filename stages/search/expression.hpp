#pragma once
/// The constraint language of search spaces: arithmetic, comparisons and logic over parameters.
///
/// Grammar, lowest precedence first:
///   or_expr    := and_expr (("or" | "||") and_expr)*
///   and_expr   := not_expr (("and" | "&&") not_expr)*
///   not_expr   := ("not" | "!") not_expr | comparison
///   comparison := additive [("<" | "<=" | ">" | ">=" | "==" | "!=") additive]
///   additive   := term (("+" | "-") term)*
///   term       := unary (("*" | "/" | "%") unary)*
///   unary      := "-" unary | primary
///   primary    := integer | float | identifier | "(" or_expr ")"
///
/// Semantics:
///   - Two integer operands give exact int64 arithmetic; any float operand makes the operation
///   float.
///   - `/` on two integers is integer division truncating toward zero (7 / 2 == 3, -7 / 2 == -3),
///   as
///     in C++; write 7.0 / 2 for 3.5.
///   - `%` needs two integers; the result has the sign of the left operand (-7 % 2 == -1).
///   - Division or modulo by zero is an error, for floats too: a constraint that silently compares
///     against inf or NaN would cut configurations for no visible reason.
///   - Integer overflow is an error rather than undefined behaviour.
///   - Comparisons and logic give the integers 1 (true) and 0 (false); any non-zero value is true.
///   - `and` / `or` short-circuit, so `B != 0 and A / B > 2` is safe.
///   - Comparisons do not chain: `a < b < c` is rejected; write `a < b and b < c`.
///   - Nesting is limited to max_expression_depth levels, counting parentheses, `not`, unary `-`
///     and each operator of a chain (`a + b + c` is two levels), so that neither parsing nor
///     evaluation can exhaust the stack.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rpl::stages {

/// How deeply an expression may nest (see above); far beyond any real constraint.
inline constexpr std::size_t max_expression_depth = 256;

/// A parse or evaluation error; what() is "column N: problem; fix: ...".
class expression_error : public std::runtime_error {
public:
  /// `column` is 1-based within the expression text; `message` states the problem and the fix.
  expression_error(std::size_t column, std::string message);
  /// 1-based column in the expression text where the problem is.
  std::size_t column() const { return column_; }
  /// The message without the "column N: " prefix.
  const std::string& message() const { return message_; }

private:
  std::size_t column_;
  std::string message_;
};

/// A number an expression works on: int64 stays exact, double where a float is involved.
using expression_number = std::variant<std::int64_t, double>;

/// Resolves a variable name to its value; nullopt when the name is unknown.
using expression_lookup = std::function<std::optional<expression_number>(std::string_view)>;

/// A parsed constraint expression; immutable and cheap to evaluate many times.
class expression {
public:
  /// Parses `text`; throws expression_error with the column of the first problem.
  static expression parse(std::string_view text);

  /// The numeric value of the expression; throws expression_error for an unknown variable, division
  /// or modulo by zero, `%` on a float, or integer overflow.
  double evaluate(const expression_lookup& lookup) const;

  /// The exact value (int64 where everything was integer).
  expression_number evaluate_number(const expression_lookup& lookup) const;

  /// evaluate(lookup) != 0.
  bool holds(const expression_lookup& lookup) const;

  /// Identifiers the expression uses, in order of first use, each once.
  const std::vector<std::string>& variables() const { return variables_; }

  /// 1-based column of each variable's first use, parallel to variables().
  const std::vector<std::size_t>& variable_columns() const { return variable_columns_; }

  /// The text the expression was parsed from.
  const std::string& text() const { return text_; }

private:
  enum class node_kind : std::uint8_t { literal, variable, negate, logical_not, binary };
  enum class binary_op : std::uint8_t {
    add,
    subtract,
    multiply,
    divide,
    modulo,
    less,
    less_equal,
    greater,
    greater_equal,
    equal,
    not_equal,
    logical_and,
    logical_or
  };

  // Nodes live in one vector and refer to their children by index, so copying an expression is a
  // plain vector copy and there is no recursion in destruction.
  struct node {
    node_kind kind = node_kind::literal;
    binary_op op = binary_op::add;
    std::size_t lhs = 0; ///< operand of unary nodes, left operand of binary ones
    std::size_t rhs = 0;
    std::size_t variable = 0; ///< index into variables_
    expression_number value = std::int64_t{0};
    std::size_t column = 1;
  };

  friend class expression_parser;

  expression_number evaluate_node(std::size_t index, const expression_lookup& lookup) const;

  std::string text_;
  std::vector<node> nodes_;
  std::size_t root_ = 0;
  std::vector<std::string> variables_;
  std::vector<std::size_t> variable_columns_;
};

} // namespace rpl::stages
