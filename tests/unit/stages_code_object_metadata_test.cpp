#include <cstring>
#include <random>

#include <gtest/gtest.h>
#include <msgpack.hpp>
#include <nlohmann/json.hpp>

#include "stages/hardware/code_object_metadata.hpp"
#include "support/test_support.hpp"

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
}

std::string metadata_msgpack() {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  pk.pack_map(3);
  pk.pack(std::string("amdhsa.target"));
  pk.pack(std::string("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"));
  pk.pack(std::string("amdhsa.version"));
  pk.pack_array(2);
  pk.pack(1);
  pk.pack(1);
  pk.pack(std::string("amdhsa.kernels"));
  pk.pack_array(1);
  pk.pack_map(9);
  pk.pack(std::string(".name"));
  pk.pack(std::string("_Z4axpyfPKfPfi"));
  pk.pack(std::string(".symbol"));
  pk.pack(std::string("_Z4axpyfPKfPfi.kd"));
  pk.pack(std::string(".vgpr_count"));
  pk.pack(12);
  pk.pack(std::string(".agpr_count"));
  pk.pack(4);
  pk.pack(std::string(".sgpr_count"));
  pk.pack(18);
  pk.pack(std::string(".group_segment_fixed_size"));
  pk.pack(4096);
  pk.pack(std::string(".wavefront_size"));
  pk.pack(64);
  pk.pack(std::string(".uses_dynamic_stack"));
  pk.pack(true);
  pk.pack(std::string(".args"));
  pk.pack_array(1);
  pk.pack_map(4);
  pk.pack(std::string(".offset"));
  pk.pack(8);
  pk.pack(std::string(".size"));
  pk.pack(8);
  pk.pack(std::string(".value_kind"));
  pk.pack(std::string("global_buffer"));
  pk.pack(std::string(".address_space"));
  pk.pack(std::string("global"));
  return {buffer.data(), buffer.size()};
}

/// A minimal AMDGPU ELF64: header, one note section holding `desc` as NT_AMDGPU_METADATA, and the
/// section name table.
bytes make_code_object(const std::string& desc, std::uint16_t machine = 224) {
  bytes out;
  append(out, "\x7f"
              "ELF");
  out.resize(64);
  out[4] = std::byte{2};
  out[5] = std::byte{1};
  out[6] = std::byte{1};
  put(out, 16, 3, 2); // ET_DYN
  put(out, 18, machine, 2);
  put(out, 20, 1, 4);
  put(out, 52, 64, 2); // e_ehsize
  put(out, 54, 56, 2);
  const std::size_t note_at = out.size();
  put(out, note_at, 7, 4); // namesz "AMDGPU\0"
  put(out, note_at + 4, desc.size(), 4);
  put(out, note_at + 8, 32, 4);
  append(out, std::string_view("AMDGPU\0\0", 8));
  append(out, desc);
  while (out.size() % 4 != 0) {
    out.push_back(std::byte{0});
  }
  const std::size_t note_size = out.size() - note_at;
  const std::size_t strtab_at = out.size();
  append(out, std::string_view("\0.note\0.shstrtab\0", 17));
  while (out.size() % 8 != 0) {
    out.push_back(std::byte{0});
  }
  const std::size_t shoff = out.size();
  out.resize(shoff + 3 * 64);
  put(out, shoff + 64 + 0, 1, 4); // .note
  put(out, shoff + 64 + 4, 7, 4); // SHT_NOTE
  put(out, shoff + 64 + 24, note_at, 8);
  put(out, shoff + 64 + 32, note_size, 8);
  put(out, shoff + 64 + 48, 4, 8);
  put(out, shoff + 128 + 0, 7, 4); // .shstrtab
  put(out, shoff + 128 + 4, 3, 4); // SHT_STRTAB
  put(out, shoff + 128 + 24, strtab_at, 8);
  put(out, shoff + 128 + 32, 17, 8);
  put(out, 40, shoff, 8);
  put(out, 58, 64, 2);
  put(out, 60, 3, 2);
  put(out, 62, 2, 2);
  return out;
}

