#include "stages/hardware/code_object_metadata.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include <msgpack.hpp>
#include <nlohmann/json.hpp>

#include "stages/hardware/integer_rounding.hpp"

namespace rpl::stages {

namespace {

constexpr std::string_view bundle_magic = "__CLANG_OFFLOAD_BUNDLE__";
constexpr std::string_view compressed_bundle_magic = "CCOB";
constexpr std::string_view fix_device_only =
    "to get a bare code object, compile with `hipcc --offload-arch=<gfx> --cuda-device-only "
    "--no-gpu-bundle-output -c k.hip -o k.hsaco`";

constexpr std::uint16_t em_amdgpu = 224;
constexpr std::uint32_t pt_note = 4;
constexpr std::uint32_t sht_note = 7;
constexpr std::uint32_t sht_nobits = 8;
constexpr std::uint32_t nt_amdgpu_metadata = 32;
constexpr std::uint64_t elf64_header_size = 64;
constexpr std::uint64_t elf64_shdr_size = 64;
constexpr std::uint64_t elf64_phdr_size = 56;

[[noreturn]] void fail_metadata(std::string_view origin, const std::string& problem) {
  throw metadata_error(std::string(origin) + ": " + problem);
}

/// True when [offset, offset + size) lies inside a buffer of `total` bytes, without overflow.
bool in_bounds(std::uint64_t offset, std::uint64_t size, std::uint64_t total) {
  return offset <= total && size <= total - offset;
}

bool starts_with(std::span<const std::byte> bytes, std::string_view prefix) {
  return bytes.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), bytes.begin(), [](char c, std::byte b) {
           return static_cast<unsigned char>(c) == std::to_integer<unsigned char>(b);
         });
}

std::string_view as_chars(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

/// Whether `text` is well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points
/// above U+10FFFF), as msgpack strings must be and as JSON output needs.
bool is_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    std::uint32_t code = 0;
    if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
      code = lead & 0x1fu;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      code = lead & 0x0fu;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      code = lead & 0x07u;
    } else {
      return false;
    }
    if (text.size() - i < length) {
      return false;
    }
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0u) != 0x80u) {
        return false;
      }
      code = (code << 6) | (next & 0x3fu);
    }
    if ((length == 3 && (code < 0x800 || (code >= 0xd800 && code <= 0xdfff))) ||
        (length == 4 && (code < 0x10000 || code > 0x10ffff))) {
      return false;
    }
    i += length;
  }
  return true;
}

/// Bounds-checked little-endian loads from a byte range; every failure names the origin.
class byte_reader {
public:
  byte_reader(std::span<const std::byte> bytes, std::string_view origin)
      : bytes_(bytes), origin_(origin) {}

  std::uint64_t size() const { return bytes_.size(); }
  std::span<const std::byte> bytes() const { return bytes_; }
  std::string_view origin() const { return origin_; }

  std::uint16_t u16(std::uint64_t offset, std::string_view what) const {
    return static_cast<std::uint16_t>(load(offset, 2, what));
  }
  std::uint32_t u32(std::uint64_t offset, std::string_view what) const {
    return static_cast<std::uint32_t>(load(offset, 4, what));
  }
  std::uint64_t u64(std::uint64_t offset, std::string_view what) const {
    return load(offset, 8, what);
  }

  /// The sub-range [offset, offset + size), or a metadata_error describing `what`.
  std::span<const std::byte>
  slice(std::uint64_t offset, std::uint64_t size, std::string_view what) const {
    if (!in_bounds(offset, size, bytes_.size())) {
      truncated(offset, size, what);
    }
    return bytes_.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(size));
  }

  [[noreturn]] void
  truncated(std::uint64_t offset, std::uint64_t size, std::string_view what) const {
    fail_metadata(origin_, std::string(what) + " at byte " + std::to_string(offset) + " (" +
                               std::to_string(size) + " bytes) lies outside the " +
                               std::to_string(bytes_.size()) +
                               "-byte input; the file is truncated or corrupt, rebuild it");
  }

private:
  std::uint64_t load(std::uint64_t offset, std::uint64_t width, std::string_view what) const {
    if (!in_bounds(offset, width, bytes_.size())) {
      truncated(offset, width, what);
    }
    std::uint64_t value = 0;
    for (std::uint64_t i = 0; i < width; ++i) {
      value |= static_cast<std::uint64_t>(std::to_integer<unsigned char>(bytes_[offset + i]))
               << (8 * i);
    }
    return value;
  }

  std::span<const std::byte> bytes_;
  std::string_view origin_;
};

