#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/search/space.hpp"

namespace rpl::stages {
namespace {

// The message of the space_error that parsing `json` raises, or "" when it parses.
std::string error_of(std::string_view json) {
  try {
    parse_space(json, "space.json");
  } catch (const space_error& error) {
    return error.what();
  }
  return "";
}

// Every space_error names the file first and ends with a fix.
void expect_error(std::string_view json, std::string_view expected_part) {
  const std::string message = error_of(json);
  ASSERT_FALSE(message.empty()) << "no error for: " << json;
  EXPECT_EQ(message.rfind("space.json: ", 0), 0u) << message;
  EXPECT_NE(message.find("fix: "), std::string::npos) << message;
  EXPECT_NE(message.find(expected_part), std::string::npos)
      << "message: " << message << "\nexpected part: " << expected_part;
}

std::vector<std::string> rows(const space& parsed) {
  std::vector<std::string> texts;
  for (const configuration& config : parsed.configurations) {
    std::string text;
    for (const auto& [name, value] : config.params) {
      text += (text.empty() ? "" : " ") + name + "=" + to_string(value);
    }
    texts.push_back(text);
  }
  return texts;
}

TEST(stages_space, explicit_list_keeps_the_order_and_key_order_written) {
  const space parsed = parse_space(
      R"([{"UNROLL": 2, "TILE": 16, "KIND": "fast"}, {"TILE": 8, "KIND": "slow", "UNROLL": 1.5}])",
      "space.json");
  EXPECT_EQ(parsed.origin, "space.json");
  EXPECT_EQ(parsed.names, (std::vector<std::string>{"UNROLL", "TILE", "KIND"}));
  EXPECT_EQ(rows(parsed), (std::vector<std::string>{"UNROLL=2 TILE=16 KIND=fast",
                                                    "UNROLL=1.5 TILE=8 KIND=slow"}));
  EXPECT_EQ(parsed.total, 2u);
  EXPECT_EQ(parsed.cut_by_constraints, 0u);
  ASSERT_NE(parsed.configurations[0].find("TILE"), nullptr);
  EXPECT_EQ(std::get<std::int64_t>(*parsed.configurations[0].find("TILE")), 16);
  EXPECT_EQ(parsed.configurations[0].find("MISSING"), nullptr);
}

TEST(stages_space, product_varies_the_first_parameter_slowest) {
  const space parsed =
      parse_space(R"({"params": {"TILE": [8, 16], "UNROLL": [1, 2, 4]}})", "space.json");
  EXPECT_EQ(parsed.names, (std::vector<std::string>{"TILE", "UNROLL"}));
  EXPECT_EQ(rows(parsed),
            (std::vector<std::string>{"TILE=8 UNROLL=1", "TILE=8 UNROLL=2", "TILE=8 UNROLL=4",
                                      "TILE=16 UNROLL=1", "TILE=16 UNROLL=2", "TILE=16 UNROLL=4"}));
  EXPECT_EQ(parsed.total, 6u);
  EXPECT_EQ(parsed.cut_by_constraints, 0u);
  EXPECT_TRUE(parsed.constraints.empty());
}

TEST(stages_space, product_keeps_parameter_order_as_written_not_sorted) {
  const space parsed = parse_space(R"({"params": {"Z": [1], "A": [2]}})", "space.json");
  EXPECT_EQ(parsed.names, (std::vector<std::string>{"Z", "A"}));
}

TEST(stages_space, constraints_filter_and_are_counted) {
  const space parsed = parse_space(R"({
    "params": {"TILE_I": [16, 32, 64, 128], "TILE_J": [16, 32, 64, 128], "KIND": ["a", "b"]},
    "constraints": ["TILE_I * TILE_J <= 4096", "TILE_I >= TILE_J"]
  })",
                                   "space.json");
  // 10 of the 16 (TILE_I, TILE_J) pairs have TILE_I >= TILE_J; the product limit then drops
  // (128, 64) and (128, 128), leaving 8 pairs, times 2 kinds.
  EXPECT_EQ(parsed.total, 32u);
  EXPECT_EQ(parsed.configurations.size(), 16u);
  EXPECT_EQ(parsed.cut_by_constraints, 16u);
  EXPECT_EQ(parsed.constraints,
            (std::vector<std::string>{"TILE_I * TILE_J <= 4096", "TILE_I >= TILE_J"}));
  EXPECT_EQ(rows(parsed).front(), "TILE_I=16 TILE_J=16 KIND=a");
  EXPECT_EQ(rows(parsed).back(), "TILE_I=128 TILE_J=32 KIND=b");
}

