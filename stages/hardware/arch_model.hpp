#pragma once
/// A GPU architecture's occupancy limits (and, in `raw`, its cited peak rates), read from the
/// models in configs/arch/*.json that are compiled into the library.

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace rpl::stages {

/// An unknown target or a malformed model. The message names the input and a fix.
class arch_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One wave size's VGPR file on an AMD SIMD.
struct vgpr_file {
  std::uint32_t registers_per_lane = 0; ///< per SIMD lane, shared by all resident waves
  std::uint32_t granule = 0;            ///< a wave's count is rounded up to a multiple of this
};

/// AMD (CDNA, RDNA) occupancy limits. The "unit" is the CU on CDNA and the WGP on RDNA (WGP
/// mode, the gfx10+ compute default): the block of SIMDs whose LDS and barriers a workgroup uses.
struct amd_limits {
  std::string unit; ///< "CU" or "WGP"
  std::uint32_t simds_per_unit = 0;
  std::uint32_t max_waves_per_simd = 0;
  std::map<std::uint32_t, vgpr_file> vgpr_files; ///< by wave size
  std::uint32_t max_vgprs_per_wave = 0;          ///< addressable arch VGPRs
  bool unified_vgpr_agpr = false;                ///< CDNA2+: AGPRs share the VGPR file
  std::uint32_t max_agprs_per_wave = 0;          ///< 0 where there are no AGPRs
  std::uint32_t max_unified_vgprs_per_wave = 0;
  std::uint32_t agpr_offset_alignment = 1; ///< arch VGPRs are aligned to this before the AGPRs
  std::uint32_t max_sgprs_per_wave = 0;
  /// (max SGPRs, waves per SIMD) steps, ascending; empty where SGPRs never limit occupancy.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> waves_by_sgprs;
  std::uint64_t lds_per_unit_bytes = 0;
  std::uint64_t max_lds_per_workgroup_bytes = 0;
  std::uint64_t lds_granule_bytes = 0;
  std::uint32_t max_workgroup_size = 0;
  std::uint32_t barriers_per_unit = 0;
  bool single_wave_workgroup_uses_barrier = false;
};

/// NVIDIA occupancy limits, as cuda_occupancy.h uses them.
struct nvidia_limits {
  std::uint32_t max_warps_per_sm = 0;
  std::uint32_t max_blocks_per_sm = 0;
  std::uint32_t registers_per_sm = 0;
  std::uint32_t registers_per_block = 0;
  std::uint32_t sub_partitions_per_sm = 0;
  std::uint32_t register_allocation_unit_size = 0; ///< registers, allocated per warp
  std::uint32_t max_registers_per_thread = 0;
  std::uint32_t max_threads_per_block = 0;
  std::uint64_t shared_memory_per_sm_bytes = 0;
  std::vector<std::uint64_t> shared_memory_carveouts_bytes; ///< ascending
  std::uint64_t reserved_shared_memory_per_block_bytes = 0;
  std::uint64_t shared_memory_allocation_unit_bytes = 0;
  std::uint64_t max_shared_memory_per_block_bytes = 0; ///< the opt-in limit, reservation excluded
  std::uint64_t default_max_shared_memory_per_block_bytes = 0;
};

/// One architecture model. Exactly one of `amd` and `nvidia` is set.
struct arch_model {
  std::string target;                    ///< canonical name, e.g. "gfx90a", "sm_90"
  std::string vendor;                    ///< "amd" or "nvidia"
  std::string family;                    ///< e.g. "CDNA2", "Hopper"
  std::uint32_t wave_size = 0;           ///< the default wave (warp) size
  std::vector<std::uint32_t> wave_sizes; ///< the supported ones
  std::optional<amd_limits> amd;
  std::optional<nvidia_limits> nvidia;
  nlohmann::json raw; ///< the whole file: every value with its source, products, notes
};

/// Parses one model. `origin` names it in errors ("configs/arch/gfx90a.json"). Every entry of
/// "values" must be {"value", "source"}; the keys the occupancy model needs must be present.
arch_model parse_arch(std::string_view json_text, std::string_view origin);

/// The canonical model name for a target spelling: "gfx90a:xnack-",
/// "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-" → "gfx90a"; "sm_90a", "sm90", "90", "9.0",
/// "compute_90" → "sm_90". Does not check that the model exists.
std::string normalize_target(std::string_view target);

/// Loads the embedded model for `target` (any spelling `normalize_target` accepts).
/// Throws arch_error "unknown target 'gfx1201'; known targets: ...; fix: pass one of them with
/// --arch".
arch_model load_arch(std::string_view target);

/// The names of the embedded models, sorted.
std::vector<std::string> known_targets();

} // namespace rpl::stages
