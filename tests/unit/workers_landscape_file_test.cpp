// Recorded landscapes: Kernel Tuner cache files (plain or gzip) read into a landscape, and our
// export read back to the same, from the hand-made tests/fixtures/landscapes/toy.json.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include "support/test_support.hpp"
#include "workers/lanes/recorded/landscape_file.hpp"

namespace rpl {
namespace {

using stages::landscape;
using stages::landscape_error;

const std::filesystem::path toy = rpl::testing::source_dir / "tests/fixtures/landscapes/toy.json";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const landscape_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(workers_landscape_file, reads_a_kernel_tuner_cache_with_its_failures) {
  const landscape l = workers::load_landscape(toy);
  EXPECT_EQ(l.kernel_name, "toy");
  EXPECT_EQ(l.device_name, "Hand GPU");
  EXPECT_EQ(l.parameters, (std::vector<std::string>{"block_size_x", "tile", "unroll"}));
  ASSERT_EQ(l.entries.size(), 12u);
  std::size_t failed = 0;
  for (const auto& e : l.entries)
    failed += !e.value.has_value();
  EXPECT_EQ(failed, 2u);
  // Python's key "64,2,2.5" and ours are the same; "32,1,1.0" is ours "32,1,1".
  const auto best = l.best();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(stages::cache_key(l.entries[*best].config), "64,2,2.5");
  EXPECT_DOUBLE_EQ(*l.entries[*best].value, 1.25);
  ASSERT_TRUE(l.find("32,1,1.0").has_value());
  EXPECT_EQ(l.find("32,1,1.0"), l.find("32,1,1"));
  EXPECT_DOUBLE_EQ(*l.entries[*l.find("32,1,1")].value, 4.0);
  const auto failed_entry = l.find("128,1,2.5");
  ASSERT_TRUE(failed_entry.has_value());
  EXPECT_EQ(l.entries[*failed_entry].failure, "CompilationFailedConfig");
  EXPECT_EQ(l.cost(*failed_entry), HUGE_VAL);
  // The space: every key, in entry order, with integer and float values as written.
  const auto s = l.as_space();
  EXPECT_EQ(s.configurations.size(), 12u);
  EXPECT_TRUE(std::holds_alternative<double>(*s.configurations[0].find("unroll")));
  EXPECT_TRUE(std::holds_alternative<std::int64_t>(*s.configurations[0].find("tile")));
}

TEST(workers_landscape_file, a_gzip_file_reads_the_same_and_the_export_reads_back) {
  rpl::testing::temp_dir dir;
  const std::string text = rpl::testing::read_text(toy);
  const auto gz = dir / "toy.json.gz";
  gzFile out = gzopen(gz.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(gzwrite(out, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  gzclose(out);
  const landscape l = workers::load_landscape(gz);
  EXPECT_EQ(l.entries.size(), 12u);
  // Export, read back: the same entries and values.
  const auto exported = dir / "export.json";
  std::ofstream(exported) << stages::to_kernel_tuner_cache(l).dump();
  const landscape back = workers::load_landscape(exported);
  ASSERT_EQ(back.entries.size(), l.entries.size());
  for (std::size_t i = 0; i < l.entries.size(); ++i) {
    const auto j = back.find(stages::cache_key(l.entries[i].config));
    ASSERT_TRUE(j.has_value());
    EXPECT_EQ(back.entries[*j].value, l.entries[i].value);
    EXPECT_EQ(back.entries[*j].failure, l.entries[i].failure);
  }
  EXPECT_EQ(back.parameters, l.parameters);
}

TEST(workers_landscape_file, bad_files_are_named_with_the_problem_and_a_fix) {
  rpl::testing::temp_dir dir;
  EXPECT_NE(error_of([&] { workers::load_landscape(dir / "none.json"); }).find("cannot be read"),
            std::string::npos);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
    return dir / name;
  };
  const auto not_json = write("a.json", "{");
  EXPECT_NE(error_of([&] { workers::load_landscape(not_json); }).find("a.json: not a JSON object"),
            std::string::npos);
  const auto no_keys = write("b.json", R"({"cache": {}})");
  EXPECT_NE(error_of([&] { workers::load_landscape(no_keys); }).find("no \"tune_params_keys\""),
            std::string::npos);
  const auto empty = write("c.json", R"({"tune_params_keys": ["x"], "cache": {}})");
  EXPECT_NE(error_of([&] { workers::load_landscape(empty); }).find("the cache is empty"),
            std::string::npos);
  const auto missing = write("d.json", R"({"tune_params_keys": ["x", "y"],
      "cache": {"1,2": {"x": 1, "time": 3.0}}})");
  EXPECT_NE(error_of([&] {
              workers::load_landscape(missing);
            }).find("cache entry \"1,2\" has no value of parameter \"y\""),
            std::string::npos);
  const auto wrong = write("e.json", R"({"tune_params_keys": ["x"],
      "cache": {"1": {"x": 2, "time": 3.0}}})");
  EXPECT_NE(error_of([&] {
              workers::load_landscape(wrong);
            }).find("cache entry \"1\" holds the parameters of \"2\""),
            std::string::npos);
  const auto no_time = write("f.json", R"({"tune_params_keys": ["x"], "cache": {"1": {"x": 1}}})");
  EXPECT_NE(error_of([&] { workers::load_landscape(no_time); }).find("has no \"time\""),
            std::string::npos);
  // A gzip stream cut short.
  const std::string text = rpl::testing::read_text(toy);
  const auto gz = dir / "cut.json.gz";
  gzFile out = gzopen(gz.c_str(), "wb");
  gzwrite(out, text.data(), static_cast<unsigned>(text.size()));
  gzclose(out);
  const std::string whole = rpl::testing::read_text(gz);
  const auto cut = write("cut2.json.gz", whole.substr(0, whole.size() / 2));
  EXPECT_NE(error_of([&] { workers::load_landscape(cut); }).find("gzip stream ends early"),
            std::string::npos)
      << error_of([&] { workers::load_landscape(cut); });
}

} // namespace
} // namespace rpl
