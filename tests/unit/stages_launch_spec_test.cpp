// The launch file: parsing, name checks against a space, resolution for one configuration, and
// every error (each names the file, the JSON path and a fix).

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stages/search/launch_spec.hpp"
#include "stages/search/space.hpp"
#include "support/json_schema.hpp"
#include "support/test_support.hpp"

namespace rpl::stages {
namespace {

namespace fs = std::filesystem;
using messages::element_type;
using nlohmann::ordered_json;

/// A small valid launch file that the error tests break one piece at a time.
ordered_json base() {
  return ordered_json::parse(R"({
    "kernel": "saxpy",
    "problem": {"N": 1000},
    "grid": ["(N + BLOCK - 1) / BLOCK"],
    "block": ["BLOCK"],
    "args": [
      {"name": "x", "kind": "buffer", "type": "f32", "count": "N",
       "init": {"random": {"seed": 3, "min": -2, "max": 2}}},
      {"name": "y", "kind": "buffer", "type": "f32", "count": "N", "output": true,
       "tolerance": {"abs": 1e-5, "rel": 1e-4}},
      {"name": "a", "kind": "scalar", "type": "f32", "value": 2.5},
      {"name": "n", "kind": "scalar", "type": "i32", "value": "N"}
    ]
  })");
}

launch_spec parse(const ordered_json& json) {
  return parse_launch_spec(json.dump(), "t.launch.json", "/base");
}

configuration config(std::vector<std::pair<std::string, param_value>> params) {
  return configuration{std::move(params)};
}

std::string parse_error(const std::string& text) {
  try {
    parse_launch_spec(text, "t.launch.json", "/base");
  } catch (const launch_spec_error& error) {
    return error.what();
  }
  return "";
}

/// Parsing `json` fails with a message that names the file, contains `part` and gives a fix.
void expect_parse_error(const ordered_json& json, const std::string& part) {
  const std::string message = parse_error(json.dump());
  ASSERT_FALSE(message.empty()) << "no error for " << json.dump();
  EXPECT_EQ(message.rfind("launch file t.launch.json: ", 0), 0u) << message;
  EXPECT_NE(message.find("fix: "), std::string::npos) << message;
  EXPECT_NE(message.find(part), std::string::npos) << message << "\nexpected: " << part;
}

/// Resolving `json` for `params` fails with a message containing `part` and a fix.
void expect_resolve_error(const ordered_json& json,
                          std::vector<std::pair<std::string, param_value>> params,
                          const std::string& part) {
  const launch_resolution resolved = resolve_launch(parse(json), config(std::move(params)));
  ASSERT_FALSE(resolved.ok()) << "no error for " << json.dump();
  EXPECT_EQ(resolved.error.rfind("launch file t.launch.json: ", 0), 0u) << resolved.error;
  EXPECT_NE(resolved.error.find("fix: "), std::string::npos) << resolved.error;
  EXPECT_NE(resolved.error.find(part), std::string::npos)
      << resolved.error << "\nexpected: " << part;
}

TEST(stages_launch_spec, parses_the_gemm_example_and_checks_it_against_its_space) {
  const fs::path examples = testing::source_dir / "examples/cuda";
  const launch_spec spec = load_launch_spec(examples / "gemm.launch.json");
  EXPECT_EQ(spec.kernel, "rpl_sgemm_tiled");
  ASSERT_EQ(spec.problem.size(), 3u);
  EXPECT_EQ(spec.problem[0].first, "M");
  EXPECT_EQ(std::get<std::int64_t>(spec.problem[2].second), 2048);
  ASSERT_EQ(spec.args.size(), 6u);
  EXPECT_EQ(spec.args[2].name, "C");
  EXPECT_TRUE(spec.args[2].output);
  ASSERT_TRUE(spec.reference);
  EXPECT_EQ(spec.reference->symbol, "rpl_sgemm_reference");
  EXPECT_TRUE(spec.reference->code_object.empty()) << "taken from each candidate's code object";
  EXPECT_NO_THROW(check_launch_names(spec, load_space(examples / "space.json").names));
}

TEST(stages_launch_spec, the_schema_accepts_the_examples_and_refuses_what_the_parser_refuses) {
  const auto gemm = nlohmann::json::parse(
      testing::read_text(testing::source_dir / "examples/cuda/gemm.launch.json"));
  EXPECT_EQ(testing::schema_errors(gemm, "launch.schema.json"), std::vector<std::string>{});
  const auto small = nlohmann::json::parse(base().dump());
  EXPECT_EQ(testing::schema_errors(small, "launch.schema.json"), std::vector<std::string>{});
  for (const auto& [pointer, value] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"/kernal", "x"},
                                                           {"/args/0/kind", "pointer"},
                                                           {"/args/2/count", 4},
                                                           {"/grid", nlohmann::json::array()},
                                                           {"/reference", "best"}}) {
    nlohmann::json bad = small;
    bad[nlohmann::json::json_pointer(pointer)] = value;
    EXPECT_FALSE(testing::schema_errors(bad, "launch.schema.json").empty()) << pointer;
    EXPECT_FALSE(parse_error(bad.dump()).empty()) << pointer;
  }
}