struct elf_section {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t offset = 0, size = 0, align = 0;
};

struct elf_segment {
  std::uint32_t type = 0;
  std::uint64_t offset = 0, size = 0, align = 0;
};

/// The parts of an ELF64 little-endian file this reader needs, all validated against the file size.
struct elf_file {
  std::uint16_t machine = 0;
  std::uint32_t flags = 0;
  std::vector<elf_section> sections;
  std::vector<elf_segment> segments;
};

bool is_elf(std::span<const std::byte> bytes) {
  return starts_with(bytes, "\x7f"
                            "ELF");
}

/// Refuses what is not a 64-bit little-endian ELF before any field is read.
void check_elf_ident(const byte_reader& in) {
  const auto origin = in.origin();
  if (in.size() < elf64_header_size) {
    fail_metadata(origin,
                  "ELF header truncated (" + std::to_string(in.size()) +
                      " bytes, an ELF64 header needs 64); the file is truncated, rebuild it");
  }
  const auto ident_class = std::to_integer<unsigned>(in.bytes()[4]);
  const auto ident_data = std::to_integer<unsigned>(in.bytes()[5]);
  if (ident_class != 2) {
    fail_metadata(origin, "32-bit ELF (EI_CLASS " + std::to_string(ident_class) +
                              ") is not supported; AMDGPU code objects and hipcc hosts are ELF64");
  }
  if (ident_data != 1) {
    fail_metadata(origin, "big-endian ELF (EI_DATA " + std::to_string(ident_data) +
                              ") is not supported; AMDGPU code objects are little-endian");
  }
}

/// Where the section and program header tables are, extended counts resolved, both checked to lie
/// inside the file.
struct elf_tables {
  std::uint64_t phoff = 0, phentsize = 0, phnum = 0;
  std::uint64_t shoff = 0, shentsize = 0, shnum = 0, shstrndx = 0;
};

void check_section_table(const byte_reader& in, elf_tables& t) {
  const auto origin = in.origin();
  if (t.shoff >= in.size()) {
    fail_metadata(origin, "e_shoff " + std::to_string(t.shoff) + " lies outside the " +
                              std::to_string(in.size()) +
                              "-byte file; the file is truncated or corrupt, rebuild it");
  }
  if (t.shentsize < elf64_shdr_size) {
    fail_metadata(
        origin,
        "e_shentsize " + std::to_string(t.shentsize) +
            " is smaller than an ELF64 section header (64); the file is corrupt, rebuild it");
  }
  // Huge section counts (>= 0xff00) live in section 0; e_shnum 0 with e_shoff set means that.
  if (t.shnum == 0) {
    t.shnum = in.u64(t.shoff + 32, "section header 0 (sh_size, extended section count)");
  }
  if (t.shstrndx == 0xffff) {
    t.shstrndx = in.u32(t.shoff + 40, "section header 0 (sh_link, extended string table index)");
  }
  if (t.phnum == 0xffff) {
    t.phnum = in.u32(t.shoff + 44, "section header 0 (sh_info, extended program header count)");
  }
  if (t.shnum > in.size() / t.shentsize || !in_bounds(t.shoff, t.shnum * t.shentsize, in.size())) {
    fail_metadata(origin, "section header table (e_shoff " + std::to_string(t.shoff) + ", " +
                              std::to_string(t.shnum) + " entries of " +
                              std::to_string(t.shentsize) + " bytes) lies outside the " +
                              std::to_string(in.size()) +
                              "-byte file; the file is truncated or corrupt, rebuild it");
  }
}

void check_program_table(const byte_reader& in, const elf_tables& t) {
  const auto origin = in.origin();
  if (t.phentsize < elf64_phdr_size) {
    fail_metadata(
        origin,
        "e_phentsize " + std::to_string(t.phentsize) +
            " is smaller than an ELF64 program header (56); the file is corrupt, rebuild it");
  }
  if (t.phnum > in.size() / t.phentsize || !in_bounds(t.phoff, t.phnum * t.phentsize, in.size())) {
    fail_metadata(origin, "program header table (e_phoff " + std::to_string(t.phoff) + ", " +
                              std::to_string(t.phnum) + " entries of " +
                              std::to_string(t.phentsize) + " bytes) lies outside the " +
                              std::to_string(in.size()) +
                              "-byte file; the file is truncated or corrupt, rebuild it");
  }
}

