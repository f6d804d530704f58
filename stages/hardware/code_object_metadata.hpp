#pragma once
/// Per-kernel resource usage (registers, LDS, scratch, spills, argument layout) read from AMDGPU
/// code objects: the NT_AMDGPU_METADATA note (msgpack, code object v3 and later) of a bare
/// `.hsaco`, of every device entry of a clang offload bundle, and of the bundles a hipcc-built
/// executable, shared library or object file embeds in `.hip_fatbin`.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rpl::stages {

/// Input that is not a readable ELF, bundle or code object, or whose structure is corrupt. The
/// message names the file, what is wrong and how to get usable input.
class metadata_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One kernel argument as the metadata note lays it out in the kernarg segment.
struct kernel_argument {
  std::string name;                   ///< empty unless compiled with argument names kept
  std::string type_name;              ///< empty unless compiled with argument type names kept
  std::uint64_t offset = 0, size = 0; ///< bytes into the kernarg segment
  std::string value_kind;             ///< by_value, global_buffer, hidden_global_offset_x, ...
  std::string address_space;          ///< global, constant, ... ; empty for by-value arguments
};

/// Resource usage of one kernel, field names as in the AMDGPU metadata note (without the dot).
struct kernel_metadata {
  std::string name;   ///< mangled kernel name
  std::string symbol; ///< kernel descriptor symbol, `<name>.kd`
  std::uint32_t vgpr_count = 0, agpr_count = 0, sgpr_count = 0, vgpr_spill_count = 0,
                sgpr_spill_count = 0, wavefront_size = 64, max_flat_workgroup_size = 0;
  std::uint64_t group_segment_fixed_size = 0;   ///< static LDS bytes per workgroup
  std::uint64_t private_segment_fixed_size = 0; ///< scratch bytes per work-item
  std::uint64_t kernarg_segment_size = 0, kernarg_segment_align = 0;
  bool uses_dynamic_stack = false;
  std::vector<kernel_argument> args;
};

/// One AMDGPU code object (one device architecture).
struct code_object {
  std::string target;    ///< full amdhsa.target, e.g. "amdgcn-amd-amdhsa--gfx90a:xnack-"
  std::string processor; ///< e.g. "gfx90a"
  std::string
      features; ///< target features after the processor, e.g. "sramecc+:xnack-"; may be empty
  std::string bundle_entry; ///< the offload bundle triple; empty for a bare code object
  std::vector<kernel_metadata> kernels;
};

/// Reads every device code object in `file`: a bare code object, an (uncompressed) clang offload
/// bundle, or a host ELF (executable, shared library, object file) that embeds bundles. Returns an
/// empty vector for an ELF without device code. Throws metadata_error for a file that cannot be
/// read, is not ELF or a bundle, or is corrupt.
std::vector<code_object> read_code_objects(const std::filesystem::path& file);

/// As read_code_objects, over bytes already in memory; `origin` names them in error messages.
std::vector<code_object> read_code_objects_from_memory(std::span<const std::byte> bytes,
                                                       std::string_view origin);

/// The kernel as a JSON object with the metadata field names (`vgpr_count`, ..., `args`).
nlohmann::json to_json(const kernel_metadata& kernel);

} // namespace rpl::stages