TEST(stages_launch_spec, every_example_launch_file_fits_the_schema_and_resolves) {
  for (const char* name : {"stream_copy.launch.json", "pl_scale.launch.json"}) {
    const auto path = testing::source_dir / "examples/cuda" / name;
    EXPECT_EQ(testing::schema_errors(nlohmann::json::parse(testing::read_text(path)),
                                     "launch.schema.json"),
              std::vector<std::string>{})
        << name;
    const launch_resolution resolved = resolve_launch(load_launch_spec(path), config({}));
    EXPECT_TRUE(resolved.ok()) << name << ": " << resolved.error;
  }
}

TEST(stages_launch_spec, resolves_the_gemm_example_for_one_configuration) {
  const launch_spec spec = load_launch_spec(testing::source_dir / "examples/cuda/gemm.launch.json");
  const launch_resolution resolved = resolve_launch(spec, config({{"TILE_M", std::int64_t{64}},
                                                                  {"TILE_N", std::int64_t{128}},
                                                                  {"TILE_K", std::int64_t{16}},
                                                                  {"THREAD_M", std::int64_t{4}},
                                                                  {"THREAD_N", std::int64_t{8}}}));
  ASSERT_TRUE(resolved.ok()) << resolved.error;
  const messages::kernel_launch& launch = *resolved.launch;
  EXPECT_EQ(launch.symbol, "rpl_sgemm_tiled");
  EXPECT_EQ(launch.grid.x, 16u); // N / TILE_N
  EXPECT_EQ(launch.grid.y, 32u); // M / TILE_M
  EXPECT_EQ(launch.grid.z, 1u);
  EXPECT_EQ(launch.block.x, 256u); // (64 / 4) * (128 / 8)
  EXPECT_EQ(launch.block.y, 1u);
  EXPECT_EQ(launch.shared_bytes, 0u);
  ASSERT_EQ(launch.args.size(), 6u);
  EXPECT_EQ(launch.args[0].count, 2048u * 2048u);
  EXPECT_EQ(launch.args[0].init.fill, messages::buffer_fill::random);
  EXPECT_EQ(launch.args[0].init.seed, 1u);
  EXPECT_EQ(launch.args[2].init.fill, messages::buffer_fill::zeros);
  EXPECT_DOUBLE_EQ(launch.args[2].tolerance.abs, 1e-3);
  EXPECT_DOUBLE_EQ(launch.args[2].tolerance.rel, 1e-3);
  EXPECT_EQ(launch.args[5].kind, messages::kernel_arg_kind::scalar);
  EXPECT_EQ(launch.args[5].int_value, 2048);
  ASSERT_TRUE(launch.reference);
  EXPECT_EQ(launch.reference->grid.x, 128u);
  EXPECT_EQ(launch.reference->block.y, 16u);
  EXPECT_TRUE(launch.reference->code_object_path.empty());
}

TEST(stages_launch_spec, fills_defaults_and_accepts_single_values) {
  ordered_json json = base();
  json["grid"] = 7;
  json["block"] = "BLOCK * 2";
  json["args"][0].erase("init");
  const launch_resolution resolved =
      resolve_launch(parse(json), config({{"BLOCK", std::int64_t{64}}}));
  ASSERT_TRUE(resolved.ok()) << resolved.error;
  EXPECT_EQ(resolved.launch->grid.x, 7u);
  EXPECT_EQ(resolved.launch->block.x, 128u);
  EXPECT_EQ(resolved.launch->block.z, 1u);
  EXPECT_EQ(resolved.launch->shared_bytes, 0u);
  EXPECT_EQ(resolved.launch->args[0].init.fill, messages::buffer_fill::zeros);
  EXPECT_FALSE(resolved.launch->args[0].output);
  EXPECT_FLOAT_EQ(static_cast<float>(resolved.launch->args[2].float_value), 2.5f);
  EXPECT_FALSE(resolved.launch->reference) << "first valid candidate by default";
  json["reference"] = "first_valid";
  EXPECT_FALSE(parse(json).reference);
}

