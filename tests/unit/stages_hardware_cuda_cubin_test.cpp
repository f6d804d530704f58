// The cubin reader on hand-made bytes: a minimal cubin laid out as nvcc 13 lays out sm_90 ones
// (tests/integration/stages_optimize_artifact_guard_test.cpp reads real ones), then every way
// of cutting or corrupting it, each refused with an error that names the input.

#include <gtest/gtest.h>

#include "stages/hardware/cuda_cubin.hpp"
#include "stages/optimize/artifact_guard.hpp"

namespace rpl::stages {
namespace {

using bytes = std::vector<std::byte>;

void put(bytes& out, std::size_t at, std::uint64_t value, std::size_t width) {
  if (out.size() < at + width) {
    out.resize(at + width);
  }
  for (std::size_t i = 0; i < width; ++i) {
    out[at + i] = static_cast<std::byte>((value >> (8 * i)) & 0xff);
  }
}

void append(bytes& out, std::string_view text) {
  for (char c : text) {
    out.push_back(static_cast<std::byte>(c));
  }
  out.push_back(std::byte{0});
}

/// One `.nv.info` record; `payload` only for format 0x04 (EIFMT_SVAL).
void record(bytes& out,
            std::uint8_t format,
            std::uint8_t attribute,
            std::uint16_t value,
            const bytes& payload = {}) {
  const auto at = out.size();
  put(out, at, format, 1);
  put(out, at + 1, attribute, 1);
  put(out, at + 2, format == 0x04 ? payload.size() : value, 2);
  out.insert(out.end(), payload.begin(), payload.end());
}

bytes kparam(std::uint16_t ordinal, std::uint16_t offset, std::uint32_t size) {
  bytes payload;
  put(payload, 0, 0, 4);
  put(payload, 4, ordinal, 2);
  put(payload, 6, offset, 2);
  put(payload, 8, (std::uint64_t{size} << 18) | 0x1f000u, 4);
  return payload;
}

/// `scale(float*, int)` and `__device__ float g[4]`, as nvcc writes them: records in reverse
/// ordinal order, then the bank size.
bytes scale_info() {
  bytes info;
  record(info, 0x04, 0x17, 0, kparam(1, 8, 4));
  record(info, 0x04, 0x17, 0, kparam(0, 0, 8));
  record(info, 0x03, 0x1b, 0xff); // EIATTR_MAXREG_COUNT, a half-word record to step over
  record(info, 0x02, 0x4c, 1);    // a byte record
  record(info, 0x03, 0x19, 12);   // EIATTR_CBANK_PARAM_SIZE
  return info;
}

/// A cubin: sections null, .shstrtab, .strtab, .symtab, .nv.info._Z5scalePfi, .text._Z5scalePfi,
/// .nv.global (NOBITS), .nv.constant0._Z5scalePfi.
bytes make_cubin(const bytes& info) {
  const std::vector<std::string> names = {"",
                                          ".shstrtab",
                                          ".strtab",
                                          ".symtab",
                                          ".nv.info._Z5scalePfi",
                                          ".text._Z5scalePfi",
                                          ".nv.global",
                                          ".nv.constant0._Z5scalePfi"};
  bytes shstrtab;
  std::vector<std::size_t> name_at;
  for (const auto& name : names) {
    name_at.push_back(shstrtab.size());
    append(shstrtab, name);
  }
  bytes strtab;
  append(strtab, "");
  append(strtab, "_Z5scalePfi");
  append(strtab, "g");
  bytes symtab(24, std::byte{0}); // symbol 0
  const auto symbol = [&](std::uint32_t name, std::uint8_t info_byte, std::uint8_t other,
                          std::uint16_t section, std::uint64_t size) {
    const auto at = symtab.size();
    put(symtab, at, name, 4);
    put(symtab, at + 4, info_byte, 1);
    put(symtab, at + 5, other, 1);
    put(symtab, at + 6, section, 2);
    put(symtab, at + 8, 0, 8);
    put(symtab, at + 16, size, 8);
  };
  symbol(1, 0x12, 0x10, 5, 256); // GLOBAL FUNC, STO_CUDA_ENTRY, in .text._Z5scalePfi
  symbol(13, 0x01, 0x00, 6, 16); // LOCAL OBJECT in .nv.global
  const bytes text(128, std::byte{0});
  const bytes constant0(0x21c, std::byte{0});

  bytes out(64, std::byte{0});
  const std::vector<const bytes*> contents = {nullptr, &shstrtab, &strtab, &symtab,
                                              &info,   &text,     nullptr, &constant0};
  std::vector<std::size_t> offsets(names.size(), 0);
  for (std::size_t i = 1; i < names.size(); ++i) {
    offsets[i] = out.size();
    if (contents[i] != nullptr) {
      out.insert(out.end(), contents[i]->begin(), contents[i]->end());
    }
  }
  while (out.size() % 8 != 0) {
    out.push_back(std::byte{0});
  }
  const auto shoff = out.size();
  const std::vector<std::uint32_t> types = {0, 3, 3, 2, 0x70000000, 1, 8, 1};
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto at = shoff + i * 64;
    put(out, at, name_at[i], 4);
    put(out, at + 4, types[i], 4);
    put(out, at + 24, offsets[i], 8);
    put(out, at + 32, i == 6 ? 16 : (contents[i] != nullptr ? contents[i]->size() : 0), 8);
    put(out, at + 40, i == 3 ? 2 : 0, 4); // .symtab links .strtab
    put(out, at + 56, i == 3 ? 24 : 0, 8);
  }
  const unsigned char ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x41, 8};
  for (std::size_t i = 0; i < sizeof ident; ++i) {
    out[i] = static_cast<std::byte>(ident[i]);
  }
  put(out, 16, 2, 2);         // ET_EXEC
  put(out, 18, 190, 2);       // EM_CUDA
  put(out, 40, shoff, 8);     // e_shoff
  put(out, 48, 0x6005a04, 4); // e_flags: sm_90 under EI_ABIVERSION 8
  put(out, 52, 64, 2);        // e_ehsize
  put(out, 58, 64, 2);        // e_shentsize
  put(out, 60, names.size(), 2);
  put(out, 62, 1, 2); // e_shstrndx
  return out;
}