elf_tables read_elf_tables(const byte_reader& in) {
  elf_tables t;
  t.phoff = in.u64(32, "e_phoff");
  t.shoff = in.u64(40, "e_shoff");
  t.phentsize = in.u16(54, "e_phentsize");
  t.phnum = in.u16(56, "e_phnum");
  t.shentsize = in.u16(58, "e_shentsize");
  t.shnum = in.u16(60, "e_shnum");
  t.shstrndx = in.u16(62, "e_shstrndx");
  if (t.shoff != 0) {
    check_section_table(in, t);
  } else {
    t.shnum = 0;
  }
  if (t.phnum != 0) {
    check_program_table(in, t);
  }
  return t;
}

void read_sections(const byte_reader& in, const elf_tables& t, elf_file& elf) {
  std::vector<std::uint64_t> name_offsets;
  for (std::uint64_t i = 0; i < t.shnum; ++i) {
    const auto base = t.shoff + i * t.shentsize;
    elf_section section;
    name_offsets.push_back(in.u32(base + 0, "sh_name"));
    section.type = in.u32(base + 4, "sh_type");
    section.offset = in.u64(base + 24, "sh_offset");
    section.size = in.u64(base + 32, "sh_size");
    section.align = in.u64(base + 48, "sh_addralign");
    elf.sections.push_back(std::move(section));
  }
  // Section names are a convenience (only `.hip_fatbin*` is looked up by name): a missing or
  // out-of-range string table leaves names empty instead of rejecting the file.
  if (t.shstrndx < elf.sections.size()) {
    const auto& strtab = elf.sections[t.shstrndx];
    if (strtab.type != sht_nobits && in_bounds(strtab.offset, strtab.size, in.size())) {
      const auto table = as_chars(in.bytes().subspan(strtab.offset, strtab.size));
      for (std::size_t i = 0; i < elf.sections.size(); ++i) {
        if (name_offsets[i] < table.size()) {
          const auto rest = table.substr(name_offsets[i]);
          elf.sections[i].name = std::string(rest.substr(0, rest.find('\0')));
        }
      }
    }
  }
}

void read_segments(const byte_reader& in, const elf_tables& t, elf_file& elf) {
  for (std::uint64_t i = 0; i < t.phnum; ++i) {
    const auto base = t.phoff + i * t.phentsize;
    elf_segment segment;
    segment.type = in.u32(base + 0, "p_type");
    segment.offset = in.u64(base + 8, "p_offset");
    segment.size = in.u64(base + 32, "p_filesz");
    segment.align = in.u64(base + 48, "p_align");
    elf.segments.push_back(segment);
  }
}

elf_file parse_elf(const byte_reader& in) {
  check_elf_ident(in);
  elf_file elf;
  elf.machine = in.u16(18, "e_machine");
  elf.flags = in.u32(48, "e_flags");
  const elf_tables tables = read_elf_tables(in);
  read_sections(in, tables, elf);
  read_segments(in, tables, elf);
  return elf;
}

// ---------------------------------------------------------------------------------------------
// msgpack metadata

/// Walks the msgpack metadata map, naming the key path in every error.
class metadata_walker {
public:
  explicit metadata_walker(std::string origin) : origin_(std::move(origin)) {}

  const msgpack::object* find(const msgpack::object& map, std::string_view key) const {
    if (map.type != msgpack::type::MAP) {
      return nullptr;
    }
    for (std::uint32_t i = 0; i < map.via.map.size; ++i) {
      const auto& entry = map.via.map.ptr[i];
      if (entry.key.type == msgpack::type::STR &&
          std::string_view(entry.key.via.str.ptr, entry.key.via.str.size) == key) {
        return &entry.val;
      }
    }
    return nullptr;
  }

  std::string
  string_at(const msgpack::object& map, std::string_view key, const std::string& where) const {
    const auto* value = find(map, key);
    if (value == nullptr) {
      return {};
    }
    if (value->type != msgpack::type::STR) {
      wrong_type(where, key, "a string");
    }
    const std::string_view text(value->via.str.ptr, value->via.str.size);
    // Names are printed and written as JSON (inspect, profile), which needs UTF-8 (found by
    // tests/fuzz/fuzz_code_object).
    if (!is_utf8(text)) {
      fail_metadata(origin_, "metadata " + where + " key " + std::string(key) +
                                 " is not UTF-8 text; the code object is corrupt, rebuild it");
    }
    return std::string(text);
  }