TEST(stages_launch_spec, takes_shared_memory_float_parameters_and_every_element_type) {
  ordered_json json = base();
  json["shared_memory"] = "BLOCK * 4 * 2";
  json["args"][2]["value"] = "SCALE * 2";
  json["args"].push_back({{"kind", "scalar"}, {"type", "u32"}, {"value", 4294967295LL}});
  json["args"].push_back({{"kind", "scalar"}, {"type", "i64"}, {"value", "N * 1000000000"}});
  json["args"].push_back({{"kind", "buffer"}, {"type", "f16"}, {"count", 8}});
  json["args"].push_back({{"kind", "buffer"},
                          {"type", "i32"},
                          {"count", 8},
                          {"init", {{"random", {{"seed", 1}, {"min", -5}, {"max", 5}}}}}});
  const auto resolved =
      resolve_launch(parse(json), config({{"BLOCK", std::int64_t{32}}, {"SCALE", 0.25}}));
  ASSERT_TRUE(resolved.ok()) << resolved.error;
  const auto& args = resolved.launch->args;
  EXPECT_EQ(resolved.launch->shared_bytes, 256u);
  EXPECT_DOUBLE_EQ(args[2].float_value, 0.5);
  EXPECT_EQ(args[4].int_value, 4294967295LL);
  EXPECT_EQ(args[4].name, "args[4]") << "an unnamed argument is called by its path";
  EXPECT_EQ(args[5].int_value, 1'000'000'000'000LL);
  EXPECT_EQ(args[6].type, element_type::f16);
  EXPECT_EQ(args[7].init.min, -5.0);
}

TEST(stages_launch_spec, resolves_file_paths_against_the_launch_files_folder) {
  ordered_json json = base();
  json["args"][0]["init"] = {{"file", "data/x.bin"}};
  json["reference"] = {
      {"kernel", "ref"}, {"code_object", "../ref.cubin"}, {"grid", 1}, {"block", 1}};
  const launch_spec spec = parse(json);
  EXPECT_EQ(spec.args[0].init.fill, messages::buffer_fill::file);
  EXPECT_EQ(spec.args[0].init.path, "/base/data/x.bin");
  EXPECT_EQ(spec.reference->code_object, fs::path("/ref.cubin"));
}

