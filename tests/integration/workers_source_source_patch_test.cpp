#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "workers/source/source_patch.hpp"

namespace rpl::workers {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const fs::path& path, const std::string& bytes, unsigned mode = 0644) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  ::chmod(path.c_str(), static_cast<mode_t>(mode));
}

unsigned mode_of(const fs::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return static_cast<unsigned>(info.st_mode & 07777);
}

class source_patch_test : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "rpl-source-patch-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    backup_ = dir_ / "backup";
  }
  void TearDown() override {
    // Folders a test made read-only must be writable again to be removed.
    for (const auto& entry : fs::recursive_directory_iterator(dir_)) {
      if (entry.is_directory()) {
        ::chmod(entry.path().c_str(), 0700);
      }
    }
    fs::remove_all(dir_);
  }

  fs::path dir_;
  fs::path backup_;
};

TEST_F(source_patch_test, patches_then_rolls_back_byte_identically_with_modes) {
  struct original {
    fs::path path;
    std::string before;
    std::string after;
    unsigned mode;
  };
  const std::string binary("\0\x01\xff\xfe\r\n\x7f tail\0", 12);
  const std::vector<original> files = {
      {dir_ / "kernel.cpp", "int main() {\n  return 0;\n}\n", "int main() {\n  return 1;\n}\n",
       0640},
      {dir_ / "no_newline.hpp", "#pragma once\nint f();", "#pragma once\nint g();", 0644},
      {dir_ / "blob.bin", binary, binary + "x", 0600},
      {dir_ / "windows.cpp", "a\r\nb\r\n", "a\r\nB\r\n", 0755},
      {dir_ / "emptied.txt", "gone\n", "", 0640},
  };
  std::vector<file_change> changes;
  for (const auto& f : files) {
    write_all(f.path, f.before, f.mode);
    changes.push_back({f.path, f.before, f.after});
  }

  const source_patch_result applied = apply_with_backup(changes, backup_);
  ASSERT_TRUE(applied.ok) << applied.error;
  EXPECT_EQ(applied.changed.size(), files.size());
  EXPECT_NE(applied.message.find("patched 5 files"), std::string::npos) << applied.message;
  for (const auto& f : files) {
    EXPECT_EQ(read_all(f.path), f.after) << f.path;
    EXPECT_EQ(mode_of(f.path), f.mode) << f.path;
  }
  // No temporary file is left beside the sources.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir_)) {
    ++entries;
  }
  EXPECT_EQ(entries, files.size() + 1);

  const nlohmann::json manifest = nlohmann::json::parse(read_all(backup_ / "manifest.json"));
  ASSERT_EQ(manifest.at("files").size(), files.size());
  EXPECT_EQ(manifest["files"][0]["path"], fs::canonical(files[0].path).string());
  EXPECT_EQ(manifest["files"][0]["mode_octal"], "0640");
  EXPECT_EQ(manifest["files"][2]["before"]["size"], binary.size());
  EXPECT_EQ(read_all(backup_ / manifest["files"][2]["backup"].get<std::string>()), binary);

  const source_patch_result rolled_back = rollback(backup_);
  ASSERT_TRUE(rolled_back.ok) << rolled_back.error;
  EXPECT_EQ(rolled_back.changed.size(), files.size());
  for (const auto& f : files) {
    EXPECT_EQ(read_all(f.path), f.before) << f.path;
    EXPECT_EQ(mode_of(f.path), f.mode) << f.path;
  }

  const source_patch_result again = rollback(backup_);
  ASSERT_TRUE(again.ok) << again.error;
  EXPECT_TRUE(again.changed.empty());
  EXPECT_EQ(again.unchanged.size(), files.size());
  EXPECT_NE(again.message.find("already holds its original content"), std::string::npos)
      << again.message;
}