  template <class Unsigned>
  void unsigned_at(const msgpack::object& map,
                   std::string_view key,
                   const std::string& where,
                   Unsigned& out) const {
    const auto* value = find(map, key);
    if (value == nullptr) {
      return;
    }
    if (value->type != msgpack::type::POSITIVE_INTEGER) {
      wrong_type(where, key, "a non-negative integer");
    }
    if (value->via.u64 > std::numeric_limits<Unsigned>::max()) {
      fail_metadata(origin_, "metadata " + where + " key " + std::string(key) + " has value " +
                                 std::to_string(value->via.u64) +
                                 ", out of range; the code object is corrupt, rebuild it");
    }
    out = static_cast<Unsigned>(value->via.u64);
  }

  void bool_at(const msgpack::object& map,
               std::string_view key,
               const std::string& where,
               bool& out) const {
    const auto* value = find(map, key);
    if (value == nullptr) {
      return;
    }
    if (value->type != msgpack::type::BOOLEAN) {
      wrong_type(where, key, "a boolean");
    }
    out = value->via.boolean;
  }

  [[noreturn]] void
  wrong_type(const std::string& where, std::string_view key, std::string_view expected) const {
    fail_metadata(origin_, "metadata " + where + " key " + std::string(key) + " is not " +
                               std::string(expected) +
                               "; the NT_AMDGPU_METADATA note is corrupt, rebuild the code object");
  }

  const std::string& origin() const { return origin_; }

private:
  std::string origin_;
};

kernel_metadata
read_kernel(const metadata_walker& walk, const msgpack::object& map, std::size_t index) {
  std::string where = "amdhsa.kernels[" + std::to_string(index) + "]";
  if (map.type != msgpack::type::MAP) {
    fail_metadata(
        walk.origin(),
        "metadata " + where +
            " is not a map; the NT_AMDGPU_METADATA note is corrupt, rebuild the code object");
  }
  kernel_metadata kernel;
  kernel.name = walk.string_at(map, ".name", where);
  if (!kernel.name.empty()) {
    where += " (" + kernel.name + ")";
  }
  kernel.symbol = walk.string_at(map, ".symbol", where);
  walk.unsigned_at(map, ".vgpr_count", where, kernel.vgpr_count);
  walk.unsigned_at(map, ".agpr_count", where, kernel.agpr_count);
  walk.unsigned_at(map, ".sgpr_count", where, kernel.sgpr_count);
  walk.unsigned_at(map, ".vgpr_spill_count", where, kernel.vgpr_spill_count);
  walk.unsigned_at(map, ".sgpr_spill_count", where, kernel.sgpr_spill_count);
  walk.unsigned_at(map, ".wavefront_size", where, kernel.wavefront_size);
  walk.unsigned_at(map, ".max_flat_workgroup_size", where, kernel.max_flat_workgroup_size);
  walk.unsigned_at(map, ".group_segment_fixed_size", where, kernel.group_segment_fixed_size);
  walk.unsigned_at(map, ".private_segment_fixed_size", where, kernel.private_segment_fixed_size);
  walk.unsigned_at(map, ".kernarg_segment_size", where, kernel.kernarg_segment_size);
  walk.unsigned_at(map, ".kernarg_segment_align", where, kernel.kernarg_segment_align);
  walk.bool_at(map, ".uses_dynamic_stack", where, kernel.uses_dynamic_stack);
  if (const auto* args = walk.find(map, ".args"); args != nullptr) {
    if (args->type != msgpack::type::ARRAY) {
      walk.wrong_type(where, ".args", "an array");
    }
    for (std::uint32_t i = 0; i < args->via.array.size; ++i) {
      const auto& arg_map = args->via.array.ptr[i];
      const auto arg_where = where + ".args[" + std::to_string(i) + "]";
      if (arg_map.type != msgpack::type::MAP) {
        fail_metadata(
            walk.origin(),
            "metadata " + arg_where +
                " is not a map; the NT_AMDGPU_METADATA note is corrupt, rebuild the code object");
      }
      kernel_argument arg;
      arg.name = walk.string_at(arg_map, ".name", arg_where);
      arg.type_name = walk.string_at(arg_map, ".type_name", arg_where);
      walk.unsigned_at(arg_map, ".offset", arg_where, arg.offset);
      walk.unsigned_at(arg_map, ".size", arg_where, arg.size);
      arg.value_kind = walk.string_at(arg_map, ".value_kind", arg_where);
      arg.address_space = walk.string_at(arg_map, ".address_space", arg_where);
      kernel.args.push_back(std::move(arg));
    }
  }
  return kernel;
}

