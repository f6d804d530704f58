#include <set>
#include <string>

#include <gtest/gtest.h>

#include "stages/search/candidate_key.hpp"

namespace rpl::stages {
namespace {

key_inputs sample_inputs() {
  key_inputs inputs;
  inputs.sources = {{"kernel.hip", "__global__ void k() {}"}};
  inputs.build_argv = {"hipcc", "-O3", "-DTILE=16", "-o", "{OUT}"};
  inputs.toolchain_id = "hipcc 6.1.0";
  inputs.run_argv = {"{BIN}", "--size", "1024"};
  inputs.params = {{"TILE", "16"}, {"UNROLL", "2"}};
  return inputs;
}

bool is_lower_hex(const std::string& text) {
  return text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

TEST(stages_candidate_key, content_hash_is_32_lowercase_hex_characters) {
  for (const char* input : {"", "a", "hello world"}) {
    const std::string hash = content_hash(input);
    EXPECT_EQ(hash.size(), 32u);
    EXPECT_TRUE(is_lower_hex(hash)) << hash;
  }
}

TEST(stages_candidate_key, content_hash_is_stable_across_builds) {
  // Keys are stored in result databases; a change here invalidates every cache.
  EXPECT_EQ(content_hash(""), "c3817c016ba4ff30992acabc5698d28f");
  EXPECT_EQ(content_hash("rocm-perf-lab"), "c0f4a083e10b6a62a979464053964384");
}

TEST(stages_candidate_key, content_hash_halves_differ) {
  const std::string hash = content_hash("x");
  EXPECT_NE(hash.substr(0, 16), hash.substr(16));
}

TEST(stages_candidate_key, content_hash_separates_many_similar_inputs) {
  std::set<std::string> hashes;
  for (int i = 0; i < 10000; ++i) {
    hashes.insert(content_hash("input-" + std::to_string(i)));
  }
  EXPECT_EQ(hashes.size(), 10000u);
  EXPECT_NE(content_hash(std::string(1, '\0')), content_hash(std::string(2, '\0')));
}

TEST(stages_candidate_key, wide_hash_tells_apart_every_single_bit_flip_and_length) {
  // Big enough for the eight-wide loop, the leftover words and the tail bytes (8 x 8 x 3 + 3).
  std::string bytes(8 * 8 * 3 + 8 * 5 + 3, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(i * 37 + 11);
  const std::string base = wide_hash(bytes);
  EXPECT_EQ(base.size(), 32u);
  EXPECT_TRUE(is_lower_hex(base)) << base;
  EXPECT_NE(base.substr(0, 16), base.substr(16));
  std::set<std::string> hashes{base};
  for (std::size_t i = 0; i < bytes.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string flipped = bytes;
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
      hashes.insert(wide_hash(flipped));
    }
  EXPECT_EQ(hashes.size(), 1 + 8 * bytes.size()) << "one flipped bit anywhere changes the hash";
  // Two flips of the same bit in two words of one accumulator (a plain xor-multiply would cancel
  // them: the top bit never reaches the lower ones).
  std::string twice = bytes;
  twice[7] = static_cast<char>(twice[7] ^ 0x80);
  twice[7 + 64] = static_cast<char>(twice[7 + 64] ^ 0x80);
  EXPECT_NE(wide_hash(twice), base);
  for (std::size_t n = 0; n < 40; ++n)
    hashes.insert(wide_hash(std::string(n, '\0')));
  EXPECT_EQ(hashes.size(), 1 + 8 * bytes.size() + 40) << "zeros of every length differ";
  // Toolchain ids are stored (compile cache keys, pinned toolchains): a change here changes them.
  EXPECT_EQ(wide_hash("rocm-perf-lab"), "70b02b9d0b80e0a2c6dee1cda97b582d");
  EXPECT_EQ(wide_hash(""), wide_hash(std::string_view()));
}

TEST(stages_candidate_key, same_inputs_give_the_same_key) {
  EXPECT_EQ(candidate_key(sample_inputs()), candidate_key(sample_inputs()));
  EXPECT_EQ(candidate_key(sample_inputs()).size(), 32u);
}

TEST(stages_candidate_key, every_field_changes_the_key) {
  const std::string base = candidate_key(sample_inputs());
  key_inputs changed = sample_inputs();
  changed.sources[0].second += " ";
  EXPECT_NE(candidate_key(changed), base);
  changed = sample_inputs();
  changed.sources[0].first = "kernel2.hip";
  EXPECT_NE(candidate_key(changed), base);
  changed = sample_inputs();
  changed.build_argv[1] = "-O2";
  EXPECT_NE(candidate_key(changed), base);
  changed = sample_inputs();
  changed.toolchain_id = "hipcc 6.2.0";
  EXPECT_NE(candidate_key(changed), base);
  changed = sample_inputs();
  changed.run_argv.push_back("--verify");
  EXPECT_NE(candidate_key(changed), base);
  changed = sample_inputs();
  changed.params[1].second = "4";
  EXPECT_NE(candidate_key(changed), base);
}

TEST(stages_candidate_key, argument_order_matters) {
  key_inputs a = sample_inputs();
  key_inputs b = sample_inputs();
  std::swap(b.build_argv[1], b.build_argv[2]);
  EXPECT_NE(candidate_key(a), candidate_key(b));
  b = sample_inputs();
  std::swap(b.params[0], b.params[1]);
  EXPECT_NE(candidate_key(a), candidate_key(b));
}

TEST(stages_candidate_key, splitting_an_argument_differently_changes_the_key) {
  key_inputs a;
  a.build_argv = {"ab", "c"};
  key_inputs b;
  b.build_argv = {"a", "bc"};
  key_inputs c;
  c.build_argv = {"abc"};
  EXPECT_NE(candidate_key(a), candidate_key(b));
  EXPECT_NE(candidate_key(a), candidate_key(c));
  EXPECT_NE(candidate_key(b), candidate_key(c));
}

TEST(stages_candidate_key, moving_bytes_between_fields_changes_the_key) {
  key_inputs a;
  a.build_argv = {"x"};
  key_inputs b;
  b.run_argv = {"x"};
  EXPECT_NE(candidate_key(a), candidate_key(b));

  key_inputs c;
  c.toolchain_id = "1:x";
  key_inputs d;
  d.toolchain_id = "";
  d.run_argv = {"x"};
  EXPECT_NE(candidate_key(c), candidate_key(d));

  key_inputs e;
  e.sources = {{"a.hip", "b"}};
  key_inputs f;
  f.sources = {{"a.hi", "pb"}};
  EXPECT_NE(candidate_key(e), candidate_key(f));

  key_inputs g;
  g.params = {{"A", ""}};
  key_inputs h;
  h.params = {{"", "A"}};
  EXPECT_NE(candidate_key(g), candidate_key(h));
}

TEST(stages_candidate_key, empty_argument_is_not_the_same_as_no_argument) {
  key_inputs a;
  a.run_argv = {"bin"};
  key_inputs b;
  b.run_argv = {"bin", ""};
  EXPECT_NE(candidate_key(a), candidate_key(b));
}

} // namespace
} // namespace rpl::stages
