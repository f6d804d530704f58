#include "stages/search/expression.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>
#include <utility>

namespace rpl::stages {

expression_error::expression_error(std::size_t column, std::string message)
    : std::runtime_error("column " + std::to_string(column) + ": " + message), column_(column),
      message_(std::move(message)) {}

namespace {

enum class token_kind : std::uint8_t {
  integer,
  real,
  identifier,
  plus,
  minus,
  star,
  slash,
  percent,
  less,
  less_equal,
  greater,
  greater_equal,
  equal,
  not_equal,
  logical_and,
  logical_or,
  logical_not,
  open_paren,
  close_paren,
  end
};

struct token {
  token_kind kind = token_kind::end;
  std::string_view text;
  std::size_t column = 1;
  expression_number value = std::int64_t{0};
};

bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_identifier_char(char c) {
  return is_identifier_start(c) || is_digit(c);
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

const char* const operator_list =
    "numbers, parameter names, parentheses and the operators + - * / % < <= > >= == != and or not";

// Reads a numeric literal starting at `pos`: digits with an optional fraction and exponent, or a
// fraction alone (".5"). Integers must fit int64.
token read_number(std::string_view text, std::size_t& pos) {
  const std::size_t start = pos;
  bool is_real = false;
  while (pos < text.size() && is_digit(text[pos])) {
    ++pos;
  }
  if (pos < text.size() && text[pos] == '.') {
    is_real = true;
    ++pos;
    while (pos < text.size() && is_digit(text[pos])) {
      ++pos;
    }
  }
  if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
    is_real = true;
    std::size_t exponent = pos + 1;
    if (exponent < text.size() && (text[exponent] == '+' || text[exponent] == '-')) {
      ++exponent;
    }
    if (exponent >= text.size() || !is_digit(text[exponent])) {
      throw expression_error(pos + 1, "exponent of '" +
                                          std::string(text.substr(start, exponent - start)) +
                                          "' has no digits; fix: write digits after 'e', e.g. 1e6");
    }
    pos = exponent;
    while (pos < text.size() && is_digit(text[pos])) {
      ++pos;
    }
  }
  if (pos < text.size() && (is_identifier_start(text[pos]) || text[pos] == '.')) {
    throw expression_error(pos + 1, "unexpected '" + std::string(1, text[pos]) +
                                        "' right after the number '" +
                                        std::string(text.substr(start, pos - start)) +
                                        "'; fix: put an operator or a space between them");
  }
  token result;
  result.text = text.substr(start, pos - start);
  result.column = start + 1;
  const char* const first = text.data() + start;
  const char* const last = text.data() + pos;
  if (is_real) {
    double value = 0.0;
    const auto [end, error] = std::from_chars(first, last, value);
    if (error != std::errc{} || end != last || !std::isfinite(value)) {
      throw expression_error(start + 1, "the number '" + std::string(result.text) +
                                            "' is out of range; fix: use a smaller number");
    }
    result.kind = token_kind::real;
    result.value = value;
  } else {
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(first, last, value);
    if (error != std::errc{} || end != last) {
      throw expression_error(start + 1, "the integer '" + std::string(result.text) +
                                            "' does not fit 64 bits; fix: use a smaller number");
    }
    result.kind = token_kind::integer;
    result.value = value;
  }
  return result;
}

std::vector<token> tokenize(std::string_view text) {
  std::vector<token> tokens;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const char c = text[pos];
    if (is_space(c)) {
      ++pos;
      continue;
    }
    if (is_digit(c) || (c == '.' && pos + 1 < text.size() && is_digit(text[pos + 1]))) {
      tokens.push_back(read_number(text, pos));
      continue;
    }
    const std::size_t start = pos;
    if (is_identifier_start(c)) {
      while (pos < text.size() && is_identifier_char(text[pos])) {
        ++pos;
      }
      token word{token_kind::identifier, text.substr(start, pos - start), start + 1, {}};
      if (word.text == "and") {
        word.kind = token_kind::logical_and;
      } else if (word.text == "or") {
        word.kind = token_kind::logical_or;
      } else if (word.text == "not") {
        word.kind = token_kind::logical_not;
      }
      tokens.push_back(word);
      continue;
    }
    const char next = pos + 1 < text.size() ? text[pos + 1] : '\0';
    auto emit = [&](token_kind kind, std::size_t length) {
      tokens.push_back(token{kind, text.substr(start, length), start + 1, {}});
      pos += length;
    };
    switch (c) {
    case '+': emit(token_kind::plus, 1); break;
    case '-': emit(token_kind::minus, 1); break;
    case '*': emit(token_kind::star, 1); break;
    case '/': emit(token_kind::slash, 1); break;
    case '%': emit(token_kind::percent, 1); break;
    case '(': emit(token_kind::open_paren, 1); break;
    case ')': emit(token_kind::close_paren, 1); break;
    case '<': next == '=' ? emit(token_kind::less_equal, 2) : emit(token_kind::less, 1); break;
    case '>':
      next == '=' ? emit(token_kind::greater_equal, 2) : emit(token_kind::greater, 1);
      break;
    case '!':
      next == '=' ? emit(token_kind::not_equal, 2) : emit(token_kind::logical_not, 1);
      break;
    case '=':
      if (next != '=') {
        throw expression_error(start + 1, "'=' is not an operator; fix: write '==' to compare");
      }
      emit(token_kind::equal, 2);
      break;
    case '&':
      if (next != '&') {
        throw expression_error(start + 1, "'&' is not an operator; fix: write 'and' or '&&'");
      }
      emit(token_kind::logical_and, 2);
      break;
    case '|':
      if (next != '|') {
        throw expression_error(start + 1, "'|' is not an operator; fix: write 'or' or '||'");
      }
      emit(token_kind::logical_or, 2);
      break;
    default: {
      const auto byte = static_cast<unsigned char>(c);
      std::string shown = (byte >= 0x20 && byte < 0x7f) ? "'" + std::string(1, c) + "'"
                                                        : "byte " + std::to_string(byte);
      throw expression_error(start + 1,
                             "unexpected character " + shown + "; fix: use only " + operator_list);
    }
    }
  }
  tokens.push_back(token{token_kind::end, {}, text.size() + 1, {}});
  return tokens;
}

bool is_operator(token_kind kind) {
  return kind != token_kind::integer && kind != token_kind::real &&
         kind != token_kind::identifier && kind != token_kind::open_paren &&
         kind != token_kind::close_paren && kind != token_kind::end;
}

bool is_comparison(token_kind kind) {
  return kind == token_kind::less || kind == token_kind::less_equal ||
         kind == token_kind::greater || kind == token_kind::greater_equal ||
         kind == token_kind::equal || kind == token_kind::not_equal;
}

bool truthy(const expression_number& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) {
    return *integer != 0;
  }
  return std::get<double>(value) != 0.0;
}