/// Processor names by EF_AMDGPU_MACH, for code object v3, whose metadata has no amdhsa.target.
std::string processor_from_flags(std::uint32_t flags) {
  static constexpr std::pair<std::uint32_t, const char*> machs[] = {
      {0x28, "gfx801"},  {0x29, "gfx802"},  {0x2a, "gfx803"},  {0x2b, "gfx810"},  {0x2c, "gfx900"},
      {0x2d, "gfx902"},  {0x2e, "gfx904"},  {0x2f, "gfx906"},  {0x30, "gfx908"},  {0x31, "gfx909"},
      {0x32, "gfx90c"},  {0x33, "gfx1010"}, {0x34, "gfx1011"}, {0x35, "gfx1012"}, {0x36, "gfx1030"},
      {0x37, "gfx1031"}, {0x38, "gfx1032"}, {0x39, "gfx1033"}, {0x3d, "gfx1035"}, {0x3e, "gfx1034"},
      {0x3f, "gfx90a"},  {0x40, "gfx940"},  {0x41, "gfx1100"}, {0x42, "gfx1013"}, {0x44, "gfx1103"},
      {0x45, "gfx1036"}, {0x46, "gfx1101"}, {0x47, "gfx1102"}, {0x4b, "gfx941"},  {0x4c, "gfx942"}};
  for (const auto& [mach, name] : machs) {
    if ((flags & 0xffu) == mach) {
      return name;
    }
  }
  return {};
}

void split_target(code_object& object) {
  // amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-  ->  processor gfx90a, features sramecc+:xnack-
  auto rest = std::string_view(object.target);
  if (const auto dashes = rest.rfind("--"); dashes != std::string_view::npos) {
    rest = rest.substr(dashes + 2);
  } else if (const auto dash = rest.rfind('-'); dash != std::string_view::npos) {
    rest = rest.substr(dash + 1);
  }
  const auto colon = rest.find(':');
  object.processor = std::string(rest.substr(0, colon));
  object.features =
      colon == std::string_view::npos ? std::string() : std::string(rest.substr(colon + 1));
}

code_object decode_metadata(std::span<const std::byte> desc, const std::string& origin) {
  msgpack::object_handle handle;
  try {
    // Every msgpack element takes at least one byte, so no count may exceed the note's size; this
    // keeps a corrupt length prefix from asking for gigabytes.
    const auto limit = desc.size();
    const msgpack::unpack_limit limits(limit, limit, limit, limit, limit, 64);
    handle = msgpack::unpack(reinterpret_cast<const char*>(desc.data()), desc.size(), nullptr,
                             nullptr, limits);
  } catch (const std::exception& e) {
    fail_metadata(
        origin, std::string("NT_AMDGPU_METADATA note is not valid msgpack (") + e.what() +
                    "); the code object is corrupt or was written by an unsupported tool; rebuild "
                    "it with hipcc");
  }
  const auto& root = handle.get();
  if (root.type != msgpack::type::MAP) {
    fail_metadata(
        origin,
        "NT_AMDGPU_METADATA note is not a msgpack map; the code object is corrupt, rebuild it");
  }
  const metadata_walker walk(origin);
  code_object object;
  object.target = walk.string_at(root, "amdhsa.target", "root");
  split_target(object);
  if (const auto* kernels = walk.find(root, "amdhsa.kernels"); kernels != nullptr) {
    if (kernels->type != msgpack::type::ARRAY) {
      walk.wrong_type("root", "amdhsa.kernels", "an array");
    }
    for (std::uint32_t i = 0; i < kernels->via.array.size; ++i) {
      object.kernels.push_back(read_kernel(walk, kernels->via.array.ptr[i], i));
    }
  }
  return object;
}

// ---------------------------------------------------------------------------------------------
// code objects and bundles

