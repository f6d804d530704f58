#include "engine/commands/inspect_command.hpp"

#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "stages/hardware/arch_model.hpp"
#include "stages/hardware/code_object_metadata.hpp"
#include "stages/hardware/occupancy_model.hpp"

namespace rpl::engine {

namespace {

nlohmann::json occupancy_at(const stages::arch_model& arch, const stages::kernel_metadata& k,
                            std::uint32_t block) {
  stages::kernel_resources resources;
  resources.block_size = block;
  resources.vgprs = k.vgpr_count;
  resources.agprs = k.agpr_count;
  // The code object's .vgpr_count already holds the unified VGPR+AGPR total on gfx90a and later.
  resources.vgprs_include_agprs = true;
  resources.sgprs = k.sgpr_count;
  resources.lds_bytes = k.group_segment_fixed_size;
  resources.scratch_bytes = k.private_segment_fixed_size;
  resources.wave_size = k.wavefront_size;
  const auto o = stages::compute_occupancy(arch, resources);
  nlohmann::json limits = nlohmann::json::object();
  for (const auto& [name, value] : o.limit_by_resource) {
    limits[name] = value;
  }
  return {{"threads_per_block", block}, {"wave_size", o.wave_size},
          {"unit", o.unit},             {"active", o.active_waves_per_simd},
          {"max", o.max_waves_per_simd}, {"workgroups_per_cu", o.active_workgroups_per_cu},
          {"theoretical", o.occupancy}, {"limiter", stages::to_string(o.limiter)},
          {"limits", limits},           {"suggestions", o.suggestions}};
}

std::string occupancy_text(const nlohmann::json& o) {
  char text[160];
  std::snprintf(text, sizeof text, "block %u: %u/%u %s (%.0f%%, %s)",
                o["threads_per_block"].get<unsigned>(), o["active"].get<unsigned>(),
                o["max"].get<unsigned>(), o["unit"].get<std::string>().c_str(),
                o["theoretical"].get<double>() * 100.0, o["limiter"].get<std::string>().c_str());
  return text;
}

}  // namespace

int inspect_main(const inspect_options& options) {
  if (options.files.empty()) {
    std::fprintf(stderr, "rocm-perf inspect: error: no file given; fix: rocm-perf inspect FILE...\n");
    return 2;
  }
  std::optional<stages::arch_model> forced;
  if (!options.arch.empty()) {
    try {
      forced = stages::load_arch(options.arch);
    } catch (const stages::arch_error& error) {
      std::fprintf(stderr, "rocm-perf inspect: error: --arch: %s\n", error.what());
      return 2;
    }
  }
  nlohmann::json doc = {{"schema_version", "1.0"}, {"files", nlohmann::json::array()}};
  bool any_device_code = false;
  int code = 0;
  for (const auto& file : options.files) {
    nlohmann::json entry = {{"file", file.string()}, {"code_objects", nlohmann::json::array()}};
    std::vector<stages::code_object> objects;
    try {
      objects = stages::read_code_objects(file);
    } catch (const stages::metadata_error& error) {
      std::fprintf(stderr, "rocm-perf inspect: error: %s\n", error.what());
      entry["error"] = error.what();
      doc["files"].push_back(entry);
      code = 2;
      continue;
    }
    if (objects.empty()) {
      entry["note"] = "no device code";
      if (!options.json) {
        std::printf("%s: no device code (no AMDGPU code object or offload bundle found)\n",
                    file.c_str());
      }
      doc["files"].push_back(entry);
      continue;
    }
    any_device_code = true;
    for (const auto& object : objects) {
      nlohmann::json o = {{"target", object.target},
                          {"processor", object.processor},
                          {"features", object.features},
                          {"bundle_entry", object.bundle_entry},
                          {"kernels", nlohmann::json::array()}};
      std::optional<stages::arch_model> arch = forced;
      if (!arch) {
        try {
          arch = stages::load_arch(object.processor);
        } catch (const stages::arch_error& error) {
          o["occupancy_note"] = error.what();
        }
      }
      if (arch) {
        o["occupancy_target"] = arch->target;
      }
      if (!options.json) {
        std::printf("%s: %s%s%s\n", file.c_str(), object.target.c_str(),
                    arch ? (" (occupancy on " + arch->target + ")").c_str() : "",
                    object.bundle_entry.empty() ? "" : ", from an offload bundle");
        std::printf("  %-44s %5s %5s %5s %7s %8s %6s %5s  %s\n", "kernel", "VGPR", "AGPR", "SGPR",
                    "LDS", "scratch", "spills", "wave", "occupancy");
      }
      for (const auto& k : object.kernels) {
        auto kj = stages::to_json(k);
        kj["occupancy"] = nlohmann::json::array();
        std::vector<std::uint32_t> blocks;
        if (k.max_flat_workgroup_size > 0) {
          blocks.push_back(k.max_flat_workgroup_size);
        }
        if (options.block && (blocks.empty() || *options.block != blocks.front())) {
          blocks.push_back(*options.block);
        }
        std::string occ;
        if (arch) {
          for (auto block : blocks) {
            auto at = occupancy_at(*arch, k, block);
            occ += (occ.empty() ? "" : "; ") + occupancy_text(at);
            kj["occupancy"].push_back(std::move(at));
          }
        }
        if (!options.json) {
          std::string name = k.name.size() > 44 ? k.name.substr(0, 41) + "..." : k.name;
          std::printf("  %-44s %5u %5u %5u %7llu %8llu %6u %5u  %s\n", name.c_str(), k.vgpr_count,
                      k.agpr_count, k.sgpr_count,
                      static_cast<unsigned long long>(k.group_segment_fixed_size),
                      static_cast<unsigned long long>(k.private_segment_fixed_size),
                      k.vgpr_spill_count + k.sgpr_spill_count, k.wavefront_size,
                      occ.empty() ? "-" : occ.c_str());
        }
        o["kernels"].push_back(std::move(kj));
      }
      entry["code_objects"].push_back(std::move(o));
    }
    doc["files"].push_back(entry);
  }
  if (options.json) {
    std::cout << doc.dump(2) << std::endl;
  }
  if (code != 0) {
    return code;
  }
  return any_device_code ? 0 : 3;
}

}  // namespace rpl::engine