double as_double(const expression_number& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) {
    return static_cast<double>(*integer);
  }
  return std::get<double>(value);
}

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

} // namespace

/// Recursive-descent parser that appends nodes to an expression; one instance per parse.
class expression_parser {
public:
  explicit expression_parser(std::string_view text) : tokens_(tokenize(text)) {
    result_.text_ = std::string(text);
  }

  expression run() {
    if (current().kind == token_kind::end) {
      throw expression_error(1,
                             "the expression is empty; fix: write a condition such as TILE <= 64");
    }
    result_.root_ = parse_or();
    const token& left = current();
    if (left.kind == token_kind::close_paren) {
      throw expression_error(left.column,
                             "unexpected ')' without a matching '('; fix: remove it or add '('");
    }
    if (left.kind != token_kind::end) {
      throw expression_error(left.column, "unexpected " + quoted(left.text) +
                                              " after a complete expression; fix: put an operator "
                                              "between the operands or remove " +
                                              quoted(left.text));
    }
    return std::move(result_);
  }

private:
  using node = expression::node;
  using node_kind = expression::node_kind;
  using binary_op = expression::binary_op;

  const token& current() const { return tokens_[position_]; }
  const token& advance() { return tokens_[position_++]; }

  /// Appends `value`, refusing a tree taller than max_expression_depth: evaluation recurses once
  /// per level, so a chain such as 1+1+...+1 of 100000 terms would overflow the stack there.
  std::size_t add(node value) {
    std::size_t height = 1;
    if (value.kind == node_kind::negate || value.kind == node_kind::logical_not) {
      height += heights_[value.lhs];
    } else if (value.kind == node_kind::binary) {
      height += std::max(heights_[value.lhs], heights_[value.rhs]);
    }
    if (height > max_expression_depth) {
      throw too_deep(value.column);
    }
    result_.nodes_.push_back(value);
    heights_.push_back(height);
    return result_.nodes_.size() - 1;
  }