/// Finds the NT_AMDGPU_METADATA note in the note ranges (SHT_NOTE sections, PT_NOTE segments).
std::optional<std::span<const std::byte>>
find_metadata_note(const byte_reader& in, const elf_file& elf, bool& saw_legacy_note) {
  std::set<std::pair<std::uint64_t, std::uint64_t>> ranges_seen;
  std::vector<std::pair<std::span<const std::byte>, std::uint64_t>> ranges;
  for (const auto& section : elf.sections) {
    if (section.type == sht_note && ranges_seen.insert({section.offset, section.size}).second) {
      ranges.emplace_back(in.slice(section.offset, section.size, "note section " + section.name),
                          section.align);
    }
  }
  for (const auto& segment : elf.segments) {
    if (segment.type == pt_note && ranges_seen.insert({segment.offset, segment.size}).second) {
      ranges.emplace_back(in.slice(segment.offset, segment.size, "PT_NOTE segment"), segment.align);
    }
  }
  for (const auto& [range, declared_align] : ranges) {
    const byte_reader notes(range, in.origin());
    // ELF notes pad name and description to 4 bytes, or 8 in a range that declares 8-byte
    // alignment.
    const std::uint64_t align = declared_align == 8 ? 8 : 4;
    std::uint64_t pos = 0;
    while (pos < notes.size()) {
      if (notes.size() - pos < 12) {
        fail_metadata(in.origin(), "ELF note at byte " + std::to_string(pos) +
                                       " of a note range has a truncated header; "
                                       "the code object is corrupt, rebuild it");
      }
      const auto namesz = notes.u32(pos, "note namesz");
      const auto descsz = notes.u32(pos + 4, "note descsz");
      const auto type = notes.u32(pos + 8, "note type");
      const auto name_at = pos + 12;
      const auto desc_at = align_up(name_at + namesz, align);
      const auto next = align_up(desc_at + descsz, align);
      if (!in_bounds(name_at, namesz, notes.size()) || !in_bounds(desc_at, descsz, notes.size())) {
        fail_metadata(
            in.origin(),
            "ELF note at byte " + std::to_string(pos) + " of a note range declares " +
                std::to_string(namesz) + "-byte name and " + std::to_string(descsz) +
                "-byte description, past the end of the range; the code object is truncated or "
                "corrupt, rebuild it");
      }
      auto name = as_chars(notes.bytes().subspan(name_at, namesz));
      name = name.substr(0, name.find('\0'));
      if (name == "AMDGPU" && type == nt_amdgpu_metadata) {
        return notes.bytes().subspan(desc_at, descsz);
      }
      if (name == "AMD") {
        saw_legacy_note = true;
      }
      pos = std::min<std::uint64_t>(next, notes.size());
    }
  }
  return std::nullopt;
}

code_object parse_code_object(std::span<const std::byte> bytes,
                              const std::string& origin,
                              std::string bundle_entry) {
  const byte_reader in(bytes, origin);
  const auto elf = parse_elf(in);
  if (elf.machine != em_amdgpu) {
    fail_metadata(origin, "ELF machine " + std::to_string(elf.machine) +
                              " is not AMDGPU (224); this is not an AMDGPU code object; " +
                              std::string(fix_device_only));
  }
  bool saw_legacy_note = false;
  const auto note = find_metadata_note(in, elf, saw_legacy_note);
  if (!note) {
    if (saw_legacy_note) {
      fail_metadata(origin,
                    "code object v2 (YAML metadata in AMD notes) is not supported; rebuild with "
                    "-mcode-object-version=4 or later");
    }
    fail_metadata(origin,
                  "AMDGPU code object has no NT_AMDGPU_METADATA note; it is stripped or corrupt; " +
                      std::string(fix_device_only));
  }
  auto object = decode_metadata(*note, origin);
  if (object.processor.empty()) {
    object.processor = processor_from_flags(elf.flags);
  }
  object.bundle_entry = std::move(bundle_entry);
  return object;
}

bool is_device_triple(std::string_view triple) {
  return triple.starts_with("hipv4-amdgcn-amd-amdhsa") ||
         triple.starts_with("hip-amdgcn-amd-amdhsa");
}

[[noreturn]] void fail_compressed(std::string_view origin) {
  fail_metadata(origin, "compressed clang offload bundle (CCOB) is not supported; rebuild without "
                        "--offload-compress, "
                        "or " +
                            std::string(fix_device_only));
}