std::string read_error(const bytes& input) {
  try {
    read_cubin(input, "k.cubin");
  } catch (const metadata_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(cuda_cubin, reads_kernel_parameters_and_globals_of_a_minimal_cubin) {
  const auto cubin = read_cubin(make_cubin(scale_info()), "k.cubin");
  EXPECT_EQ(cubin.arch, "sm_90");
  ASSERT_EQ(cubin.kernels.size(), 1u);
  const auto& kernel = cubin.kernels[0];
  EXPECT_EQ(kernel.name, "_Z5scalePfi");
  EXPECT_EQ(kernel.parameter_bytes, 12u);
  ASSERT_EQ(kernel.parameters.size(), 2u);
  EXPECT_EQ(kernel.parameters[0].offset_bytes, 0u);
  EXPECT_EQ(kernel.parameters[0].size_bytes, 8u);
  EXPECT_EQ(kernel.parameters[1].ordinal, 1u);
  EXPECT_EQ(kernel.parameters[1].offset_bytes, 8u);
  EXPECT_EQ(kernel.parameters[1].size_bytes, 4u);
  ASSERT_EQ(cubin.globals.size(), 1u);
  EXPECT_EQ(cubin.globals[0].name, "g");
  EXPECT_EQ(cubin.globals[0].size_bytes, 16u);
  EXPECT_EQ(cubin.globals[0].section, ".nv.global");
}

TEST(cuda_cubin, every_truncation_is_an_error_naming_the_input) {
  const auto whole = make_cubin(scale_info());
  for (std::size_t length = 0; length < whole.size(); length += 7) {
    const bytes cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(length));
    const auto error = read_error(cut);
    EXPECT_TRUE(error.starts_with("k.cubin: ")) << length << ": " << error;
  }
  EXPECT_NE(read_error(bytes(whole.begin(), whole.begin() + 40)).find("ELF header truncated"),
            std::string::npos);
  EXPECT_NE(read_error(bytes(whole.begin(), whole.begin() + 600)).find("truncated or corrupt"),
            std::string::npos);
}

TEST(cuda_cubin, a_record_longer_than_its_section_is_refused) {
  auto info = scale_info();
  put(info, 2, 200, 2); // the first KPARAM_INFO now claims 200 payload bytes
  const auto error = read_error(make_cubin(info));
  EXPECT_NE(error.find("k.cubin (section .nv.info._Z5scalePfi): record 0x17 at byte 0 declares "
                       "200 payload bytes"),
            std::string::npos)
      << error;
}

TEST(cuda_cubin, an_unknown_record_format_is_refused) {
  auto info = scale_info();
  info[0] = std::byte{0x09};
  const auto error = read_error(make_cubin(info));
  EXPECT_NE(error.find("unknown format 0x9"), std::string::npos) << error;
  EXPECT_NE(error.find("nvcc -cubin"), std::string::npos) << error;
}

TEST(cuda_cubin, parameters_past_the_bank_or_missing_ordinals_are_refused) {
  bytes gap;
  record(gap, 0x04, 0x17, 0, kparam(1, 8, 4));
  record(gap, 0x03, 0x19, 12);
  EXPECT_NE(read_error(make_cubin(gap)).find("ordinals are not 0..0"), std::string::npos);
  bytes past;
  record(past, 0x04, 0x17, 0, kparam(0, 8, 8));
  record(past, 0x03, 0x19, 12);
  EXPECT_NE(read_error(make_cubin(past)).find("ends past the 12-byte parameter bank"),
            std::string::npos);
}

TEST(cuda_cubin, a_fatbinary_yields_its_cubin_and_refuses_a_compressed_one) {
  const auto cubin = make_cubin(scale_info());
  bytes fatbin;
  put(fatbin, 0, 0xba55ed50, 4);
  put(fatbin, 4, 1, 2);
  put(fatbin, 6, 16, 2);
  put(fatbin, 8, 64 + cubin.size(), 8);
  put(fatbin, 16, 2, 2); // kind: ELF
  put(fatbin, 18, 0x101, 2);
  put(fatbin, 20, 64, 4); // entry header bytes
  put(fatbin, 24, cubin.size(), 8);
  put(fatbin, 16 + 28, 90, 4); // sm_90
  fatbin.resize(16 + 64);
  fatbin.insert(fatbin.end(), cubin.begin(), cubin.end());
  const auto read = read_cuda_device_code(fatbin, "k.fatbin");
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].kernels.at(0).name, "_Z5scalePfi");

  fatbin[80] = std::byte{0}; // the payload no longer starts with \x7fELF: as if compressed
  try {
    read_cuda_device_code(fatbin, "k.fatbin");
    ADD_FAILURE() << "a compressed entry was accepted";
  } catch (const metadata_error& e) {
    EXPECT_NE(std::string(e.what()).find("k.fatbin (fatbinary entry at byte 16): the cubin "
                                         "entry is compressed"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--no-compress"), std::string::npos);
  }
}

TEST(cuda_cubin, the_guard_reports_corrupt_bytes_as_unreadable_never_throwing) {
  const auto good = make_cubin(scale_info());
  const bytes cut(good.begin(), good.begin() + 300);
  const auto findings = optimize::check_artifact(good, cut, "scale", "candidate 3");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].guard, "unreadable");
  EXPECT_TRUE(findings[0].detail.starts_with("candidate 3: ")) << findings[0].detail;

  const auto both = optimize::check_artifact(cut, cut, "scale", "candidate 3");
  ASSERT_EQ(both.size(), 1u);
  EXPECT_NE(both[0].detail.find("the original is unreadable too"), std::string::npos);

  const bytes noise = {std::byte{1}, std::byte{2}, std::byte{3}};
  const auto names = optimize::kernel_names(noise, "noise.bin");
  EXPECT_TRUE(names.names.empty());
  EXPECT_NE(names.error.find("noise.bin: not a cubin"), std::string::npos) << names.error;
  EXPECT_EQ(optimize::kernel_names(good, "k.cubin").names, std::vector<std::string>{"_Z5scalePfi"});
}

} // namespace
} // namespace rpl::stages