  static expression_error too_deep(std::size_t column) {
    return expression_error(column, "the expression nests deeper than " +
                                        std::to_string(max_expression_depth) +
                                        " levels (parentheses, not, unary minus or a chain of "
                                        "operators); fix: split it into several constraints");
  }

  /// Runs `parse` one level deeper (after a '(', `not` or unary '-'), refusing more than
  /// max_expression_depth levels before the recursion can overflow the stack (found while fuzzing
  /// the space parser: a constraint of 10000 '(' crashed it).
  template <class Parse> std::size_t nested(std::size_t column, Parse&& parse) {
    if (++depth_ > max_expression_depth) {
      throw too_deep(column);
    }
    const std::size_t index = parse();
    --depth_;
    return index;
  }

  std::size_t add_binary(binary_op op, std::size_t lhs, std::size_t rhs, std::size_t column) {
    node value;
    value.kind = node_kind::binary;
    value.op = op;
    value.lhs = lhs;
    value.rhs = rhs;
    value.column = column;
    return add(value);
  }

  std::size_t parse_or() {
    std::size_t lhs = parse_and();
    while (current().kind == token_kind::logical_or) {
      const std::size_t column = advance().column;
      lhs = add_binary(binary_op::logical_or, lhs, parse_and(), column);
    }
    return lhs;
  }

  std::size_t parse_and() {
    std::size_t lhs = parse_not();
    while (current().kind == token_kind::logical_and) {
      const std::size_t column = advance().column;
      lhs = add_binary(binary_op::logical_and, lhs, parse_not(), column);
    }
    return lhs;
  }

  std::size_t parse_not() {
    if (current().kind == token_kind::logical_not) {
      const std::size_t column = advance().column;
      node value;
      value.kind = node_kind::logical_not;
      value.lhs = nested(column, [this] { return parse_not(); });
      value.column = column;
      return add(value);
    }
    return parse_comparison();
  }

  std::size_t parse_comparison() {
    const std::size_t lhs = parse_additive();
    if (!is_comparison(current().kind)) {
      return lhs;
    }
    const token& op = advance();
    const std::size_t rhs = parse_additive();
    if (is_comparison(current().kind)) {
      throw expression_error(current().column,
                             "comparisons do not chain; fix: write 'a < b and b < c' instead of "
                             "'a < b < c'");
    }
    binary_op kind = binary_op::less;
    switch (op.kind) {
    case token_kind::less: kind = binary_op::less; break;
    case token_kind::less_equal: kind = binary_op::less_equal; break;
    case token_kind::greater: kind = binary_op::greater; break;
    case token_kind::greater_equal: kind = binary_op::greater_equal; break;
    case token_kind::equal: kind = binary_op::equal; break;
    default: kind = binary_op::not_equal; break;
    }
    return add_binary(kind, lhs, rhs, op.column);
  }

  std::size_t parse_additive() {
    std::size_t lhs = parse_term();
    while (current().kind == token_kind::plus || current().kind == token_kind::minus) {
      const token& op = advance();
      const binary_op kind = op.kind == token_kind::plus ? binary_op::add : binary_op::subtract;
      lhs = add_binary(kind, lhs, parse_term(), op.column);
    }
    return lhs;
  }

  std::size_t parse_term() {
    std::size_t lhs = parse_unary();
    while (current().kind == token_kind::star || current().kind == token_kind::slash ||
           current().kind == token_kind::percent) {
      const token& op = advance();
      const binary_op kind = op.kind == token_kind::star    ? binary_op::multiply
                             : op.kind == token_kind::slash ? binary_op::divide
                                                            : binary_op::modulo;
      lhs = add_binary(kind, lhs, parse_unary(), op.column);
    }
    return lhs;
  }

  std::size_t parse_unary() {
    if (current().kind == token_kind::minus) {
      const std::size_t column = advance().column;
      node value;
      value.kind = node_kind::negate;
      value.lhs = nested(column, [this] { return parse_unary(); });
      value.column = column;
      return add(value);
    }
    return parse_primary();
  }

