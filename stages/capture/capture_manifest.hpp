#pragma once
/// The manifest of one captured kernel dispatch (`rocm-perf isolate`, read by `rocm-perf replay`):
/// dispatch.json (kernel, geometry, parameter layout, device) and memory_regions.json (every live
/// device allocation at its original virtual address, with its contents before the dispatch and,
/// where the dispatch changed it, after). Values <-> JSON only; the files are
/// workers/capture/capture_directory.hpp's. Layout: whitepaper §8 (dispatch.json, kernarg.bin, the
/// code object, memory_regions.json, memory/region_<base>.bin), plus after/region_<base>.bin and a
/// format version; schema: docs/schema/capture-dispatch.schema.json and
/// capture-regions.schema.json.

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rpl::stages::capture {

/// The format this code writes and the only one it reads.
inline constexpr int format_version = 1;

/// A capture that cannot be read or replayed as it is: the message names the file, the problem and
/// a fix.
struct capture_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One kernel parameter: where it sits in kernarg.bin and how many bytes it has.
struct kernel_param {
  std::uint32_t offset = 0;
  std::uint32_t size = 0;
};

/// A virtual-address area the driver reserved for itself (an anonymous PROT_NONE mmap of 2 MiB or
/// more, not MAP_FIXED) in the captured process, in the order it asked: its allocations are
/// carved from these, so a replay gives the driver the same areas at the same addresses.
struct va_pool {
  std::uint64_t base = 0; ///< where the kernel put it
  std::uint64_t size = 0;
  std::uint64_t hint = 0; ///< the address the driver asked for (0: none)
};

struct dispatch_manifest {
  int format = format_version;
  std::string backend;              ///< "cuda" (captured through CUPTI) or "hsa"
  std::string kernel;               ///< the kernel's symbol (mangled), as the code object names it
  std::uint64_t dispatch_index = 0; ///< which launch of a kernel matching the regex (0: the first)
  std::string device_name;
  std::string arch; ///< "sm_90", "gfx942"
  int device_ordinal = 0;
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  std::uint32_t dynamic_shared_bytes = 0;
  std::vector<kernel_param> params;
  std::string kernarg_file = "kernarg.bin";
  std::string code_object_file = "code_object.bin";
  std::uint64_t granularity = 0;     ///< the device's VA mapping granularity when captured (bytes)
  std::vector<va_pool> driver_pools; ///< empty when the capture could not see them
  std::vector<std::string> command;  ///< the captured program's argv
  std::int64_t pid = 0;
};

/// One device allocation at its original address.
struct memory_region {
  std::uint64_t base = 0;
  std::uint64_t size = 0;
  std::string file;        ///< contents before the dispatch, relative to the capture directory
  std::string after_file;  ///< contents after it; empty when the dispatch left the region unchanged
  std::uint64_t order = 0; ///< when the program allocated it, among its allocations (from 0)
};

/// "0x7f3a40000000".
std::string hex_address(std::uint64_t value);
/// Parses hex_address's form (or decimal); throws capture_error naming `where`.
std::uint64_t parse_address(const std::string& text, const std::string& where);

/// "memory/region_0x7f3a40000000.bin", "after/region_0x7f3a40000000.bin".
std::string before_file_name(std::uint64_t base);
std::string after_file_name(std::uint64_t base);

/// The size of kernarg.bin that `params` need: the end of the last parameter.
std::uint64_t kernarg_bytes(const std::vector<kernel_param>& params);

nlohmann::json to_json(const dispatch_manifest& manifest);
/// Reads and checks a dispatch.json document; `where` (its path) goes into every error.
dispatch_manifest dispatch_from_json(const nlohmann::json& document, const std::string& where);

nlohmann::json regions_to_json(const std::vector<memory_region>& regions);
/// Reads and checks memory_regions.json: sizes above zero, no two regions overlapping, file names
/// inside the capture directory.
std::vector<memory_region> regions_from_json(const nlohmann::json& document,
                                             const std::string& where);

} // namespace rpl::stages::capture