/// Parses the bundle that starts at `bundle` (the magic). Offsets inside are relative to the magic.
/// With `strict` false (a whole-file scan that may have hit the magic as plain data) a malformed
/// header returns nullopt instead of throwing; a well-formed bundle with a bad code object still
/// throws. On success `end` is the bundle's length.
std::optional<std::vector<code_object>> parse_bundle(std::span<const std::byte> bundle,
                                                     const std::string& origin,
                                                     bool strict,
                                                     std::uint64_t& end) {
  const byte_reader in(bundle, origin);
  std::vector<std::pair<std::string, std::span<const std::byte>>> entries;
  std::uint64_t pos = bundle_magic.size();
  end = pos;
  std::string problem;
  const auto reject = [&](std::string text) { problem = std::move(text); };
  if (!in_bounds(pos, 8, in.size())) {
    reject("offload bundle header is truncated");
  } else {
    const auto count = in.u64(pos, "bundle entry count");
    pos += 8;
    // Each entry header has at least 24 bytes, which bounds a sane count.
    if (count == 0 || count > (in.size() - pos) / 24) {
      reject("offload bundle declares " + std::to_string(count) + " entries, impossible in its " +
             std::to_string(in.size()) + " bytes");
    }
    for (std::uint64_t i = 0; problem.empty() && i < count; ++i) {
      if (!in_bounds(pos, 24, in.size())) {
        reject("offload bundle entry " + std::to_string(i) + " header is truncated");
        break;
      }
      const auto offset = in.u64(pos, "bundle entry offset");
      const auto size = in.u64(pos + 8, "bundle entry size");
      const auto triple_size = in.u64(pos + 16, "bundle entry triple length");
      pos += 24;
      if (!in_bounds(pos, triple_size, in.size()) || triple_size > 4096) {
        reject("offload bundle entry " + std::to_string(i) + " triple (" +
               std::to_string(triple_size) + " bytes) runs past the end of the bundle");
        break;
      }
      auto triple = std::string(as_chars(in.bytes().subspan(pos, triple_size)));
      pos += triple_size;
      if (!std::all_of(triple.begin(), triple.end(), [](char c) { return c > ' ' && c < 127; })) {
        reject("offload bundle entry " + std::to_string(i) + " triple is not printable text");
        break;
      }
      if (!in_bounds(offset, size, in.size())) {
        reject("offload bundle entry " + std::to_string(i) + " (" + triple + ") at offset " +
               std::to_string(offset) + " with " + std::to_string(size) +
               " bytes runs past the end of the " + std::to_string(in.size()) + "-byte input");
        break;
      }
      end = std::max({end, pos, offset + size});
      entries.emplace_back(std::move(triple), in.bytes().subspan(offset, size));
    }
  }
  if (!problem.empty()) {
    if (!strict) {
      return std::nullopt;
    }
    fail_metadata(origin, problem + "; the bundle is truncated or corrupt, rebuild it");
  }
  std::vector<code_object> objects;
  for (auto& [triple, content] : entries) {
    if (!is_device_triple(triple) || content.empty()) {
      continue; // the host entry is empty; other offload kinds are not AMDGPU code objects
    }
    const auto entry_origin = origin + " (bundle entry " + triple + ")";
    if (starts_with(content, "BC\xc0\xde")) {
      fail_metadata(
          entry_origin,
          "entry is LLVM bitcode (relocatable device code, -fgpu-rdc), which has no metadata "
          "until linked; link the program and read the executable, or " +
              std::string(fix_device_only));
    }
    if (starts_with(content, compressed_bundle_magic)) {
      fail_compressed(entry_origin);
    }
    if (!is_elf(content)) {
      fail_metadata(entry_origin,
                    "entry is not an ELF code object; the bundle is corrupt, rebuild it");
    }
    objects.push_back(parse_code_object(content, entry_origin, triple));
  }
  return objects;
}

/// Every bundle whose magic occurs in `area`; `area_origin` says where `area` lies in the input.
std::vector<code_object>
bundles_in(std::span<const std::byte> area, const std::string& area_origin, bool strict) {
  std::vector<code_object> objects;
  const auto text = as_chars(area);
  std::size_t from = 0;
  while (true) {
    const auto at = text.find(bundle_magic, from);
    if (at == std::string_view::npos) {
      break;
    }
    std::uint64_t length = 0;
    auto found =
        parse_bundle(area.subspan(at), area_origin + " (bundle at byte " + std::to_string(at) + ")",
                     strict, length);
    if (found) {
      std::move(found->begin(), found->end(), std::back_inserter(objects));
      from = at + static_cast<std::size_t>(std::max<std::uint64_t>(length, bundle_magic.size()));
    } else {
      from = at + bundle_magic.size();
    }
  }
  return objects;
}

