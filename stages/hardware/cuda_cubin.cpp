#include "stages/hardware/cuda_cubin.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>

namespace rpl::stages {

namespace {

constexpr std::uint8_t cubin_stt_object = 1;
constexpr std::uint8_t stt_func = 2;
constexpr std::uint8_t stt_cuda_object = 13; // variables of relocatable (-rdc) cubins
constexpr std::uint8_t sto_cuda_entry = 0x10;
constexpr std::uint32_t cubin_shn_loreserve = 0xff00;

constexpr std::uint8_t eifmt_sval = 0x04;
constexpr std::uint8_t eiattr_param_cbank = 0x0a;
constexpr std::uint8_t eiattr_kparam_info = 0x17;
constexpr std::uint8_t eiattr_cbank_param_size = 0x19;
constexpr std::uint64_t kparam_info_bytes = 12;

constexpr std::uint32_t fatbin_magic = 0xba55ed50;
constexpr std::uint16_t fatbin_kind_elf = 2;
constexpr std::uint64_t fatbin_header_bytes = 16, fatbin_entry_header_bytes = 32;

constexpr std::string_view fix_cubin =
    "compile the kernel with `nvcc -cubin -arch=sm_90 k.cu -o k.cubin` and pass that file";

[[noreturn]] void cubin_fail(std::string_view origin, const std::string& problem) {
  throw metadata_error(std::string(origin) + ": " + problem);
}

std::uint64_t load(std::span<const std::byte> bytes, std::uint64_t offset, unsigned width) {
  std::uint64_t value = 0;
  for (unsigned i = 0; i < width; ++i) {
    value |= std::uint64_t{std::to_integer<unsigned char>(bytes[offset + i])} << (8 * i);
  }
  return value;
}

std::string hex(std::uint64_t value) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string text;
  do {
    text.insert(text.begin(), digits[value % 16]);
    value /= 16;
  } while (value != 0);
  return "0x" + text;
}

/// The SM architecture of a cubin. EI_ABIVERSION 8 (CUDA 13) keeps it in e_flags bits 8..15
/// (0x06005a04 is sm_90); earlier versions in bits 0..7.
std::string arch_of(const elf_image& image) {
  const auto sm = image.abi_version >= 8 ? (image.flags >> 8) & 0xffu : image.flags & 0xffu;
  return "sm_" + std::to_string(sm);
}

/// One `.nv.info.<kernel>` section's parameters and total, records walked in file order.
void read_kernel_info(std::span<const std::byte> info,
                      const std::string& origin,
                      cuda_kernel& kernel) {
  std::optional<std::uint32_t> cbank_param_size, param_cbank_size;
  std::uint64_t at = 0;
  while (at < info.size()) {
    if (info.size() - at < 4) {
      cubin_fail(origin,
                 "record at byte " + std::to_string(at) + " is cut short (" +
                     std::to_string(info.size() - at) +
                     " bytes left, a record header needs 4); the cubin is corrupt, rebuild it");
    }
    const auto format = static_cast<std::uint8_t>(load(info, at, 1));
    const auto attribute = static_cast<std::uint8_t>(load(info, at + 1, 1));
    const auto value = static_cast<std::uint16_t>(load(info, at + 2, 2));
    if (format == 0 || format > eifmt_sval) {
      cubin_fail(origin,
                 "record at byte " + std::to_string(at) + " has unknown format " + hex(format) +
                     " (known: 0x01..0x04); the cubin is corrupt or from an unsupported nvcc, " +
                     std::string(fix_cubin));
    }
    const auto payload_at = at + 4;
    const std::uint64_t payload_bytes = format == eifmt_sval ? value : 0;
    if (payload_bytes > info.size() - payload_at) {
      cubin_fail(origin, "record " + hex(attribute) + " at byte " + std::to_string(at) +
                             " declares " + std::to_string(payload_bytes) + " payload bytes, " +
                             std::to_string(info.size() - payload_at) +
                             " remain; the cubin is truncated or corrupt, rebuild it");
    }
    const auto payload =
        info.subspan(static_cast<std::size_t>(payload_at), static_cast<std::size_t>(payload_bytes));
    if (attribute == eiattr_kparam_info) {
      if (format != eifmt_sval || payload.size() < kparam_info_bytes) {
        cubin_fail(origin, "EIATTR_KPARAM_INFO record at byte " + std::to_string(at) + " holds " +
                               std::to_string(payload.size()) +
                               " bytes, expected 12; the cubin is corrupt, rebuild it");
      }
      cuda_kernel_parameter parameter;
      parameter.ordinal = static_cast<std::uint32_t>(load(payload, 4, 2));
      parameter.offset_bytes = static_cast<std::uint32_t>(load(payload, 6, 2));
      parameter.size_bytes = static_cast<std::uint32_t>(load(payload, 8, 4) >> 18);
      kernel.parameters.push_back(parameter);
    } else if (attribute == eiattr_cbank_param_size) {
      cbank_param_size = value;
    } else if (attribute == eiattr_param_cbank && payload.size() >= 8) {
      param_cbank_size = static_cast<std::uint32_t>(load(payload, 6, 2));
    }
    at = payload_at + payload_bytes;
  }
  kernel.parameter_bytes = cbank_param_size.value_or(param_cbank_size.value_or(0));
  std::sort(kernel.parameters.begin(), kernel.parameters.end(),
            [](const auto& a, const auto& b) { return a.ordinal < b.ordinal; });
  for (std::size_t i = 0; i < kernel.parameters.size(); ++i) {
    const auto& p = kernel.parameters[i];
    if (p.ordinal != i) {
      cubin_fail(origin, "EIATTR_KPARAM_INFO ordinals are not 0.." +
                             std::to_string(kernel.parameters.size() - 1) + " (found ordinal " +
                             std::to_string(p.ordinal) + " at position " + std::to_string(i) +
                             "); the cubin is corrupt, rebuild it");
    }
    if (std::uint64_t{p.offset_bytes} + p.size_bytes > kernel.parameter_bytes) {
      cubin_fail(origin, "parameter " + std::to_string(i) + " (offset " +
                             std::to_string(p.offset_bytes) + ", " + std::to_string(p.size_bytes) +
                             " bytes) ends past the " + std::to_string(kernel.parameter_bytes) +
                             "-byte parameter bank; the cubin is corrupt, rebuild it");
    }
  }
}

bool is_global_section(std::string_view name) {
  if (name.starts_with(".nv.global")) {
    return true; // .nv.global and .nv.global.init
  }
  // User constant banks are `.nv.constant<N>`; bank 0 holds the kernels' parameters.
  return name.starts_with(".nv.constant") && !name.starts_with(".nv.constant0");
}

bool starts_with_fatbin_magic(std::span<const std::byte> bytes) {
  return bytes.size() >= 4 && load(bytes, 0, 4) == fatbin_magic;
}

/// The cubins of the fatbinary that starts `bytes`; `end` becomes its length.
std::vector<cuda_cubin>
read_fatbin(std::span<const std::byte> bytes, const std::string& origin, std::uint64_t& end) {
  if (bytes.size() < fatbin_header_bytes) {
    cubin_fail(origin, "fatbinary header is cut short (" + std::to_string(bytes.size()) +
                           " bytes, needs 16); the file is truncated, rebuild it");
  }
  const auto header_bytes = load(bytes, 6, 2);
  const auto body_bytes = load(bytes, 8, 8);
  if (header_bytes < fatbin_header_bytes || header_bytes > bytes.size() ||
      body_bytes > bytes.size() - header_bytes) {
    cubin_fail(origin, "fatbinary header declares " + std::to_string(header_bytes) + "+" +
                           std::to_string(body_bytes) + " bytes, " + std::to_string(bytes.size()) +
                           " are there; the file is truncated or corrupt, rebuild it");
  }
  end = header_bytes + body_bytes;
  std::vector<cuda_cubin> cubins;
  std::uint64_t at = header_bytes;
  while (at < end) {
    const auto entry_origin = origin + " (fatbinary entry at byte " + std::to_string(at) + ")";
    if (end - at < fatbin_entry_header_bytes) {
      cubin_fail(entry_origin, "entry header is cut short; the fatbinary is corrupt, rebuild it");
    }
    const auto kind = load(bytes, at, 2);
    const auto entry_header_bytes = load(bytes, at + 4, 4);
    const auto payload_bytes = load(bytes, at + 8, 8);
    if (entry_header_bytes < fatbin_entry_header_bytes || entry_header_bytes > end - at ||
        payload_bytes > end - at - entry_header_bytes) {
      cubin_fail(entry_origin, "entry declares " + std::to_string(entry_header_bytes) + "+" +
                                   std::to_string(payload_bytes) + " bytes, " +
                                   std::to_string(end - at) +
                                   " remain; the fatbinary is truncated or corrupt, rebuild it");
    }
    const auto payload = bytes.subspan(static_cast<std::size_t>(at + entry_header_bytes),
                                       static_cast<std::size_t>(payload_bytes));
    if (kind == fatbin_kind_elf) {
      if (!is_elf_file(payload)) {
        cubin_fail(entry_origin, "the cubin entry is compressed, which this reader does not "
                                 "decompress; rebuild with `nvcc --no-compress`, or " +
                                     std::string(fix_cubin));
      }
      cubins.push_back(read_cubin(payload, entry_origin));
    }
    at += entry_header_bytes + payload_bytes;
  }
  return cubins;
}

} // namespace

