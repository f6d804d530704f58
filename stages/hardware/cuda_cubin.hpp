#pragma once
/// The kernels, parameter layouts and device variables of NVIDIA device code: a cubin (an ELF
/// with e_machine EM_CUDA, as `nvcc -cubin -arch=sm_90` writes it), the uncompressed ELF entries
/// of a fatbinary (`nvcc -fatbin`), or the `.nv_fatbin` section of a host object, executable or
/// library built by nvcc.
///
/// Where each fact lives in a cubin (checked against `cuobjdump -elf` on nvcc 13 sm_90 output):
/// - a kernel is an STT_FUNC symbol whose st_other carries STO_CUDA_ENTRY (0x10); device
///   functions kept with -rdc have `.nv.info.<name>` sections too, so that section marks nothing;
/// - `.nv.info.<kernel>` is a list of records `u8 format, u8 attribute, u16 value-or-size`, where
///   format 0x04 (EIFMT_SVAL) is followed by `size` payload bytes and formats 0x01..0x03 (no
///   value, byte, half-word) carry their value in those two bytes;
/// - EIATTR_KPARAM_INFO (0x17, 12 bytes) is one parameter: u32 index, u16 ordinal, u16 offset
///   into the parameter bank, u32 flags whose bits 18..31 are the size in bytes;
/// - EIATTR_CBANK_PARAM_SIZE (0x19, half-word) is the parameters' total bytes, also the size in
///   EIATTR_PARAM_CBANK (0x0a: u32 symbol of `.nv.constant0.<kernel>`, u16 offset, u16 size);
/// - device variables are STT_OBJECT symbols (type 13 in -rdc cubins) defined in `.nv.global`
///   (uninitialised `__device__`), `.nv.global.init` (initialised) or a user constant bank
///   `.nv.constant<N>` (`__constant__`, bank 3 on sm_90); `.nv.constant0.<kernel>` is the
///   driver's parameter bank and `.nv.shared.<kernel>` per-block shared memory, neither a global.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stages/hardware/elf_symbols.hpp"

namespace rpl::stages {

/// One kernel parameter as the driver copies it into the parameter bank.
struct cuda_kernel_parameter {
  std::uint32_t ordinal = 0;      ///< position in the signature, from 0
  std::uint32_t offset_bytes = 0; ///< into the parameter bank
  std::uint32_t size_bytes = 0;
};

/// One `__global__` function of a cubin.
struct cuda_kernel {
  std::string name;                              ///< mangled, as cuModuleGetFunction takes it
  std::vector<cuda_kernel_parameter> parameters; ///< by ordinal
  std::uint32_t parameter_bytes = 0;             ///< EIATTR_CBANK_PARAM_SIZE; 0 without parameters
};

/// What one cubin (one SM architecture) defines.
struct cuda_cubin {
  std::string arch;                     ///< "sm_90", from e_flags
  std::vector<cuda_kernel> kernels;     ///< in symbol-table order
  std::vector<device_variable> globals; ///< in symbol-table order
};

/// Whether `bytes` are NVIDIA device code this reader takes: a cubin, a fatbinary, or a host ELF
/// with a `.nv_fatbin` section. Corrupt input may still pass this test and fail to read.
bool is_cuda_device_code(std::span<const std::byte> bytes);

/// Reads one cubin. Throws metadata_error naming `origin`, the record or field that is wrong and
/// a fix, for input that is not a cubin or is truncated or corrupt.
cuda_cubin read_cubin(std::span<const std::byte> bytes, std::string_view origin);

/// Every cubin in `bytes`: the cubin itself, or the ELF entries of a fatbinary or of a host ELF's
/// `.nv_fatbin` section (PTX entries skipped). Throws metadata_error as read_cubin, and for a
/// compressed fatbinary entry (rebuild with `nvcc --no-compress`, or pass the cubin that
/// `nvcc -cubin` writes).
std::vector<cuda_cubin> read_cuda_device_code(std::span<const std::byte> bytes,
                                              std::string_view origin);

/// As above, reading `file` first; errors name the file.
std::vector<cuda_cubin> read_cuda_device_code(const std::filesystem::path& file);

} // namespace rpl::stages
