// `rocm-perf inspect`: each kernel of a code object, executable or shared library with its
// resources and theoretical occupancy; no GPU needed.

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/commands/command.hpp"
#include "stages/analysis/kernel_occupancy.hpp"
#include "stages/hardware/arch_model.hpp"
#include "stages/hardware/code_object_metadata.hpp"

namespace rpl::engine::commands {

namespace {

struct inspect_options {
  std::vector<std::filesystem::path> files;
  std::string arch;                   ///< override the embedded target
  std::optional<std::uint32_t> block; ///< also compute occupancy at this block size
  bool json = false;
};

/// The block sizes a kernel is reported at: its maximum flat workgroup size (when the metadata
/// has one), then --block when that differs.
std::vector<std::uint32_t> block_sizes(const stages::kernel_metadata& k,
                                       const inspect_options& options) {
  std::vector<std::uint32_t> blocks;
  if (k.max_flat_workgroup_size > 0) {
    blocks.push_back(k.max_flat_workgroup_size);
  }
  if (options.block && (blocks.empty() || *options.block != blocks.front())) {
    blocks.push_back(*options.block);
  }
  return blocks;
}

/// One kernel: its metadata and occupancy as JSON, and (text mode) its table row.
nlohmann::json inspect_kernel(const stages::kernel_metadata& k,
                              const std::optional<stages::arch_model>& arch,
                              const inspect_options& options) {
  auto kj = stages::to_json(k);
  kj["occupancy"] = nlohmann::json::array();
  std::string occ;
  if (arch) {
    try {
      for (const auto block : block_sizes(k, options)) {
        const auto at = stages::compute_kernel_occupancy(
            *arch, stages::kernel_resources::from_code_object(k, block), false);
        occ += (occ.empty() ? "" : "; ") +
               ("block " + std::to_string(block) + ": " + stages::occupancy_summary(at.result));
        kj["occupancy"].push_back(stages::to_json(at));
      }
    } catch (const stages::arch_error& error) {
      // The kernel does not fit the model (a wave size the target lacks): say so, go on.
      kj["occupancy_note"] = error.what();
      occ = std::string("- (") + error.what() + ")";
    }
  }
  if (!options.json) {
    std::string name = k.name.size() > 44 ? k.name.substr(0, 41) + "..." : k.name;
    std::printf(
        "  %-44s %5u %5u %5u %7llu %8llu %6u %5u  %s\n", name.c_str(), k.vgpr_count, k.agpr_count,
        k.sgpr_count, static_cast<unsigned long long>(k.group_segment_fixed_size),
        static_cast<unsigned long long>(k.private_segment_fixed_size),
        k.vgpr_spill_count + k.sgpr_spill_count, k.wavefront_size, occ.empty() ? "-" : occ.c_str());
  }
  return kj;
}

/// One code object: its target, the model occupancy is computed on (--arch, else its own
/// processor's, else a note why none), and its kernels.
nlohmann::json inspect_code_object(const std::filesystem::path& file,
                                   const stages::code_object& object,
                                   const std::optional<stages::arch_model>& forced,
                                   const inspect_options& options) {
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
    o["kernels"].push_back(inspect_kernel(k, arch, options));
  }
  return o;
}

/// What inspecting the files found.
struct inspect_totals {
  bool any_device_code = false;
  int code = 0; ///< 2 once a file could not be read
};

/// One file: its code objects, a note when it has none, or the error that made it unreadable.
nlohmann::json inspect_file(const std::filesystem::path& file,
                            const std::optional<stages::arch_model>& forced,
                            const inspect_options& options,
                            inspect_totals& totals) {
  nlohmann::json entry = {{"file", file.string()}, {"code_objects", nlohmann::json::array()}};
  std::vector<stages::code_object> objects;
  try {
    objects = stages::read_code_objects(file);
  } catch (const stages::metadata_error& error) {
    std::fprintf(stderr, "rocm-perf inspect: error: %s\n", error.what());
    entry["error"] = error.what();
    totals.code = exit_code::bad_input;
    return entry;
  }
  if (objects.empty()) {
    entry["note"] = "no device code";
    if (!options.json) {
      std::printf("%s: no device code (no AMDGPU code object or offload bundle found)\n",
                  file.c_str());
    }
    return entry;
  }
  totals.any_device_code = true;
  for (const auto& object : objects) {
    entry["code_objects"].push_back(inspect_code_object(file, object, forced, options));
  }
  return entry;
}

/// 0 done, 2 bad input (unreadable or corrupt file, unknown --arch), 3 no file had device code.
int inspect(const inspect_options& options) {
  if (options.files.empty()) {
    std::fprintf(stderr,
                 "rocm-perf inspect: error: no file given; fix: rocm-perf inspect FILE...\n");
    return exit_code::bad_input;
  }
  std::optional<stages::arch_model> forced;
  if (!options.arch.empty()) {
    try {
      forced = stages::load_arch(options.arch);
    } catch (const stages::arch_error& error) {
      std::fprintf(stderr, "rocm-perf inspect: error: --arch: %s\n", error.what());
      return exit_code::bad_input;
    }
    if (forced->vendor != "amd") {
      std::fprintf(stderr,
                   "rocm-perf inspect: error: --arch %s is an %s target, but inspect reads AMD GPU "
                   "code objects, whose occupancy needs an AMD model; fix: --arch with a gfx "
                   "target (e.g. gfx90a), or leave --arch out to use each code object's own\n",
                   options.arch.c_str(), forced->vendor == "nvidia" ? "NVIDIA" : "other vendor's");
      return exit_code::bad_input;
    }
  }
  nlohmann::json doc = {{"schema_version", "1.0"}, {"files", nlohmann::json::array()}};
  inspect_totals totals;
  for (const auto& file : options.files) {
    doc["files"].push_back(inspect_file(file, forced, options, totals));
  }
  if (options.json) {
    std::cout << doc.dump(2) << std::endl;
  }
  if (totals.code != 0) {
    return totals.code;
  }
  return totals.any_device_code ? exit_code::done : exit_code::no_result;
}

class inspect_command final : public command {
public:
  void add_to(CLI::App& app) override {
    cmd_ = app.add_subcommand(
        "inspect",
        "Kernels of a code object, executable or shared library: resources and occupancy");
    cmd_->add_option("files", options_.files, "Code objects, executables, shared libraries")
        ->expected(-1);
    cmd_->add_option("--arch", options_.arch, "Target (default: the embedded one)");
    block_opt_ =
        cmd_->add_option("--block", block_, "Also at this block size")->check(CLI::Range(1, 65536));
    cmd_->add_flag("--json", options_.json, "Print JSON");
  }

  bool chosen() const override { return cmd_->parsed(); }

  int run() override {
    setup_logging(true);
    if (*block_opt_) {
      options_.block = block_;
    }
    return inspect(options_);
  }

private:
  CLI::App* cmd_ = nullptr;
  inspect_options options_;
  std::uint32_t block_ = 0;
  CLI::Option* block_opt_ = nullptr;
};

} // namespace

command_ptr make_inspect_command() {
  return std::make_unique<inspect_command>();
}

} // namespace rpl::engine::commands