bool is_cuda_device_code(std::span<const std::byte> bytes) {
  if (starts_with_fatbin_magic(bytes)) {
    return true;
  }
  if (!is_elf_file(bytes) || bytes.size() < 20) {
    return false;
  }
  if (load(bytes, 18, 2) == elf_machine_cuda) {
    return true;
  }
  try {
    const auto image = read_elf_image(bytes, "");
    return std::any_of(image.sections.begin(), image.sections.end(),
                       [](const auto& s) { return s.name == ".nv_fatbin"; });
  } catch (const metadata_error&) {
    return false;
  }
}

cuda_cubin read_cubin(std::span<const std::byte> bytes, std::string_view origin) {
  const auto image = read_elf_image(bytes, origin);
  if (image.machine != elf_machine_cuda) {
    cubin_fail(origin, "ELF e_machine is " + std::to_string(image.machine) +
                           ", not 190 (NVIDIA CUDA); not a cubin: " + std::string(fix_cubin));
  }
  cuda_cubin cubin;
  cubin.arch = arch_of(image);
  const auto& sections = image.sections;
  for (const auto& symbol : image.symbols) {
    if (symbol.section == 0 || symbol.section >= cubin_shn_loreserve ||
        symbol.section >= sections.size()) {
      continue; // undefined (.nv.reservedSmem.offset0, -rdc externs) or absolute
    }
    const auto& home = sections[symbol.section];
    if (symbol.type == stt_func && (symbol.other & sto_cuda_entry) != 0) {
      cuda_kernel kernel;
      kernel.name = symbol.name;
      const auto info_name = ".nv.info." + symbol.name;
      const auto info = std::find_if(sections.begin(), sections.end(),
                                     [&](const auto& s) { return s.name == info_name; });
      if (info != sections.end()) {
        read_kernel_info(section_bytes(bytes, *info, origin),
                         std::string(origin) + " (section " + info_name + ")", kernel);
      }
      cubin.kernels.push_back(std::move(kernel));
    } else if ((symbol.type == cubin_stt_object || symbol.type == stt_cuda_object) &&
               is_global_section(home.name)) {
      cubin.globals.push_back({symbol.name, symbol.size, home.name});
    }
  }
  return cubin;
}

