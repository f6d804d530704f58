#pragma once
/// The device variables (`__device__`, `__constant__`, `__managed__` globals) an AMDGPU code object
/// defines, from its ELF symbol table: the companion of `code_object_metadata.hpp`, whose
/// metadata note lists kernels and arguments but no variables. Takes the same inputs: a bare code
/// object, an uncompressed clang offload bundle, or a host ELF embedding bundles in `.hip_fatbin`.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stages/hardware/elf_symbols.hpp"

namespace rpl::stages {

/// The variables of one device code object.
struct code_object_variables {
  std::string bundle_entry; ///< the offload bundle triple, as code_object::bundle_entry; empty
                            ///< for a bare code object
  std::vector<device_variable> globals; ///< in symbol-table order
};

/// Every device code object's variables, in the order read_code_objects_from_memory lists the
/// code objects. A variable is an STT_OBJECT symbol with a non-zero size defined in a section,
/// other than a kernel descriptor (`<kernel>.kd`) and the HIP headers' `__HIP_Coordinates`
/// objects (threadIdx, blockDim, ...), which come and go with the code that reads them. Throws
/// metadata_error naming `origin`, the problem and a fix for unreadable input.
std::vector<code_object_variables> read_code_object_globals(std::span<const std::byte> bytes,
                                                            std::string_view origin);

} // namespace rpl::stages