TEST(stages_space, constraints_see_floats_and_mix_them_with_integers) {
  const space parsed = parse_space(
      R"({"params": {"SCALE": [0.5, 1.5, 2.5], "N": [1, 2]}, "constraints": ["SCALE * N < 3"]})",
      "space.json");
  EXPECT_EQ(rows(parsed), (std::vector<std::string>{"SCALE=0.5 N=1", "SCALE=0.5 N=2",
                                                    "SCALE=1.5 N=1", "SCALE=2.5 N=1"}));
}

TEST(stages_space, string_parameters_are_allowed_when_no_constraint_uses_them) {
  const space parsed = parse_space(
      R"({"params": {"KIND": ["x", "y"], "N": [1, 2]}, "constraints": ["N > 1"]})", "space.json");
  EXPECT_EQ(rows(parsed), (std::vector<std::string>{"KIND=x N=2", "KIND=y N=2"}));
}

TEST(stages_space, reports_json_syntax_errors_by_line_and_column) {
  const std::string message = error_of("{\n  \"params\": {\"TILE\": [8, 16,]}\n}");
  EXPECT_EQ(message.rfind("space.json: line 2, column 29: invalid JSON", 0), 0u) << message;
  EXPECT_NE(message.find("fix: "), std::string::npos);
}

TEST(stages_space, rejects_a_top_level_that_is_neither_array_nor_object) {
  expect_error("42", "the top level is a number");
  expect_error("\"x\"", "the top level is a string");
}

TEST(stages_space, rejects_unknown_top_level_keys) {
  expect_error(R"({"params": {"A": [1]}, "constraint": []})",
               "unknown top-level key \"constraint\"; known keys: \"params\", \"constraints\"");
}

TEST(stages_space, rejects_missing_wrong_or_empty_params) {
  expect_error(R"({"constraints": []})", "\"params\" is missing");
  expect_error(R"({"params": [1, 2]})", "\"params\" is an array, expected an object");
  expect_error(R"({"params": {}})", "\"params\" is empty");
}

TEST(stages_space, rejects_parameter_values_that_are_not_a_non_empty_array) {
  expect_error(R"({"params": {"TILE": 8}})", "params.TILE: the values are a number");
  expect_error(R"({"params": {"TILE": []}})", "params.TILE: the values are an empty array");
}

TEST(stages_space, rejects_values_of_other_types_naming_parameter_and_index) {
  expect_error(R"({"params": {"TILE": [8, true]}})", "params.TILE[1]: the value is a boolean");
  expect_error(R"({"params": {"TILE": [null]}})", "params.TILE[0]: the value is null");
  expect_error(R"({"params": {"TILE": [[1]]}})", "params.TILE[0]: the value is an array");
  expect_error(R"({"params": {"TILE": [{}]}})", "params.TILE[0]: the value is an object");
  expect_error(R"({"params": {"TILE": [18446744073709551615]}})", "does not fit");
  expect_error(R"([{"TILE": false}])", "[0].TILE: the value is a boolean");
}

TEST(stages_space, rejects_duplicate_values) {
  expect_error(R"({"params": {"TILE": [8, 16, 8]}})",
               "params.TILE[2]: the value 8 repeats params.TILE[0]");
  expect_error(R"({"params": {"TILE": [8, "8"]}})", "params.TILE[1]");
}

TEST(stages_space, rejects_duplicate_keys) {
  expect_error(R"({"params": {"TILE": [8], "TILE": [16]}})", "the key \"TILE\" appears twice");
}

TEST(stages_space, rejects_invalid_and_reserved_parameter_names) {
  expect_error(R"({"params": {"1TILE": [8]}})", "parameter name \"1TILE\" is not a valid name");
  expect_error(R"({"params": {"TI-LE": [8]}})", "is not a valid name");
  expect_error(R"({"params": {"OUT": [8]}})", "\"OUT\" is reserved for the placeholder {OUT}");
  expect_error(R"([{"BIN": 1}])", "\"BIN\" is reserved");
  expect_error(R"({"params": {"and": [8]}})", "operator of the constraint language");
}

TEST(stages_space, rejects_constraints_that_are_not_strings) {
  expect_error(R"({"params": {"A": [1]}, "constraints": "A > 0"})",
               "\"constraints\" is a string, expected an array of strings");
  expect_error(R"({"params": {"A": [1]}, "constraints": ["A > 0", 5]})",
               "constraints[1]: the constraint is a number, expected a string");
}

TEST(stages_space, reports_constraint_syntax_errors_with_index_text_and_column) {
  EXPECT_EQ(error_of(R"({"params": {"TILE": [1]}, "constraints": ["TILE > 0", "TILE * * 2"]})"),
            "space.json: constraints[1] \"TILE * * 2\": column 8: unexpected '*'; fix: write an "
            "operand between operators");
}