  std::size_t parse_primary() {
    const token& here = current();
    switch (here.kind) {
    case token_kind::integer:
    case token_kind::real: {
      advance();
      node value;
      value.kind = node_kind::literal;
      value.value = here.value;
      value.column = here.column;
      return add(value);
    }
    case token_kind::identifier: {
      advance();
      node value;
      value.kind = node_kind::variable;
      value.column = here.column;
      value.variable = variable_index(here.text, here.column);
      return add(value);
    }
    case token_kind::open_paren: {
      advance();
      const std::size_t inner = nested(here.column, [this] { return parse_or(); });
      if (current().kind == token_kind::close_paren) {
        advance();
        return inner;
      }
      if (current().kind == token_kind::end) {
        throw expression_error(here.column, "'(' is never closed; fix: add ')'");
      }
      throw expression_error(current().column,
                             "expected ')' to close '(' at column " + std::to_string(here.column) +
                                 " but found " + quoted(current().text) +
                                 "; fix: add ')' or an operator before " + quoted(current().text));
    }
    default: break;
    }
    // No operand where one is needed: explain relative to what came before.
    const token* previous = position_ > 0 ? &tokens_[position_ - 1] : nullptr;
    if (here.kind == token_kind::end) {
      // run() rejects empty input, so something precedes the end here.
      throw expression_error(previous->column, quoted(previous->text) +
                                                   " has no right operand; fix: write an operand "
                                                   "after " +
                                                   quoted(previous->text) + " or remove it");
    }
    if (here.kind == token_kind::close_paren && previous != nullptr &&
        previous->kind == token_kind::open_paren) {
      throw expression_error(here.column, "empty parentheses; fix: write an expression between "
                                          "'(' and ')'");
    }
    if (previous == nullptr) {
      throw expression_error(here.column, "unexpected " + quoted(here.text) +
                                              " at the start; fix: write an operand before " +
                                              quoted(here.text));
    }
    if (is_operator(previous->kind)) {
      throw expression_error(here.column, "unexpected " + quoted(here.text) +
                                              "; fix: write an operand between operators");
    }
    throw expression_error(here.column,
                           "unexpected " + quoted(here.text) + " after " + quoted(previous->text) +
                               "; fix: write an operand after " + quoted(previous->text));
  }

  std::size_t variable_index(std::string_view name, std::size_t column) {
    for (std::size_t i = 0; i < result_.variables_.size(); ++i) {
      if (result_.variables_[i] == name) {
        return i;
      }
    }
    result_.variables_.emplace_back(name);
    result_.variable_columns_.push_back(column);
    return result_.variables_.size() - 1;
  }

  std::vector<token> tokens_;
  std::size_t position_ = 0;
  std::size_t depth_ = 0;            ///< '(', not and unary '-' being parsed
  std::vector<std::size_t> heights_; ///< of each node's subtree, parallel to result_.nodes_
  expression result_;
};

expression expression::parse(std::string_view text) {
  return expression_parser(text).run();
}

double expression::evaluate(const expression_lookup& lookup) const {
  return as_double(evaluate_number(lookup));
}

expression_number expression::evaluate_number(const expression_lookup& lookup) const {
  return evaluate_node(root_, lookup);
}

bool expression::holds(const expression_lookup& lookup) const {
  return truthy(evaluate_number(lookup));
}