/// A clang offload bundle with an empty host entry and one device entry.
bytes make_bundle(const bytes& device,
                  std::string_view triple = "hipv4-amdgcn-amd-amdhsa--gfx90a") {
  const std::string host = "host-x86_64-unknown-linux-gnu";
  bytes out;
  append(out, "__CLANG_OFFLOAD_BUNDLE__");
  const std::size_t header_end = 24 + 8 + (24 + host.size()) + (24 + triple.size());
  const std::size_t device_at = (header_end + 15) / 16 * 16;
  put(out, out.size(), 2, 8);
  put(out, out.size(), device_at, 8);
  put(out, out.size(), 0, 8);
  put(out, out.size(), host.size(), 8);
  append(out, host);
  put(out, out.size(), device_at, 8);
  put(out, out.size(), device.size(), 8);
  put(out, out.size(), triple.size(), 8);
  append(out, triple);
  out.resize(device_at);
  out.insert(out.end(), device.begin(), device.end());
  return out;
}

std::vector<code_object> parse(const bytes& data, std::string_view origin = "memory.bin") {
  return read_code_objects_from_memory(data, origin);
}

/// Asserts that parsing throws metadata_error whose message names the origin and contains `needle`.
void expect_error(const bytes& data, const std::string& needle = "") {
  try {
    parse(data, "input-under-test.bin");
    ADD_FAILURE() << "expected metadata_error";
  } catch (const metadata_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("input-under-test.bin"), std::string::npos) << message;
    EXPECT_NE(message.find(needle), std::string::npos) << message;
  }
}

