#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stages/hardware/arch_model.hpp"
#include "stages/hardware/embedded_arch_models.hpp"

namespace rpl::stages {
namespace {

using nlohmann::json;

const std::vector<std::string> expected_targets{"gfx1030", "gfx1100", "gfx90a", "gfx940",
                                                "gfx942",  "gfx950",  "sm_80",  "sm_90"};

/// A minimal valid AMD model, for the error tests to break one key at a time.
json minimal_amd() {
  const auto v = [](json value) { return json{{"value", std::move(value)}, {"source", "test"}}; };
  return json{{"target", "gfx_test"},
              {"vendor", "amd"},
              {"family", "TEST"},
              {"values",
               {{"wave_size", v(64)},
                {"wave_sizes", v({64})},
                {"occupancy_unit", v("CU")},
                {"simds_per_cu", v(4)},
                {"max_waves_per_simd", v(8)},
                {"vgprs_per_lane_wave64", v(512)},
                {"vgpr_granule_wave64", v(8)},
                {"max_vgprs_per_wave", v(256)},
                {"unified_vgpr_agpr", v(false)},
                {"max_sgprs_per_wave", v(106)},
                {"sgprs_limit_occupancy", v(false)},
                {"lds_per_cu_bytes", v(65536)},
                {"max_lds_per_workgroup_bytes", v(65536)},
                {"lds_granule_bytes", v(512)},
                {"max_workgroup_size", v(1024)},
                {"barriers_per_cu", v(16)},
                {"single_wave_workgroup_uses_barrier", v(false)}}}};
}

std::string parse_error(const json& doc) {
  try {
    parse_arch(doc.dump(), "configs/arch/gfx_test.json");
  } catch (const arch_error& e) {
    return e.what();
  }
  return "";
}

TEST(stages_arch_model, every_expected_target_is_embedded) {
  EXPECT_EQ(known_targets(), expected_targets);
}

TEST(stages_arch_model, every_embedded_model_parses_and_names_itself) {
  for (const embedded_file& file : embedded_arch_models()) {
    SCOPED_TRACE(std::string(file.name));
    const arch_model model =
        parse_arch(file.text, "configs/arch/" + std::string(file.name) + ".json");
    EXPECT_EQ(model.target, file.name);
    EXPECT_EQ(model.amd.has_value(), model.vendor == "amd");
    EXPECT_EQ(model.nvidia.has_value(), model.vendor == "nvidia");
    EXPECT_FALSE(model.family.empty());
    EXPECT_TRUE(model.raw.contains("notes"));
  }
}

TEST(stages_arch_model, every_value_carries_a_non_empty_source) {
  std::size_t checked = 0;
  for (const embedded_file& file : embedded_arch_models()) {
    const json doc = json::parse(file.text);
    std::vector<std::pair<std::string, json>> groups{{"values", doc.at("values")}};
    for (const json& product : doc.value("products", json::array()))
      groups.emplace_back(product.at("name").get<std::string>(),
                          product.value("values", json::object()));
    for (const auto& [where, values] : groups)
      for (const auto& [key, entry] : values.items()) {
        SCOPED_TRACE(std::string(file.name) + " " + where + "." + key);
        ASSERT_TRUE(entry.is_object());
        ASSERT_TRUE(entry.contains("value"));
        ASSERT_TRUE(entry.contains("source"));
        ASSERT_TRUE(entry.at("source").is_string());
        EXPECT_GE(entry.at("source").get<std::string>().size(), 10u);
        ++checked;
      }
  }
  EXPECT_GT(checked, 200u);
}

TEST(stages_arch_model, typed_fields_match_the_reference) {
  const arch_model gfx90a = load_arch("gfx90a");
  ASSERT_TRUE(gfx90a.amd);
  EXPECT_EQ(gfx90a.wave_size, 64u);
  EXPECT_EQ(gfx90a.amd->unit, "CU");
  EXPECT_EQ(gfx90a.amd->simds_per_unit, 4u);
  EXPECT_EQ(gfx90a.amd->max_waves_per_simd, 8u);
  EXPECT_EQ(gfx90a.amd->vgpr_files.at(64).registers_per_lane, 512u);
  EXPECT_EQ(gfx90a.amd->vgpr_files.at(64).granule, 8u);
  EXPECT_TRUE(gfx90a.amd->unified_vgpr_agpr);
  EXPECT_EQ(gfx90a.amd->agpr_offset_alignment, 4u);
  EXPECT_EQ(gfx90a.amd->lds_per_unit_bytes, 65536u);
  EXPECT_EQ(gfx90a.amd->lds_granule_bytes, 512u);
  EXPECT_EQ(gfx90a.amd->waves_by_sgprs.size(), 4u);

  const arch_model gfx1030 = load_arch("gfx1030");
  ASSERT_TRUE(gfx1030.amd);
  EXPECT_EQ(gfx1030.wave_size, 32u);
  EXPECT_EQ(gfx1030.amd->unit, "WGP");
  EXPECT_EQ(gfx1030.amd->simds_per_unit, 4u);
  EXPECT_EQ(gfx1030.amd->lds_per_unit_bytes, 131072u);
  EXPECT_EQ(gfx1030.amd->barriers_per_unit, 32u);
  EXPECT_EQ(gfx1030.amd->vgpr_files.at(32).registers_per_lane, 1024u);
  EXPECT_EQ(gfx1030.amd->vgpr_files.at(64).registers_per_lane, 512u);
  EXPECT_TRUE(gfx1030.amd->waves_by_sgprs.empty());

  EXPECT_EQ(load_arch("gfx1100").amd->vgpr_files.at(32).granule, 24u);
  EXPECT_EQ(load_arch("gfx950").amd->lds_per_unit_bytes, 163840u);

  const arch_model sm_90 = load_arch("sm_90");
  ASSERT_TRUE(sm_90.nvidia);
  EXPECT_EQ(sm_90.wave_size, 32u);
  EXPECT_EQ(sm_90.nvidia->max_warps_per_sm, 64u);
  EXPECT_EQ(sm_90.nvidia->shared_memory_per_sm_bytes, 233472u);
  EXPECT_EQ(sm_90.nvidia->shared_memory_carveouts_bytes.back(), 233472u);
  EXPECT_EQ(sm_90.nvidia->reserved_shared_memory_per_block_bytes, 1024u);
  EXPECT_EQ(sm_90.nvidia->max_registers_per_thread, 255u);
  EXPECT_EQ(load_arch("sm_80").nvidia->shared_memory_per_sm_bytes, 167936u);
}

TEST(stages_arch_model, target_spellings_normalise) {
  EXPECT_EQ(normalize_target("gfx90a"), "gfx90a");
  EXPECT_EQ(normalize_target("gfx90a:xnack-"), "gfx90a");
  EXPECT_EQ(normalize_target("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"), "gfx90a");
  EXPECT_EQ(normalize_target(" GFX942 "), "gfx942");
  EXPECT_EQ(normalize_target("sm_90"), "sm_90");
  EXPECT_EQ(normalize_target("sm_90a"), "sm_90");
  EXPECT_EQ(normalize_target("90"), "sm_90");
  EXPECT_EQ(normalize_target("9.0"), "sm_90");
  EXPECT_EQ(normalize_target("compute_80"), "sm_80");
  EXPECT_EQ(normalize_target("sm80"), "sm_80");

  EXPECT_EQ(load_arch("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-").target, "gfx942");
  EXPECT_EQ(load_arch("gfx90a:xnack-").target, "gfx90a");
  EXPECT_EQ(load_arch("sm_90a").target, "sm_90");
  EXPECT_EQ(load_arch("90").target, "sm_90");
}

TEST(stages_arch_model, unknown_target_lists_the_known_ones_and_a_fix) {
  try {
    load_arch("gfx1201");
    FAIL() << "expected arch_error";
  } catch (const arch_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown target 'gfx1201'; known targets: gfx1030, gfx1100, gfx90a, gfx940, gfx942, "
              "gfx950, sm_80, sm_90; fix: pass one of them with --arch");
  }
  EXPECT_THROW(load_arch("sm_75"), arch_error);
  EXPECT_THROW(load_arch(""), arch_error);
}

TEST(stages_arch_model, the_minimal_model_parses) {
  const arch_model model = parse_arch(minimal_amd().dump(), "configs/arch/gfx_test.json");
  EXPECT_EQ(model.amd->simds_per_unit, 4u);
}

TEST(stages_arch_model, a_missing_key_names_the_file_and_the_key) {
  json doc = minimal_amd();
  doc["values"].erase("max_waves_per_simd");
  const std::string error = parse_error(doc);
  EXPECT_NE(error.find("configs/arch/gfx_test.json"), std::string::npos) << error;
  EXPECT_NE(error.find("values.max_waves_per_simd"), std::string::npos) << error;
}

TEST(stages_arch_model, a_value_without_a_source_is_rejected) {
  json doc = minimal_amd();
  doc["values"]["simds_per_cu"].erase("source");
  const std::string error = parse_error(doc);
  EXPECT_NE(error.find("configs/arch/gfx_test.json"), std::string::npos) << error;
  EXPECT_NE(error.find("values.simds_per_cu"), std::string::npos) << error;
  EXPECT_NE(error.find("no source"), std::string::npos) << error;
}

TEST(stages_arch_model, a_wrongly_typed_value_is_rejected) {
  json doc = minimal_amd();
  doc["values"]["lds_granule_bytes"]["value"] = "512";
  const std::string error = parse_error(doc);
  EXPECT_NE(error.find("values.lds_granule_bytes"), std::string::npos) << error;
  EXPECT_NE(error.find("expected a non-negative integer"), std::string::npos) << error;

  doc = minimal_amd();
  doc["vendor"] = "intel";
  EXPECT_NE(parse_error(doc).find("'vendor'"), std::string::npos);

  EXPECT_NE(parse_error(json::array()).find("not a JSON object"), std::string::npos);
  try {
    parse_arch("{", "configs/arch/broken.json");
    FAIL();
  } catch (const arch_error& e) {
    EXPECT_NE(std::string(e.what()).find("configs/arch/broken.json: is not valid JSON"),
              std::string::npos);
  }
}

TEST(stages_arch_model, a_wave_size_needs_its_vgpr_file) {
  json doc = minimal_amd();
  doc["values"]["wave_sizes"]["value"] = json::array({32, 64});
  const std::string error = parse_error(doc);
  EXPECT_NE(error.find("values.vgprs_per_lane_wave32"), std::string::npos) << error;
}

} // namespace
} // namespace rpl::stages