TEST_F(source_patch_test, refuses_every_file_when_one_changed_since_the_run) {
  write_all(dir_ / "a.cpp", "a\n");
  write_all(dir_ / "b.cpp", "b edited by the user\n");
  const source_patch_result r =
      apply_with_backup({{dir_ / "a.cpp", "a\n", "A\n"}, {dir_ / "b.cpp", "b\n", "B\n"}}, backup_);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(
      r.error.find(fs::canonical(dir_ / "b.cpp").string() + ": changed since the run started"),
      std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("fix: rerun optimize"), std::string::npos) << r.error;
  EXPECT_EQ(read_all(dir_ / "a.cpp"), "a\n");
  EXPECT_EQ(read_all(dir_ / "b.cpp"), "b edited by the user\n");
  EXPECT_FALSE(fs::exists(backup_ / "manifest.json"));
}

TEST_F(source_patch_test, puts_back_patched_files_when_a_later_one_cannot_be_written) {
  if (::geteuid() == 0) {
    GTEST_SKIP() << "root writes into read-only folders";
  }
  fs::create_directories(dir_ / "locked");
  write_all(dir_ / "first.cpp", "first\n", 0640);
  write_all(dir_ / "locked" / "second.cpp", "second\n");
  write_all(dir_ / "third.cpp", "third\n");
  ASSERT_EQ(::chmod((dir_ / "locked").c_str(), 0500), 0);

  const source_patch_result r =
      apply_with_backup({{dir_ / "first.cpp", "first\n", "FIRST\n"},
                         {dir_ / "locked" / "second.cpp", "second\n", "SECOND\n"},
                         {dir_ / "third.cpp", "third\n", "THIRD\n"}},
                        backup_);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("second.cpp: cannot create a temporary file"), std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("no file was changed"), std::string::npos) << r.error;
  EXPECT_EQ(read_all(dir_ / "first.cpp"), "first\n");
  EXPECT_EQ(mode_of(dir_ / "first.cpp"), 0640u);
  EXPECT_EQ(read_all(dir_ / "locked" / "second.cpp"), "second\n");
  EXPECT_EQ(read_all(dir_ / "third.cpp"), "third\n");
  // The unused backup is gone, so the same folder serves the next attempt.
  EXPECT_FALSE(fs::exists(backup_ / "manifest.json"));
  ASSERT_EQ(::chmod((dir_ / "locked").c_str(), 0700), 0);
  const source_patch_result retry =
      apply_with_backup({{dir_ / "first.cpp", "first\n", "FIRST\n"},
                         {dir_ / "locked" / "second.cpp", "second\n", "SECOND\n"}},
                        backup_);
  ASSERT_TRUE(retry.ok) << retry.error;
}

TEST_F(source_patch_test, rollback_refuses_a_file_edited_since_unless_forced) {
  write_all(dir_ / "a.cpp", "a\n");
  write_all(dir_ / "b.cpp", "b\n");
  ASSERT_TRUE(
      apply_with_backup({{dir_ / "a.cpp", "a\n", "A\n"}, {dir_ / "b.cpp", "b\n", "B\n"}}, backup_)
          .ok);
  write_all(dir_ / "b.cpp", "B plus the user's edit\n");

  const source_patch_result refused = rollback(backup_);
  ASSERT_FALSE(refused.ok);
  EXPECT_NE(refused.error.find(fs::canonical(dir_ / "b.cpp").string() +
                               ": was edited since the patch was applied"),
            std::string::npos)
      << refused.error;
  EXPECT_NE(refused.error.find("nothing was restored"), std::string::npos) << refused.error;
  EXPECT_EQ(read_all(dir_ / "a.cpp"), "A\n"); // all or nothing: a.cpp stays patched too

  const source_patch_result forced = rollback(backup_, {.force = true});
  ASSERT_TRUE(forced.ok) << forced.error;
  EXPECT_EQ(read_all(dir_ / "a.cpp"), "a\n");
  EXPECT_EQ(read_all(dir_ / "b.cpp"), "b\n");
}

