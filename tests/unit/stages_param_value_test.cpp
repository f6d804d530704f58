#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stages/search/param_value.hpp"

namespace rpl::stages {
namespace {

TEST(stages_param_value, prints_integers_plainly) {
  EXPECT_EQ(to_string(param_value{std::int64_t{-42}}), "-42");
}

TEST(stages_param_value, prints_doubles_in_the_shortest_round_trip_form) {
  EXPECT_EQ(to_string(param_value{0.1}), "0.1");
  EXPECT_EQ(to_string(param_value{2.0}), "2");
  EXPECT_EQ(to_string(param_value{1e-7}), "1e-07");
}

TEST(stages_param_value, prints_strings_as_they_are) {
  EXPECT_EQ(to_string(param_value{std::string("a b")}), "a b");
}

TEST(stages_param_value, converts_to_json_scalars_of_the_same_type) {
  EXPECT_TRUE(to_json_value(param_value{std::int64_t{3}}).is_number_integer());
  EXPECT_TRUE(to_json_value(param_value{0.5}).is_number_float());
  EXPECT_EQ(to_json_value(param_value{std::string("x")}), nlohmann::json("x"));
}

TEST(stages_param_value, configuration_finds_converts_and_serializes) {
  configuration config;
  config.params = {{"TILE", std::int64_t{16}}, {"KIND", std::string("fast")}, {"S", 0.5}};
  ASSERT_NE(config.find("KIND"), nullptr);
  EXPECT_EQ(std::get<std::string>(*config.find("KIND")), "fast");
  EXPECT_EQ(config.find("NONE"), nullptr);
  EXPECT_EQ(config.as_strings(),
            (std::map<std::string, std::string>{{"KIND", "fast"}, {"S", "0.5"}, {"TILE", "16"}}));
  EXPECT_EQ(config.to_json(), nlohmann::json::parse(R"({"TILE": 16, "KIND": "fast", "S": 0.5})"));
}

} // namespace
} // namespace rpl::stages
