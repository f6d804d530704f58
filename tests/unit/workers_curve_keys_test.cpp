// Key files and allow-lists (workers/protocol/curve_keys.hpp): what is read, what is refused.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "workers/protocol/curve_keys.hpp"

namespace rpl::workers {
namespace {

using rpl::testing::temp_dir;
using rpl::testing::write_file;

/// A fresh public key whose first `#` is at `position` (Z85 keys may hold `#`, never first).
std::string key_with_hash(std::size_t position) {
  for (int tries = 0; tries < 100000; ++tries) {
    auto key = generate_keypair().public_key;
    if (key.find('#') == position)
      return key;
  }
  return "";
}

TEST(curve_keys, a_written_pair_reads_back_and_is_private) {
  if (!curve_available())
    GTEST_SKIP() << "this libzmq has no CURVE";
  temp_dir dir;
  const auto pair = generate_keypair();
  EXPECT_TRUE(valid_z85_key(pair.public_key));
  EXPECT_TRUE(valid_z85_key(pair.secret_key));
  write_keypair(dir / "k", pair);
  const auto read = read_keypair(dir / "k");
  EXPECT_EQ(read.public_key, pair.public_key);
  EXPECT_EQ(read.secret_key, pair.secret_key);
  EXPECT_EQ(read_public_key(dir / "k" / "public.key"), pair.public_key);
  EXPECT_THROW(write_keypair(dir / "k", generate_keypair()), curve_error);
  ::chmod((dir / "k" / "secret.key").c_str(), 0640);
  EXPECT_THROW(read_keypair(dir / "k"), curve_error);
}

TEST(curve_keys, allow_lists_take_names_comments_and_keys_holding_hashes) {
  if (!curve_available())
    GTEST_SKIP() << "this libzmq has no CURVE";
  temp_dir dir;
  const auto first = key_with_hash(1);
  const auto middle = key_with_hash(17);
  ASSERT_EQ(first.size(), 40u);
  ASSERT_EQ(middle.size(), 40u);
  const auto plain = generate_keypair().public_key;
  write_file(dir / "allow", "# build hosts\n\n  " + first + "  node-a \n" + middle + "\n#" + plain +
                                " (disabled)\n");
  const auto keys = read_allow_list(dir / "allow");
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys.at(first), "node-a");
  EXPECT_EQ(keys.at(middle), middle.substr(0, 8));
  EXPECT_EQ(keys.count(plain), 0u);
}

TEST(curve_keys, bad_allow_lists_name_the_line) {
  temp_dir dir;
  write_file(dir / "allow", "# ok\nshort-key name\n");
  try {
    read_allow_list(dir / "allow");
    FAIL() << "a malformed key was accepted";
  } catch (const curve_error& error) {
    EXPECT_NE(std::string(error.what()).find("allow:2"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("fix:"), std::string::npos) << error.what();
  }
  write_file(dir / "empty", "# nobody\n");
  EXPECT_THROW(read_allow_list(dir / "empty"), curve_error);
  EXPECT_THROW(read_allow_list(dir / "missing"), curve_error);
  EXPECT_FALSE(valid_z85_key(std::string(40, '"')));
  EXPECT_EQ(z85_from_binary("short"), "");
}

} // namespace
} // namespace rpl::workers