TEST_F(source_patch_test, rollback_refuses_a_deleted_file_unless_forced) {
  write_all(dir_ / "a.cpp", "a\n", 0640);
  ASSERT_TRUE(apply_with_backup({{dir_ / "a.cpp", "a\n", "A\n"}}, backup_).ok);
  fs::remove(dir_ / "a.cpp");
  const source_patch_result refused = rollback(backup_);
  ASSERT_FALSE(refused.ok);
  EXPECT_NE(refused.error.find("was deleted since the patch was applied"), std::string::npos)
      << refused.error;
  ASSERT_TRUE(rollback(backup_, {.force = true}).ok);
  EXPECT_EQ(read_all(dir_ / "a.cpp"), "a\n");
  EXPECT_EQ(mode_of(dir_ / "a.cpp"), 0640u);
}

TEST_F(source_patch_test, rollback_finishes_a_partly_restored_backup) {
  write_all(dir_ / "a.cpp", "a\n");
  write_all(dir_ / "b.cpp", "b\n");
  ASSERT_TRUE(
      apply_with_backup({{dir_ / "a.cpp", "a\n", "A\n"}, {dir_ / "b.cpp", "b\n", "B\n"}}, backup_)
          .ok);
  write_all(dir_ / "a.cpp", "a\n"); // as after a crash half way through a rollback
  const source_patch_result r = rollback(backup_);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.changed.size(), 1u);
  EXPECT_EQ(r.unchanged.size(), 1u);
  EXPECT_EQ(read_all(dir_ / "b.cpp"), "b\n");
}

TEST_F(source_patch_test, patches_the_target_of_a_symbolic_link) {
  write_all(dir_ / "real.cpp", "x\n");
  fs::create_symlink(dir_ / "real.cpp", dir_ / "link.cpp");
  ASSERT_TRUE(apply_with_backup({{dir_ / "link.cpp", "x\n", "y\n"}}, backup_).ok);
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.cpp"));
  EXPECT_EQ(read_all(dir_ / "real.cpp"), "y\n");
  ASSERT_TRUE(rollback(backup_).ok);
  EXPECT_EQ(read_all(dir_ / "real.cpp"), "x\n");
}

TEST_F(source_patch_test, refuses_bad_requests_with_a_fix) {
  write_all(dir_ / "a.cpp", "a\n");
  source_patch_result r = apply_with_backup({}, backup_);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("no files to change"), std::string::npos) << r.error;

  r = apply_with_backup({{dir_ / "missing.cpp", "", "x"}}, backup_);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("missing.cpp: cannot be found"), std::string::npos) << r.error;

  r = apply_with_backup({{dir_ / "a.cpp", "a\n", "b\n"}, {dir_ / "." / "a.cpp", "a\n", "c\n"}},
                        backup_);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("listed twice"), std::string::npos) << r.error;
  EXPECT_EQ(read_all(dir_ / "a.cpp"), "a\n");

  ASSERT_TRUE(apply_with_backup({{dir_ / "a.cpp", "a\n", "b\n"}}, backup_).ok);
  r = apply_with_backup({{dir_ / "a.cpp", "b\n", "c\n"}}, backup_);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("already holds a backup"), std::string::npos) << r.error;

  r = rollback(dir_ / "not_a_backup");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("manifest.json: not found, so this is not a backup folder"),
            std::string::npos)
      << r.error;

  write_all(backup_ / "manifest.json", "{ not json");
  r = rollback(backup_);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("manifest.json: cannot be read"), std::string::npos) << r.error;
}

TEST_F(source_patch_test, rollback_refuses_a_damaged_backup) {
  write_all(dir_ / "a.cpp", "a\n");
  ASSERT_TRUE(apply_with_backup({{dir_ / "a.cpp", "a\n", "A\n"}}, backup_).ok);
  for (const auto& entry : fs::directory_iterator(backup_ / "files")) {
    write_all(entry.path(), "tampered\n");
  }
  const source_patch_result r = rollback(backup_);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("is damaged"), std::string::npos) << r.error;
  EXPECT_EQ(read_all(dir_ / "a.cpp"), "A\n");
}

} // namespace
} // namespace rpl::workers
