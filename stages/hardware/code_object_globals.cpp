#include "stages/hardware/code_object_globals.hpp"

#include <algorithm>
#include <iterator>

namespace rpl::stages {

namespace {

constexpr std::string_view globals_bundle_magic = "__CLANG_OFFLOAD_BUNDLE__";
constexpr std::string_view globals_compressed_bundle_magic = "CCOB";
constexpr std::uint8_t stt_object = 1;
constexpr std::uint32_t shn_loreserve = 0xff00;
constexpr std::uint64_t bundle_entry_header_bytes = 24;
constexpr std::uint64_t max_triple_bytes = 4096;

constexpr std::string_view globals_fix_device_only =
    "compile with `hipcc --offload-arch=<gfx> --cuda-device-only --no-gpu-bundle-output -c k.hip "
    "-o k.hsaco` and pass that file";

[[noreturn]] void globals_fail(std::string_view origin, const std::string& problem) {
  throw metadata_error(std::string(origin) + ": " + problem);
}

std::string_view as_text(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::uint64_t u64_at(std::span<const std::byte> bytes, std::uint64_t offset) {
  std::uint64_t value = 0;
  for (unsigned i = 0; i < 8; ++i) {
    value |= std::uint64_t{std::to_integer<unsigned char>(bytes[offset + i])} << (8 * i);
  }
  return value;
}

bool globals_is_device_triple(std::string_view triple) {
  return triple.starts_with("hipv4-amdgcn-amd-amdhsa") ||
         triple.starts_with("hip-amdgcn-amd-amdhsa");
}

code_object_variables
read_one(std::span<const std::byte> bytes, const std::string& origin, std::string bundle_entry) {
  const auto image = read_elf_image(bytes, origin);
  if (image.machine != elf_machine_amdgpu) {
    globals_fail(origin, "ELF e_machine is " + std::to_string(image.machine) +
                             ", not 224 (AMDGPU); not a code object: " +
                             std::string(globals_fix_device_only));
  }
  code_object_variables object;
  object.bundle_entry = std::move(bundle_entry);
  for (const auto& symbol : image.symbols) {
    if (symbol.type != stt_object || symbol.size == 0 || symbol.section == 0 ||
        symbol.section >= shn_loreserve || symbol.section >= image.sections.size() ||
        symbol.name.ends_with(".kd") ||
        symbol.name.find("__HIP_Coordinates") != std::string::npos) {
      continue;
    }
    object.globals.push_back({symbol.name, symbol.size, image.sections[symbol.section].name});
  }
  return object;
}

/// The device entries of the bundle that starts `bundle`; `end` becomes the bundle's length.
std::vector<code_object_variables>
read_bundle(std::span<const std::byte> bundle, const std::string& origin, std::uint64_t& end) {
  const auto corrupt = [&](const std::string& problem) {
    globals_fail(origin, problem + "; the bundle is truncated or corrupt, rebuild it");
  };
  std::uint64_t at = globals_bundle_magic.size();
  if (bundle.size() - at < 8) {
    corrupt("offload bundle header is cut short");
  }
  const auto count = u64_at(bundle, at);
  at += 8;
  if (count == 0 || count > (bundle.size() - at) / bundle_entry_header_bytes) {
    corrupt("offload bundle declares " + std::to_string(count) + " entries, impossible in " +
            std::to_string(bundle.size()) + " bytes");
  }
  end = at;
  std::vector<code_object_variables> objects;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (bundle.size() - at < bundle_entry_header_bytes) {
      corrupt("offload bundle entry " + std::to_string(i) + " header is cut short");
    }
    const auto offset = u64_at(bundle, at);
    const auto size = u64_at(bundle, at + 8);
    const auto triple_bytes = u64_at(bundle, at + 16);
    at += bundle_entry_header_bytes;
    if (triple_bytes > max_triple_bytes || triple_bytes > bundle.size() - at) {
      corrupt("offload bundle entry " + std::to_string(i) + " triple runs past the end");
    }
    const std::string triple(as_text(bundle.subspan(at, triple_bytes)));
    at += triple_bytes;
    if (offset > bundle.size() || size > bundle.size() - offset) {
      corrupt("offload bundle entry " + std::to_string(i) + " (" + triple + ") at offset " +
              std::to_string(offset) + " with " + std::to_string(size) + " bytes runs past the " +
              std::to_string(bundle.size()) + "-byte input");
    }
    end = std::max({end, at, offset + size});
    if (!globals_is_device_triple(triple) || size == 0) {
      continue; // the host entry is empty; other offload kinds hold no AMDGPU code object
    }
    const auto content = bundle.subspan(offset, size);
    const auto entry_origin = origin + " (bundle entry " + triple + ")";
    if (!is_elf_file(content)) {
      globals_fail(entry_origin, "entry is not an ELF code object (LLVM bitcode from -fgpu-rdc, or "
                                 "compressed); " +
                                     std::string(globals_fix_device_only));
    }
    objects.push_back(read_one(content, entry_origin, triple));
  }
  return objects;
}

} // namespace

std::vector<code_object_variables> read_code_object_globals(std::span<const std::byte> bytes,
                                                            std::string_view origin) {
  const std::string name(origin);
  const auto text = as_text(bytes);
  if (text.starts_with(globals_compressed_bundle_magic)) {
    globals_fail(name, "compressed clang offload bundle (CCOB) is not supported; rebuild without "
                       "--offload-compress, or " +
                           std::string(globals_fix_device_only));
  }
  std::uint64_t end = 0;
  if (text.starts_with(globals_bundle_magic)) {
    return read_bundle(bytes, name, end);
  }
  if (!is_elf_file(bytes)) {
    globals_fail(name, "neither an ELF code object nor a clang offload bundle; " +
                           std::string(globals_fix_device_only));
  }
  const auto image = read_elf_image(bytes, name);
  if (image.machine == elf_machine_amdgpu) {
    return {read_one(bytes, name, "")};
  }
  std::vector<code_object_variables> objects;
  for (const auto& section : image.sections) {
    if (!section.name.starts_with(".hip_fatbin")) {
      continue;
    }
    const auto area = section_bytes(bytes, section, name);
    const auto area_text = as_text(area);
    for (auto at = area_text.find(globals_bundle_magic); at != std::string_view::npos;
         at = area_text.find(globals_bundle_magic, at + std::max<std::uint64_t>(end, 1))) {
      auto found = read_bundle(
          area.subspan(at),
          name + " (section " + section.name + " at byte " + std::to_string(at) + ")", end);
      std::move(found.begin(), found.end(), std::back_inserter(objects));
    }
  }
  return objects;
}

} // namespace rpl::stages
