#pragma once
/// The section headers and symbol table of an ELF64 little-endian file in memory, every offset
/// checked against the input: what the cubin reader (`cuda_cubin.hpp`) and the AMDGPU globals
/// reader (`code_object_globals.hpp`) need, for both vendors' device code objects.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stages/hardware/code_object_metadata.hpp"

namespace rpl::stages {

/// One section header, its name resolved through `.shstrtab` (empty when the table is missing).
struct elf_section_header {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t flags = 0, offset = 0, size = 0;
  std::uint32_t link = 0, info = 0;
  std::uint64_t entry_size = 0;
};

/// One symbol-table entry. `section` is the resolved section index (SHN_XINDEX followed through
/// `.symtab_shndx`); 0 for an undefined symbol, >= 0xff00 for the reserved ones (SHN_ABS, ...).
struct elf_symbol {
  std::string name;
  std::uint64_t value = 0, size = 0;
  std::uint8_t type = 0;    ///< STT_*: 1 object, 2 function, 3 section, 13 CUDA object (-rdc)
  std::uint8_t binding = 0; ///< STB_*: 0 local, 1 global, 2 weak
  std::uint8_t other = 0;   ///< st_other: visibility, and NVIDIA's STO_CUDA_ENTRY (0x10)
  std::uint32_t section = 0;
};

/// What the readers keep of one ELF file. The symbols are `.symtab`'s, or `.dynsym`'s where the
/// file has no `.symtab` (a stripped AMDGPU code object keeps its dynamic symbols).
struct elf_image {
  std::uint16_t machine = 0; ///< e_machine: 190 NVIDIA CUDA, 224 AMDGPU
  std::uint8_t os_abi = 0, abi_version = 0;
  std::uint32_t flags = 0; ///< e_flags
  std::vector<elf_section_header> sections;
  std::vector<elf_symbol> symbols;
};

/// A device variable a code object defines: a `__device__`, `__constant__` or `__managed__`
/// global, as its symbol names it (mangled where C++ mangles it).
struct device_variable {
  std::string name;
  std::uint64_t size_bytes = 0;
  std::string section; ///< where it lives: `.nv.global`, `.nv.constant3`, `.bss`, `.data`, ...
};

constexpr std::uint16_t elf_machine_cuda = 190;
constexpr std::uint16_t elf_machine_amdgpu = 224;

/// Whether `bytes` start with the ELF magic.
bool is_elf_file(std::span<const std::byte> bytes);

/// Reads the section headers and the symbol table. Throws metadata_error naming `origin`, the
/// field that lies outside the input and a fix, for anything that is not a well-formed 64-bit
/// little-endian ELF file.
elf_image read_elf_image(std::span<const std::byte> bytes, std::string_view origin);

/// The bytes of `section` (empty for SHT_NOBITS); throws metadata_error when they lie outside.
std::span<const std::byte> section_bytes(std::span<const std::byte> bytes,
                                         const elf_section_header& section,
                                         std::string_view origin);

} // namespace rpl::stages
