#include "stages/hardware/elf_symbols.hpp"

#include <algorithm>

namespace rpl::stages {

namespace {

constexpr std::uint32_t sht_symtab = 2;
constexpr std::uint32_t elf_sht_nobits = 8;
constexpr std::uint32_t sht_dynsym = 11;
constexpr std::uint32_t sht_symtab_shndx = 18;
constexpr std::uint32_t shn_xindex = 0xffff;
constexpr std::uint64_t header_bytes = 64, section_header_bytes = 64, symbol_bytes = 24;

[[noreturn]] void elf_fail(std::string_view origin, const std::string& problem) {
  throw metadata_error(std::string(origin) + ": " + problem);
}

bool fits(std::uint64_t offset, std::uint64_t size, std::uint64_t total) {
  return offset <= total && size <= total - offset;
}

/// Little-endian loads that name the field and the origin when they would read past the end.
class reader {
public:
  reader(std::span<const std::byte> bytes, std::string_view origin)
      : bytes_(bytes), origin_(origin) {}

  std::uint64_t load(std::uint64_t offset, unsigned width, std::string_view what) const {
    if (!fits(offset, width, bytes_.size())) {
      elf_fail(origin_, std::string(what) + " at byte " + std::to_string(offset) +
                            " lies outside the " + std::to_string(bytes_.size()) +
                            "-byte input; the file is truncated or corrupt, rebuild it");
    }
    std::uint64_t value = 0;
    for (unsigned i = 0; i < width; ++i) {
      value |= std::uint64_t{std::to_integer<unsigned char>(bytes_[offset + i])} << (8 * i);
    }
    return value;
  }
  std::uint32_t u32(std::uint64_t offset, std::string_view what) const {
    return static_cast<std::uint32_t>(load(offset, 4, what));
  }
  std::uint16_t u16(std::uint64_t offset, std::string_view what) const {
    return static_cast<std::uint16_t>(load(offset, 2, what));
  }
  std::uint8_t u8(std::uint64_t offset, std::string_view what) const {
    return static_cast<std::uint8_t>(load(offset, 1, what));
  }

private:
  std::span<const std::byte> bytes_;
  std::string_view origin_;
};

/// The NUL-terminated string at `offset` of a string table; empty when out of range.
std::string string_at(std::span<const std::byte> table, std::uint64_t offset) {
  if (offset >= table.size()) {
    return {};
  }
  const std::string_view text(reinterpret_cast<const char*>(table.data()), table.size());
  const auto rest = text.substr(static_cast<std::size_t>(offset));
  return std::string(rest.substr(0, rest.find('\0')));
}

void read_section_headers(std::span<const std::byte> bytes,
                          std::string_view origin,
                          elf_image& image) {
  const reader in(bytes, origin);
  const auto shoff = in.load(40, 8, "e_shoff");
  const auto shentsize = in.u16(58, "e_shentsize");
  std::uint64_t shnum = in.u16(60, "e_shnum");
  std::uint64_t shstrndx = in.u16(62, "e_shstrndx");
  if (shoff == 0) {
    return; // no section table: nothing to read, which the callers report as no kernels
  }
  if (shentsize < section_header_bytes) {
    elf_fail(origin, "e_shentsize " + std::to_string(shentsize) +
                         " is smaller than an ELF64 section header (64); the file is corrupt, "
                         "rebuild it");
  }
  // Counts that do not fit e_shnum/e_shstrndx live in section header 0.
  if (shnum == 0) {
    shnum = in.load(shoff + 32, 8, "section header 0 sh_size (extended section count)");
  }
  if (shstrndx == shn_xindex) {
    shstrndx = in.u32(shoff + 40, "section header 0 sh_link (extended string table index)");
  }
  if (shnum > bytes.size() / shentsize || !fits(shoff, shnum * shentsize, bytes.size())) {
    elf_fail(origin, "section header table (e_shoff " + std::to_string(shoff) + ", " +
                         std::to_string(shnum) + " entries of " + std::to_string(shentsize) +
                         " bytes) lies outside the " + std::to_string(bytes.size()) +
                         "-byte file; the file is truncated or corrupt, rebuild it");
  }
  std::vector<std::uint32_t> name_offsets;
  for (std::uint64_t i = 0; i < shnum; ++i) {
    const auto base = shoff + i * shentsize;
    elf_section_header section;
    name_offsets.push_back(in.u32(base, "sh_name"));
    section.type = in.u32(base + 4, "sh_type");
    section.flags = in.load(base + 8, 8, "sh_flags");
    section.offset = in.load(base + 24, 8, "sh_offset");
    section.size = in.load(base + 32, 8, "sh_size");
    section.link = in.u32(base + 40, "sh_link");
    section.info = in.u32(base + 44, "sh_info");
    section.entry_size = in.load(base + 56, 8, "sh_entsize");
    image.sections.push_back(std::move(section));
  }
  if (shstrndx >= image.sections.size()) {
    elf_fail(origin, "e_shstrndx " + std::to_string(shstrndx) + " names no section (the file has " +
                         std::to_string(image.sections.size()) +
                         "); the file is corrupt, rebuild it");
  }
  const auto names = section_bytes(bytes, image.sections[shstrndx], origin);
  for (std::size_t i = 0; i < image.sections.size(); ++i) {
    image.sections[i].name = string_at(names, name_offsets[i]);
  }
}

void read_symbols(std::span<const std::byte> bytes, std::string_view origin, elf_image& image) {
  const auto find_type = [&](std::uint32_t type) {
    return std::find_if(image.sections.begin(), image.sections.end(),
                        [type](const elf_section_header& s) { return s.type == type; });
  };
  auto table = find_type(sht_symtab);
  if (table == image.sections.end()) {
    table = find_type(sht_dynsym);
  }
  if (table == image.sections.end()) {
    return;
  }
  const auto table_index = static_cast<std::uint32_t>(table - image.sections.begin());
  if (table->link >= image.sections.size()) {
    elf_fail(origin, "symbol table " + table->name + " links string table " +
                         std::to_string(table->link) +
                         ", which does not exist; the file is "
                         "corrupt, rebuild it");
  }
  const auto entries = section_bytes(bytes, *table, origin);
  const auto strings = section_bytes(bytes, image.sections[table->link], origin);
  std::span<const std::byte> extended;
  for (const auto& section : image.sections) {
    if (section.type == sht_symtab_shndx && section.link == table_index) {
      extended = section_bytes(bytes, section, origin);
    }
  }
  const reader in(entries, std::string(origin) + " (" + table->name + ")");
  const reader ext(extended, std::string(origin) + " (.symtab_shndx)");
  const auto stride = std::max(table->entry_size, symbol_bytes);
  for (std::uint64_t i = 0; i + symbol_bytes <= entries.size(); i += stride) {
    elf_symbol symbol;
    symbol.name = string_at(strings, in.u32(i, "st_name"));
    const auto info = in.u8(i + 4, "st_info");
    symbol.type = static_cast<std::uint8_t>(info & 0xfu);
    symbol.binding = static_cast<std::uint8_t>(info >> 4);
    symbol.other = in.u8(i + 5, "st_other");
    symbol.section = in.u16(i + 6, "st_shndx");
    if (symbol.section == shn_xindex) {
      symbol.section = ext.u32(i / stride * 4, "extended section index");
    }
    symbol.value = in.load(i + 8, 8, "st_value");
    symbol.size = in.load(i + 16, 8, "st_size");
    image.symbols.push_back(std::move(symbol));
  }
}

} // namespace

bool is_elf_file(std::span<const std::byte> bytes) {
  static constexpr unsigned char magic[] = {0x7f, 'E', 'L', 'F'};
  return bytes.size() >= 4 && std::equal(std::begin(magic), std::end(magic), bytes.begin(),
                                         [](unsigned char m, std::byte b) {
                                           return std::to_integer<unsigned char>(b) == m;
                                         });
}

std::span<const std::byte> section_bytes(std::span<const std::byte> bytes,
                                         const elf_section_header& section,
                                         std::string_view origin) {
  if (section.type == elf_sht_nobits) {
    return {};
  }
  if (!fits(section.offset, section.size, bytes.size())) {
    elf_fail(origin, "section " + (section.name.empty() ? std::string("(unnamed)") : section.name) +
                         " (offset " + std::to_string(section.offset) + ", " +
                         std::to_string(section.size) + " bytes) lies outside the " +
                         std::to_string(bytes.size()) +
                         "-byte file; the file is truncated or corrupt, rebuild it");
  }
  return bytes.subspan(static_cast<std::size_t>(section.offset),
                       static_cast<std::size_t>(section.size));
}

elf_image read_elf_image(std::span<const std::byte> bytes, std::string_view origin) {
  if (!is_elf_file(bytes)) {
    elf_fail(origin, "not an ELF file (no \\x7fELF magic); pass a cubin or an AMDGPU code object");
  }
  if (bytes.size() < header_bytes) {
    elf_fail(origin, "ELF header truncated (" + std::to_string(bytes.size()) +
                         " bytes, an ELF64 header needs 64); the file is truncated, rebuild it");
  }
  const reader in(bytes, origin);
  if (in.u8(4, "EI_CLASS") != 2 || in.u8(5, "EI_DATA") != 1) {
    elf_fail(origin, "not a 64-bit little-endian ELF (EI_CLASS " + std::to_string(in.u8(4, "")) +
                         ", EI_DATA " + std::to_string(in.u8(5, "")) +
                         "); cubins and AMDGPU code objects are ELF64 little-endian");
  }
  elf_image image;
  image.os_abi = in.u8(7, "EI_OSABI");
  image.abi_version = in.u8(8, "EI_ABIVERSION");
  image.machine = in.u16(18, "e_machine");
  image.flags = in.u32(48, "e_flags");
  read_section_headers(bytes, origin, image);
  read_symbols(bytes, origin, image);
  return image;
}

} // namespace rpl::stages