std::vector<code_object> read_host_elf(const byte_reader& in, const elf_file& elf) {
  const std::string origin(in.origin());
  std::vector<code_object> objects;
  bool have_fatbin_section = false;
  for (const auto& section : elf.sections) {
    if (!section.name.starts_with(".hip_fatbin") || section.type == sht_nobits) {
      continue;
    }
    have_fatbin_section = true;
    const auto area = in.slice(section.offset, section.size, "section " + section.name);
    auto found = bundles_in(area, origin + " (section " + section.name + ")", true);
    if (found.empty()) {
      // The section starts with the bundle, possibly after alignment padding.
      const auto first = as_chars(area).find_first_not_of('\0');
      if (first != std::string_view::npos &&
          starts_with(area.subspan(first), compressed_bundle_magic)) {
        fail_compressed(origin + " (section " + section.name + ")");
      }
    }
    std::move(found.begin(), found.end(), std::back_inserter(objects));
  }
  if (!have_fatbin_section) {
    // No section table or a differently named section: the bundle magic may still be in the file.
    // Plain data can contain the magic too (this very library does), so malformed hits are skipped.
    objects = bundles_in(in.bytes(), origin, false);
  }
  return objects;
}

} // namespace

std::vector<code_object> read_code_objects_from_memory(std::span<const std::byte> bytes,
                                                       std::string_view origin) {
  const std::string name(origin);
  if (bytes.empty()) {
    fail_metadata(name,
                  "file is empty; expected an AMDGPU code object, a clang offload bundle or a "
                  "hipcc-built ELF");
  }
  if (starts_with(bytes, bundle_magic)) {
    std::uint64_t length = 0;
    return *parse_bundle(bytes, name, true, length);
  }
  if (starts_with(bytes, compressed_bundle_magic)) {
    fail_compressed(name);
  }
  if (!is_elf(bytes)) {
    fail_metadata(
        name,
        "not an ELF file or clang offload bundle (no \\x7fELF or __CLANG_OFFLOAD_BUNDLE__ magic); "
        "pass an AMDGPU code object (.hsaco), a bundle, or a hipcc-built executable or library");
  }
  const byte_reader in(bytes, name);
  const auto elf = parse_elf(in);
  if (elf.machine == em_amdgpu) {
    std::vector<code_object> objects;
    objects.push_back(parse_code_object(bytes, name, ""));
    return objects;
  }
  return read_host_elf(in, elf);
}

std::vector<code_object> read_code_objects(const std::filesystem::path& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    throw metadata_error(file.string() +
                         ": is a directory; pass a code object, bundle or hipcc-built ELF file");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw metadata_error(file.string() +
                         ": cannot open for reading; check the path and its permissions");
  }
  // In blocks, not through istreambuf_iterator: a hipcc-built program can be hundreds of MB, and
  // a character at a time took 100 s for a 440 MB test program in the Debug ASan build. Files
  // whose size is not known up front (/proc) read the same way.
  std::vector<char> data;
  constexpr std::size_t block = std::size_t{1} << 20;
  while (in) {
    const std::size_t used = data.size();
    data.resize(used + block);
    in.read(data.data() + used, static_cast<std::streamsize>(block));
    data.resize(used + static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) {
    throw metadata_error(file.string() + ": read failed; check the file and its permissions");
  }
  return read_code_objects_from_memory(std::as_bytes(std::span<const char>(data)), file.string());
}

nlohmann::json to_json(const kernel_metadata& kernel) {
  auto args = nlohmann::json::array();
  for (const auto& arg : kernel.args) {
    args.push_back({{"name", arg.name},
                    {"type_name", arg.type_name},
                    {"offset", arg.offset},
                    {"size", arg.size},
                    {"value_kind", arg.value_kind},
                    {"address_space", arg.address_space}});
  }
  return {{"name", kernel.name},
          {"symbol", kernel.symbol},
          {"vgpr_count", kernel.vgpr_count},
          {"agpr_count", kernel.agpr_count},
          {"sgpr_count", kernel.sgpr_count},
          {"vgpr_spill_count", kernel.vgpr_spill_count},
          {"sgpr_spill_count", kernel.sgpr_spill_count},
          {"wavefront_size", kernel.wavefront_size},
          {"max_flat_workgroup_size", kernel.max_flat_workgroup_size},
          {"group_segment_fixed_size", kernel.group_segment_fixed_size},
          {"private_segment_fixed_size", kernel.private_segment_fixed_size},
          {"kernarg_segment_size", kernel.kernarg_segment_size},
          {"kernarg_segment_align", kernel.kernarg_segment_align},
          {"uses_dynamic_stack", kernel.uses_dynamic_stack},
          {"args", std::move(args)}};
}

} // namespace rpl::stages