expression_number expression::evaluate_node(std::size_t index,
                                            const expression_lookup& lookup) const {
  const node& here = nodes_[index];
  switch (here.kind) {
  case node_kind::literal: return here.value;
  case node_kind::variable: {
    const std::string& name = variables_[here.variable];
    std::optional<expression_number> value = lookup(name);
    if (!value) {
      throw expression_error(here.column, "unknown variable '" + name +
                                              "'; fix: use a parameter of the space or correct the "
                                              "spelling");
    }
    return *value;
  }
  case node_kind::negate: {
    const expression_number operand = evaluate_node(here.lhs, lookup);
    if (const auto* integer = std::get_if<std::int64_t>(&operand)) {
      if (*integer == std::numeric_limits<std::int64_t>::min()) {
        throw expression_error(here.column,
                               "integer overflow in '-'; fix: use a float (e.g. 1.0 * x)");
      }
      return -*integer;
    }
    return -std::get<double>(operand);
  }
  case node_kind::logical_not: return std::int64_t{truthy(evaluate_node(here.lhs, lookup)) ? 0 : 1};
  case node_kind::binary: break;
  }

  if (here.op == binary_op::logical_and) {
    if (!truthy(evaluate_node(here.lhs, lookup))) {
      return std::int64_t{0};
    }
    return std::int64_t{truthy(evaluate_node(here.rhs, lookup)) ? 1 : 0};
  }
  if (here.op == binary_op::logical_or) {
    if (truthy(evaluate_node(here.lhs, lookup))) {
      return std::int64_t{1};
    }
    return std::int64_t{truthy(evaluate_node(here.rhs, lookup)) ? 1 : 0};
  }

  const expression_number lhs = evaluate_node(here.lhs, lookup);
  const expression_number rhs = evaluate_node(here.rhs, lookup);
  const auto* lhs_int = std::get_if<std::int64_t>(&lhs);
  const auto* rhs_int = std::get_if<std::int64_t>(&rhs);
  const bool both_int = lhs_int != nullptr && rhs_int != nullptr;
  const double a = as_double(lhs);
  const double b = as_double(rhs);
  auto overflow = [&](const char* op) {
    return expression_error(here.column,
                            std::string("integer overflow in '") + op +
                                "'; fix: use smaller values or a float (e.g. 1.0 * x)");
  };

  switch (here.op) {
  case binary_op::add:
    if (both_int) {
      std::int64_t sum = 0;
      if (__builtin_add_overflow(*lhs_int, *rhs_int, &sum))
        throw overflow("+");
      return sum;
    }
    return a + b;
  case binary_op::subtract:
    if (both_int) {
      std::int64_t difference = 0;
      if (__builtin_sub_overflow(*lhs_int, *rhs_int, &difference))
        throw overflow("-");
      return difference;
    }
    return a - b;
  case binary_op::multiply:
    if (both_int) {
      std::int64_t product = 0;
      if (__builtin_mul_overflow(*lhs_int, *rhs_int, &product))
        throw overflow("*");
      return product;
    }
    return a * b;
  case binary_op::divide:
    if (both_int) {
      if (*rhs_int == 0) {
        throw expression_error(here.column,
                               "division by zero; fix: guard it, e.g. 'B != 0 and A / B > 1'");
      }
      if (*lhs_int == std::numeric_limits<std::int64_t>::min() && *rhs_int == -1)
        throw overflow("/");
      return *lhs_int / *rhs_int; // C++ truncates toward zero, as documented
    }
    if (b == 0.0) {
      throw expression_error(here.column,
                             "division by zero; fix: guard it, e.g. 'B != 0 and A / B > 1'");
    }
    return a / b;
  case binary_op::modulo:
    if (!both_int) {
      throw expression_error(here.column,
                             "'%' needs two integers but got a float; fix: use integer "
                             "parameters or drop the '%'");
    }
    if (*rhs_int == 0) {
      throw expression_error(here.column,
                             "modulo by zero; fix: guard it, e.g. 'B != 0 and A % B == 0'");
    }
    if (*rhs_int == -1) {
      return std::int64_t{0}; // INT64_MIN % -1 is undefined behaviour in C++; the answer is 0
    }
    return *lhs_int % *rhs_int;
  case binary_op::less: return std::int64_t{both_int ? *lhs_int < *rhs_int : a < b};
  case binary_op::less_equal: return std::int64_t{both_int ? *lhs_int <= *rhs_int : a <= b};
  case binary_op::greater: return std::int64_t{both_int ? *lhs_int > *rhs_int : a > b};
  case binary_op::greater_equal: return std::int64_t{both_int ? *lhs_int >= *rhs_int : a >= b};
  case binary_op::equal: return std::int64_t{both_int ? *lhs_int == *rhs_int : a == b};
  case binary_op::not_equal: return std::int64_t{both_int ? *lhs_int != *rhs_int : a != b};
  case binary_op::logical_and:
  case binary_op::logical_or: break; // handled above, before evaluating both sides
  }
  return std::int64_t{0};
}

} // namespace rpl::stages
