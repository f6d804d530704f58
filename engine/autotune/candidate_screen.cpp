#include "engine/autotune/candidate_screen.hpp"

#include <exception>
#include <vector>

#include "stages/hardware/code_object_metadata.hpp"
#include "stages/hardware/launch_screen.hpp"

namespace rpl::engine {

namespace {

/// What the screen needs of the launched kernel, whichever source described it.
struct kernel_source {
  std::string name;
  std::string arch;
  stages::launch_screen_input input;
  nlohmann::json resources;
  std::uint32_t registers = 0; ///< per thread (NVIDIA), VGPRs (AMD)
  double spill_bytes = 0;
};

/// From nvcc's report: the entries for the launched kernel, the device's arch first.
std::optional<kernel_source> from_nvcc(const messages::compile_reply& reply,
                                       const std::string& symbol,
                                       const std::string& device_arch,
                                       std::string& skipped) {
  std::vector<const messages::kernel_resource_usage*> found;
  for (const auto& k : reply.resources)
    if (kernel_name_matches(k.name, symbol))
      found.push_back(&k);
  if (found.empty()) {
    skipped = "nvcc reported no resources for kernel " + symbol;
    return std::nullopt;
  }
  const messages::kernel_resource_usage* chosen = nullptr;
  for (const auto* k : found)
    if (!device_arch.empty() && k->arch == device_arch)
      chosen = k;
  if (chosen == nullptr) {
    for (const auto* k : found)
      if (k->arch != found.front()->arch) {
        skipped = "kernel " + symbol + " is built for several architectures (" +
                  found.front()->arch + ", " + k->arch + ") and none is the device's";
        return std::nullopt;
      }
    chosen = found.front();
  }
  kernel_source s;
  s.name = chosen->name;
  s.arch = chosen->arch;
  s.input.kernel =
      stages::kernel_resources::from_nvidia_registers(chosen->registers, chosen->shared_bytes, 0);
  s.registers = chosen->registers;
  s.spill_bytes = static_cast<double>(chosen->spill_store_bytes + chosen->spill_load_bytes);
  s.resources = {{"source", "nvcc --resource-usage"},
                 {"registers", chosen->registers},
                 {"static_shared_bytes", chosen->shared_bytes}};
  return s;
}

/// From the artifact's AMDGPU code objects (hipcc --genco, a bare .hsaco, an offload bundle).
std::optional<kernel_source> from_code_object(const std::filesystem::path& artifact,
                                              const std::string& symbol,
                                              const std::string& device_arch,
                                              std::string& skipped) {
  std::vector<stages::code_object> objects;
  try {
    objects = stages::read_code_objects(artifact);
  } catch (const std::exception& error) {
    skipped = std::string("the artifact is not an AMDGPU code object and the compiler reported no "
                          "resources (") +
              error.what() + ")";
    return std::nullopt;
  }
  std::vector<std::pair<const stages::code_object*, const stages::kernel_metadata*>> found;
  for (const auto& object : objects)
    for (const auto& k : object.kernels)
      if (kernel_name_matches(k.name, symbol))
        found.emplace_back(&object, &k);
  if (found.empty()) {
    skipped = objects.empty() ? "the artifact holds no AMDGPU code object and the compiler "
                                "reported no resources"
                              : "no code object in the artifact has kernel " + symbol;
    return std::nullopt;
  }
  auto chosen = found.front();
  for (const auto& f : found)
    if (!device_arch.empty() && f.first->processor == device_arch)
      chosen = f;
  if (device_arch.empty())
    for (const auto& f : found)
      if (f.first->processor != found.front().first->processor) {
        skipped = "kernel " + symbol + " is built for several architectures (" +
                  found.front().first->processor + ", " + f.first->processor +
                  ") and the device's is unknown";
        return std::nullopt;
      }
  const auto& k = *chosen.second;
  kernel_source s;
  s.name = k.name;
  s.arch = chosen.first->processor;
  s.input.kernel = stages::kernel_resources::from_code_object(k, 0);
  s.registers = k.vgpr_count;
  s.spill_bytes = static_cast<double>(k.private_segment_fixed_size);
  s.input.max_flat_workgroup_size = k.max_flat_workgroup_size;
  s.resources = {{"source", "code object"},
                 {"vgpr_count", k.vgpr_count},
                 {"agpr_count", k.agpr_count},
                 {"sgpr_count", k.sgpr_count},
                 {"static_lds_bytes", k.group_segment_fixed_size},
                 {"max_flat_workgroup_size", k.max_flat_workgroup_size},
                 {"wavefront_size", k.wavefront_size}};
  return s;
}

} // namespace

bool kernel_name_matches(const std::string& reported, const std::string& symbol) {
  if (symbol.empty())
    return false;
  if (reported == symbol)
    return true;
  // Itanium mangling of a function at global scope: _Z<length><name><parameters>.
  const std::string prefix = "_Z" + std::to_string(symbol.size()) + symbol;
  return reported.size() > prefix.size() && reported.compare(0, prefix.size(), prefix) == 0;
}

screen_outcome screen_candidate(const messages::compile_reply& reply,
                                const std::filesystem::path& artifact,
                                const std::optional<messages::kernel_launch>& launch,
                                const std::string& device_arch) {
  screen_outcome out;
  if (!launch) {
    out.skipped = "the launch geometry is unknown (only the kernel lane, --launch, has it)";
    return out;
  }
  try {
    auto source = reply.resources.empty()
                      ? from_code_object(artifact, launch->symbol, device_arch, out.skipped)
                      : from_nvcc(reply, launch->symbol, device_arch, out.skipped);
    if (!source)
      return out;
    stages::arch_model arch;
    try {
      arch = stages::load_arch(source->arch);
    } catch (const stages::arch_error&) {
      out.skipped = "no architecture model for " + source->arch + " (configs/arch/ has " +
                    nlohmann::json(stages::known_targets()).dump() + ")";
      return out;
    }
    auto& in = source->input;
    in.block = {launch->block.x, launch->block.y, launch->block.z};
    in.grid = {launch->grid.x, launch->grid.y, launch->grid.z};
    in.dynamic_shared_bytes = launch->shared_bytes;
    const auto result = stages::screen_launch(arch, in);
    out.refusal = result.refusal;
    out.record = {{"kernel", source->name},
                  {"arch", source->arch},
                  {"model", arch.target},
                  {"resources", source->resources},
                  {"block", {in.block[0], in.block[1], in.block[2]}},
                  {"dynamic_shared_bytes", in.dynamic_shared_bytes},
                  {"occupancy", result.occupancy.occupancy},
                  {"active_waves_per_cu", result.occupancy.active_waves_per_cu},
                  {"limiter", stages::to_string(result.occupancy.limiter)},
                  {"refusal", result.refusal}};
    out.features = std::array<double, 4>{
        static_cast<double>(source->registers),
        static_cast<double>(source->input.kernel.lds_bytes + in.dynamic_shared_bytes),
        source->spill_bytes, result.occupancy.occupancy};
  } catch (const std::exception& error) {
    out.refusal.clear();
    out.record = nullptr;
    out.features.reset();
    out.skipped = std::string("the screen failed: ") + error.what();
  }
  return out;
}

} // namespace rpl::engine