std::vector<cuda_cubin> read_cuda_device_code(std::span<const std::byte> bytes,
                                              std::string_view origin) {
  const std::string name(origin);
  if (bytes.empty()) {
    cubin_fail(name, "file is empty; " + std::string(fix_cubin));
  }
  std::uint64_t end = 0;
  if (starts_with_fatbin_magic(bytes)) {
    return read_fatbin(bytes, name, end);
  }
  if (!is_elf_file(bytes)) {
    cubin_fail(name, "neither a cubin (ELF) nor a fatbinary (magic 0xba55ed50); " +
                         std::string(fix_cubin));
  }
  const auto image = read_elf_image(bytes, name);
  if (image.machine == elf_machine_cuda) {
    return {read_cubin(bytes, name)};
  }
  std::vector<cuda_cubin> cubins;
  bool have_section = false;
  for (const auto& section : image.sections) {
    if (section.name != ".nv_fatbin") {
      continue;
    }
    have_section = true;
    const auto area = section_bytes(bytes, section, name);
    const auto area_origin = name + " (section .nv_fatbin)";
    // One fatbinary per translation unit, each 8-byte aligned, back to back.
    std::uint64_t at = 0;
    while (at < area.size()) {
      if (!starts_with_fatbin_magic(area.subspan(static_cast<std::size_t>(at)))) {
        at += 8 - at % 8;
        continue;
      }
      auto found = read_fatbin(area.subspan(static_cast<std::size_t>(at)),
                               area_origin + " at byte " + std::to_string(at), end);
      std::move(found.begin(), found.end(), std::back_inserter(cubins));
      at += std::max<std::uint64_t>(end, 8);
    }
  }
  if (!have_section) {
    cubin_fail(name, "ELF for e_machine " + std::to_string(image.machine) +
                         " has no .nv_fatbin section, so it holds no NVIDIA device code; " +
                         std::string(fix_cubin));
  }
  return cubins;
}

std::vector<cuda_cubin> read_cuda_device_code(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    cubin_fail(file.string(), "cannot open the file; check the path and its permissions");
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return read_cuda_device_code(std::as_bytes(std::span<const char>(text.data(), text.size())),
                               file.string());
}

} // namespace rpl::stages