TEST(stages_launch_spec, load_refuses_missing_files_up_front) {
  testing::temp_dir dir;
  ordered_json json = base();
  json["args"][0]["init"] = {{"file", "missing.bin"}};
  testing::write_file(dir / "l.json", json.dump());
  try {
    load_launch_spec(dir / "l.json");
    FAIL() << "no error for a missing init file";
  } catch (const launch_spec_error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("args[0].init.file: " + (dir / "missing.bin").string() +
                        " is not a readable file; fix:"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(load_launch_spec(dir / "nope.json"), launch_spec_error);
}

TEST(stages_launch_spec, rejects_malformed_files_naming_the_path_and_a_fix) {
  EXPECT_NE(parse_error("{\"kernel\": ").find("invalid JSON"), std::string::npos);
  EXPECT_NE(parse_error("[1]").find("the file holds an array"), std::string::npos);
  EXPECT_NE(parse_error(R"({"kernel": "a", "kernel": "b"})").find("appears twice"),
            std::string::npos);

  auto with = [](const std::string& pointer, const ordered_json& value) {
    ordered_json json = base();
    json[ordered_json::json_pointer(pointer)] = value;
    return json;
  };
  auto without = [](const std::string& key) {
    ordered_json json = base();
    json.erase(key);
    return json;
  };
  expect_parse_error(with("/kernal", "x"), "kernal: unknown key; fix: use one of");
  expect_parse_error(without("kernel"), "kernel: missing");
  expect_parse_error(with("/kernel", ""), "kernel: is empty");
  expect_parse_error(with("/kernel", "my kernel"), "contains white space");
  expect_parse_error(without("grid"), "grid: missing");
  expect_parse_error(with("/block", ordered_json::array({1, 1, 1, 1})), "block: has 4 entries");
  expect_parse_error(with("/grid/0", true), "grid[0]: is a boolean");
  expect_parse_error(with("/grid/0", "(N + 1"), "grid[0]: in \"(N + 1\", column");
  expect_parse_error(with("/shared_memory", ordered_json::array()), "shared_memory: is an array");
  expect_parse_error(without("args"), "args: missing");
  expect_parse_error(with("/args", ordered_json::array()), "args: is empty");
  expect_parse_error(with("/args/0", 3), "args[0]: is a number");
  expect_parse_error(with("/args/0/size", 3), "args[0].size: unknown key");
  expect_parse_error(with("/args/0/kind", "pointer"), "args[0].kind: is \"pointer\"");
  expect_parse_error(with("/args/0/type", "bf16"),
                     "args[0].type: is \"bf16\"; fix: use one of f32");
  expect_parse_error(with("/args/0/value", 1), "args[0].value: belongs to scalars");
  expect_parse_error(with("/args/2/count", 1), "args[2].count: belongs to buffers");
  expect_parse_error(with("/args/1/name", "x"), "args[1].name: \"x\" names two arguments");
  expect_parse_error(with("/args/0/init", "ones"), "args[0].init: is \"ones\"");
  expect_parse_error(with("/args/0/init/random/seed", -1), "args[0].init.random.seed: is -1");
  expect_parse_error(with("/args/0/init/random/max", -3),
                     "args[0].init.random: min -2 is not below max -3");
  expect_parse_error(with("/args/0/tolerance", {{"abs", 1}}),
                     "args[0].tolerance: is set on a buffer that is not an output");
  expect_parse_error(with("/args/1/tolerance/rel", -1),
                     "args[1].tolerance.rel: is -1; fix: use a number >= 0");
  expect_parse_error(with("/args/1/output", "yes"), "args[1].output: is a string");
  expect_parse_error(with("/problem", 5), "problem: is a number");
  expect_parse_error(with("/problem/2N", 5), "problem.2N: is not a usable name");
  expect_parse_error(with("/problem/N", "1000"), "problem.N: is a string");
  expect_parse_error(with("/reference", "best"), "reference: is \"best\"");
  expect_parse_error(
      with("/reference", {{"kernel", "r"}, {"grid", 1}, {"block", 1}, {"stream", 0}}),
      "reference.stream: unknown key");
  expect_parse_error(with("/reference", {{"grid", 1}, {"block", 1}}), "reference.kernel: missing");

  ordered_json ints = base();
  ints["args"].push_back({{"kind", "buffer"},
                          {"type", "i32"},
                          {"count", 4},
                          {"init", {{"random", {{"min", 0.5}, {"max", 3}}}}}});
  expect_parse_error(ints, "args[4].init.random.min: is 0.5; fix: use an integer");
}

TEST(stages_launch_spec, names_must_be_parameters_or_problem_sizes) {
  ordered_json json = base();
  json["args"][1]["count"] = "N * TILE_Q";
  try {
    check_launch_names(parse(json), {"BLOCK", "TILE_M"});
    FAIL() << "no error for TILE_Q";
  } catch (const launch_spec_error& error) {
    EXPECT_EQ(
        std::string(error.what()),
        "launch file t.launch.json: args[1].count: unknown name TILE_Q; fix: use a parameter "
        "of the space (BLOCK, TILE_M) or a problem size (N), or add \"TILE_Q\" to \"problem\"");
  }
  EXPECT_NO_THROW(check_launch_names(parse(base()), {"BLOCK"}));
  EXPECT_THROW(check_launch_names(parse(base()), {"BLOCK", "N"}), launch_spec_error)
      << "a problem size may not shadow a parameter";

  json = base();
  json["reference"] = {{"kernel", "ref"}, {"grid", "N / BLOCK"}, {"block", 1}};
  try {
    check_launch_names(parse(json), {"BLOCK"});
    FAIL() << "no error for a parameter in the reference";
  } catch (const launch_spec_error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("reference.grid: uses the parameter BLOCK, but the "
                        "reference kernel runs once for all candidates; fix:"),
              std::string::npos)
        << error.what();
  }
}

TEST(stages_launch_spec, resolution_failures_are_values_that_name_the_configuration) {
  expect_resolve_error(base(), {{"BLOCK", std::int64_t{0}}},
                       "grid[0]: in \"(N + BLOCK - 1) / BLOCK\"");
  expect_resolve_error(
      base(), {{"BLOCK", std::int64_t{-5}}},
      "grid[0]: \"(N + BLOCK - 1) / BLOCK\" evaluates to -198 for BLOCK=-5; expected a "
      "positive integer");
  expect_resolve_error(base(), {{"BLOCK", 2.5}}, "evaluates to 400.6; expected a positive integer");
  expect_resolve_error(base(), {{"BLOCK", std::string("wide")}},
                       "uses BLOCK, a string parameter (\"wide\"), in arithmetic");
  expect_resolve_error(base(), {}, "grid[0]: unknown name BLOCK");

  ordered_json json = base();
  json["args"][3]["value"] = "N * 3000000";
  expect_resolve_error(json, {{"BLOCK", std::int64_t{32}}},
                       "args[3].value: \"N * 3000000\" evaluates to "
                       "3000000000 for BLOCK=32; expected an i32");
  json = base();
  json["args"][0]["count"] = "N * N * N * N * N";
  expect_resolve_error(json, {{"BLOCK", std::int64_t{32}}}, "args[0].count:");
  json = base();
  json["shared_memory"] = -1;
  expect_resolve_error(json, {{"BLOCK", std::int64_t{32}}},
                       "shared_memory: \"-1\" evaluates to -1");
}

} // namespace
} // namespace rpl::stages