TEST(stages_space, rejects_constraints_naming_unknown_parameters_and_lists_the_known) {
  expect_error(R"({"params": {"TILE": [1], "UNROLL": [2]}, "constraints": ["TILE * UNROL < 9"]})",
               "constraints[0] \"TILE * UNROL < 9\": column 8: unknown parameter 'UNROL'; known: "
               "TILE, UNROLL");
}

TEST(stages_space, rejects_constraints_on_string_parameters) {
  expect_error(R"({"params": {"KIND": [1, "fast"]}, "constraints": ["KIND > 0"]})",
               "parameter 'KIND' has the string value \"fast\"");
}

TEST(stages_space, reports_evaluation_errors_with_the_configuration) {
  expect_error(R"({"params": {"A": [4], "B": [1, 0]}, "constraints": ["A / B > 1"]})",
               "constraints[0] \"A / B > 1\": column 3: division by zero");
  EXPECT_NE(error_of(R"({"params": {"A": [4], "B": [1, 0]}, "constraints": ["A / B > 1"]})")
                .find("(at A=4, B=0)"),
            std::string::npos);
}

TEST(stages_space, rejects_a_space_emptied_by_constraints) {
  expect_error(R"({"params": {"A": [1, 2], "B": [3]}, "constraints": ["A > 5", "B > 1"]})",
               "all 2 configurations were cut by constraints (constraints[0] rejects 2, "
               "constraints[1] rejects 0); fix: relax");
}

TEST(stages_space, rejects_more_than_a_million_configurations_before_constraints) {
  std::string values = "[";
  for (int i = 0; i < 101; ++i) {
    values += (i == 0 ? "" : ",") + std::to_string(i);
  }
  values += "]";
  const std::string json =
      R"({"params": {"A": )" + values + R"(, "B": )" + values + R"(, "C": )" + values + "}}";
  expect_error(json, "more than 1000000 configurations before constraints (A 101 x B 101 x C 101)");
}

TEST(stages_space, exactly_a_million_configurations_are_allowed) {
  std::string values = "[";
  for (int i = 0; i < 100; ++i) {
    values += (i == 0 ? "" : ",") + std::to_string(i);
  }
  values += "]";
  const std::string json = R"({"params": {"A": )" + values + R"(, "B": )" + values + R"(, "C": )" +
                           values + R"(}, "constraints": ["A == 0 and B == 0"]})";
  const space parsed = parse_space(json, "space.json");
  EXPECT_EQ(parsed.total, 1000000u);
  EXPECT_EQ(parsed.configurations.size(), 100u);
  EXPECT_EQ(parsed.cut_by_constraints, 999900u);
}

TEST(stages_space, rejects_malformed_explicit_lists) {
  expect_error("[]", "the list of configurations is empty");
  expect_error("[1]", "[0]: the configuration is a number, expected an object");
  expect_error("[{}]", "[0]: the configuration has no parameters");
  expect_error(R"([{"A": 1, "B": 2}, {"A": 2}])",
               "[1]: the configuration lacks \"B\", which [0] has");
  expect_error(R"([{"A": 1}, {"A": 2, "C": 3}])",
               "[1]: the configuration has \"C\", which [0] lacks");
  expect_error(R"([{"A": 1}, {"A": 2}, {"A": 1}])", "[2]: the configuration A=1 repeats [0]");
}

TEST(stages_space, explicit_list_accepts_keys_in_another_order) {
  const space parsed = parse_space(R"([{"A": 1, "B": 2}, {"B": 3, "A": 4}])", "space.json");
  EXPECT_EQ(rows(parsed), (std::vector<std::string>{"A=1 B=2", "A=4 B=3"}));
}

TEST(stages_space, load_space_reads_a_file_and_names_it) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("stages_space_test_" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream file(path);
    file << R"({"params": {"TILE": [8, 16]}})";
  }
  const space parsed = load_space(path);
  EXPECT_EQ(parsed.origin, path.string());
  EXPECT_EQ(parsed.configurations.size(), 2u);
  std::filesystem::remove(path);
}

TEST(stages_space, load_space_of_a_missing_file_names_the_path_and_a_fix) {
  try {
    load_space("/nonexistent/dir/space.json");
    FAIL() << "expected space_error";
  } catch (const space_error& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind("/nonexistent/dir/space.json: cannot read the space file", 0), 0u)
        << message;
    EXPECT_NE(message.find("fix: "), std::string::npos);
  }
}

TEST(stages_space, load_space_of_a_directory_is_an_error) {
  EXPECT_THROW(load_space(std::filesystem::temp_directory_path()), space_error);
}

} // namespace
} // namespace rpl::stages