TEST(code_object_metadata, reads_a_synthetic_code_object) {
  const auto objects = parse(make_code_object(metadata_msgpack()));
  ASSERT_EQ(objects.size(), 1u);
  const auto& object = objects[0];
  EXPECT_EQ(object.target, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
  EXPECT_EQ(object.processor, "gfx90a");
  EXPECT_EQ(object.features, "sramecc+:xnack-");
  EXPECT_EQ(object.bundle_entry, "");
  ASSERT_EQ(object.kernels.size(), 1u);
  const auto& kernel = object.kernels[0];
  EXPECT_EQ(kernel.name, "_Z4axpyfPKfPfi");
  EXPECT_EQ(kernel.symbol, "_Z4axpyfPKfPfi.kd");
  EXPECT_EQ(kernel.vgpr_count, 12u);
  EXPECT_EQ(kernel.agpr_count, 4u);
  EXPECT_EQ(kernel.sgpr_count, 18u);
  EXPECT_EQ(kernel.group_segment_fixed_size, 4096u);
  EXPECT_TRUE(kernel.uses_dynamic_stack);
  ASSERT_EQ(kernel.args.size(), 1u);
  EXPECT_EQ(kernel.args[0].offset, 8u);
  EXPECT_EQ(kernel.args[0].value_kind, "global_buffer");
  EXPECT_EQ(kernel.args[0].address_space, "global");

  const auto json = to_json(kernel);
  EXPECT_EQ(json.at("vgpr_count"), 12);
  EXPECT_EQ(json.at("group_segment_fixed_size"), 4096);
  EXPECT_EQ(json.at("args").at(0).at("value_kind"), "global_buffer");
}

TEST(code_object_metadata, reads_device_entries_of_a_bundle_and_skips_the_host_entry) {
  const auto objects = parse(make_bundle(make_code_object(metadata_msgpack())));
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_EQ(objects[0].bundle_entry, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  EXPECT_EQ(objects[0].kernels.at(0).vgpr_count, 12u);
}

TEST(code_object_metadata, finds_a_bundle_embedded_in_a_host_elf_without_sections) {
  // A host ELF header (x86-64, no section table) followed by the bundle: the file scan finds it.
  bytes host(64);
  std::memcpy(host.data(),
              "\x7f"
              "ELF\x02\x01\x01",
              7);
  put(host, 18, 62, 2);
  host.resize(200);
  append(host, "__CLANG_OFFLOAD_BUNDLE__ appears here as plain data, not a bundle");
  host.resize(512);
  const auto bundle = make_bundle(make_code_object(metadata_msgpack()));
  host.insert(host.end(), bundle.begin(), bundle.end());
  const auto objects = parse(host);
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_EQ(objects[0].processor, "gfx90a");
}

TEST(code_object_metadata, rejects_an_empty_file_naming_it) {
  rpl::testing::temp_dir dir;
  const auto path = dir / "empty.hsaco";
  rpl::testing::write_file(path, "");
  try {
    read_code_objects(path);
    FAIL() << "expected metadata_error";
  } catch (const metadata_error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
}

TEST(code_object_metadata, rejects_a_missing_file_and_a_text_file) {
  rpl::testing::temp_dir dir;
  EXPECT_THROW(read_code_objects(dir / "missing.hsaco"), metadata_error);
  EXPECT_THROW(read_code_objects(dir.path()), metadata_error);
  const auto text = dir / "notes.txt";
  rpl::testing::write_file(text, "this is a text file, not a code object\n");
  try {
    read_code_objects(text);
    FAIL() << "expected metadata_error";
  } catch (const metadata_error& e) {
    EXPECT_NE(std::string(e.what()).find(text.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not an ELF"), std::string::npos) << e.what();
  }
}

TEST(code_object_metadata, rejects_random_bytes) {
  std::mt19937 rng(7);
  bytes data(4096);
  for (auto& b : data) {
    b = static_cast<std::byte>(rng() & 0xff);
  }
  expect_error(data, "not an ELF");
}

TEST(code_object_metadata, rejects_an_elf_header_with_absurd_offsets) {
  auto data = make_code_object(metadata_msgpack());
  put(data, 40, 0x7fffffffffff0000ull, 8); // e_shoff
  expect_error(data, "e_shoff");
  data = make_code_object(metadata_msgpack());
  put(data, 60, 0xfff0, 2); // e_shnum
  expect_error(data, "section header table");
  data = make_code_object(metadata_msgpack());
  put(data, 32, 0xffffffffffffff00ull, 8); // e_phoff
  put(data, 56, 3, 2);
  expect_error(data, "program header table");
  data = make_code_object(metadata_msgpack());
  data.resize(40);
  expect_error(data, "truncated");
}

TEST(code_object_metadata, rejects_a_truncated_note) {
  auto data = make_code_object(metadata_msgpack());
  put(data, 64 + 4, 1u << 30, 4); // descsz far past the section
  expect_error(data, "note");
  data = make_code_object(metadata_msgpack());
  // The note section's size points past the end of the file.
  const std::size_t section_table = data.size() - 3 * 64;
  put(data, section_table + 64 + 32, data.size(), 8);
  expect_error(data, "note section");
}

TEST(code_object_metadata, rejects_garbage_msgpack) {
  expect_error(make_code_object(std::string("\xdd\xff\xff\xff\xff\xc1\xc1\xc1", 8)), "msgpack");
  expect_error(make_code_object(std::string("\x93\x01\x02\x03", 4)), "not a msgpack map");
  // A map whose kernel list has the wrong type.
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  pk.pack_map(1);
  pk.pack(std::string("amdhsa.kernels"));
  pk.pack(42);
  expect_error(make_code_object(std::string(buffer.data(), buffer.size())), "amdhsa.kernels");
}

TEST(code_object_metadata, rejects_an_amdgpu_elf_without_metadata_and_a_compressed_bundle) {
  auto data = make_code_object(metadata_msgpack());
  put(data, 64 + 8, 1, 4); // a note of another type
  expect_error(data, "no NT_AMDGPU_METADATA");
  bytes compressed;
  append(compressed, "CCOB");
  compressed.resize(64);
  expect_error(compressed, "compressed");
}

TEST(code_object_metadata, rejects_a_bundle_with_an_entry_past_its_end) {
  auto data = make_bundle(make_code_object(metadata_msgpack()));
  data.resize(data.size() - 10);
  expect_error(data, "bundle");
}

TEST(code_object_metadata, returns_no_code_objects_for_host_programs) {
  for (const char* program : {"/bin/true", "/proc/self/exe"}) {
    if (!std::filesystem::exists(program)) {
      continue;
    }
    EXPECT_TRUE(read_code_objects(program).empty()) << program;
  }
}

TEST(code_object_metadata, survives_mutated_and_truncated_inputs) {
  const auto good = make_bundle(make_code_object(metadata_msgpack()));
  std::mt19937 rng(11);
  int errors = 0;
  for (int round = 0; round < 3000; ++round) {
    auto data = good;
    const auto flips = 1 + rng() % 4;
    for (unsigned i = 0; i < flips; ++i) {
      data[rng() % data.size()] = static_cast<std::byte>(rng() & 0xff);
    }
    if (round % 3 == 0) {
      data.resize(rng() % data.size());
    }
    try {
      parse(data);
    } catch (const metadata_error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
}

} // namespace
} // namespace rpl::stages
