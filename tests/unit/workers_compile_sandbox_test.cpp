// sandbox_argv (workers/compile/compile_sandbox.hpp): the bwrap command line a compiler runs in.
// Nothing runs here; tests/integration/workers_compile_sandbox_test.cpp runs real sandboxes.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>

#include "support/test_support.hpp"
#include "workers/compile/compile_sandbox.hpp"

namespace rpl::workers {
namespace {

using argv_t = std::vector<std::string>;

/// Where `words` appear in `argv` as consecutive words; argv.size() when they do not.
std::size_t find_words(const argv_t& argv, const argv_t& words) {
  const auto at = std::search(argv.begin(), argv.end(), words.begin(), words.end());
  return static_cast<std::size_t>(at - argv.begin());
}

TEST(workers_compile_sandbox, binds_only_the_job_folder_writable_after_hiding_the_rest) {
  rpl::testing::temp_dir root;
  const auto job = root / "rpl-job-1-1-abcdef";
  const auto keys = root / "keys";
  std::filesystem::create_directories(job);
  std::filesystem::create_directories(keys);
  const auto argv =
      sandbox_argv("/usr/bin/bwrap", {.job_dir = job, .work_root = root.path(), .hidden = {keys}},
                   {"/usr/bin/g++", "-c", "k.cpp"});
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv.front(), "/usr/bin/bwrap");
  for (const std::string flag :
       {"--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid"})
    EXPECT_LT(find_words(argv, {flag}), argv.size()) << flag;
  const auto system = find_words(argv, {"--ro-bind", "/", "/"});
  const auto tmp = find_words(argv, {"--tmpfs", "/tmp"});
  const auto work_root = find_words(argv, {"--tmpfs", root.path().string()});
  const auto bind = find_words(argv, {"--bind", job.string(), job.string()});
  ASSERT_LT(bind, argv.size());
  EXPECT_LT(system, tmp);
  // The work root is under /tmp here, hidden with it; the job folder comes back after.
  EXPECT_LT(std::max(tmp, std::min(work_root, tmp)), bind);
  EXPECT_LT(find_words(argv, {"--chdir", job.string()}), argv.size());
  EXPECT_LT(find_words(argv, {"--setenv", "TMPDIR", "/tmp"}), argv.size());
  // Only paths that exist are hidden; /home and /root where this host has them.
  if (std::filesystem::exists("/root")) {
    EXPECT_LT(find_words(argv, {"--tmpfs", "/root"}), bind);
  }
  EXPECT_EQ(find_words(argv, {"--tmpfs", "/nonexistent"}), argv.size());
  // The command comes last, after "--".
  const argv_t tail(argv.end() - 4, argv.end());
  EXPECT_EQ(tail, (argv_t{"--", "/usr/bin/g++", "-c", "k.cpp"}));
}

TEST(workers_compile_sandbox, hides_the_work_root_unless_the_program_lives_there) {
  // A work root outside /tmp (hidden anyway): a folder in the test's working directory.
  if (std::filesystem::current_path().string().rfind("/tmp/", 0) == 0) {
    GTEST_SKIP() << "the build folder is under /tmp, which the sandbox hides whole: no work root "
                    "outside it to test with";
  }
  std::string pattern = (std::filesystem::current_path() / "rpl-sandbox-root-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const std::filesystem::path root(pattern);
  const auto job = root / "job";
  std::filesystem::create_directories(job);
  const auto hidden = sandbox_argv("bwrap", {.job_dir = job, .work_root = root}, {"/usr/bin/g++"});
  const auto kept =
      sandbox_argv("bwrap", {.job_dir = job, .work_root = root}, {(root / "g++").string()});
  std::filesystem::remove_all(root);
  const auto tmpfs = find_words(hidden, {"--tmpfs", root.string()});
  EXPECT_LT(tmpfs, find_words(hidden, {"--bind", job.string(), job.string()}));
  EXPECT_EQ(find_words(kept, {"--tmpfs", root.string()}), kept.size());
}

TEST(workers_compile_sandbox, shows_a_toolchain_or_an_allowed_path_that_a_hidden_folder_holds) {
  rpl::testing::temp_dir dir; // under /tmp, which the sandbox hides
  const auto job = dir / "job";
  const auto toolchain = dir / "gcc-13";
  std::filesystem::create_directories(job);
  std::filesystem::create_directories(toolchain / "bin");
  EXPECT_EQ(installation_of(toolchain / "bin" / "g++"), toolchain);
  EXPECT_EQ(installation_of("/opt/wrappers/g++"), "/opt/wrappers");
  const auto argv = sandbox_argv("bwrap", {job, dir.path(), {}, {toolchain, "/usr/include"}},
                                 {(toolchain / "bin" / "g++").string()});
  const auto shown = find_words(argv, {"--ro-bind", toolchain.string(), toolchain.string()});
  if (dir.path().string().rfind("/tmp/", 0) == 0) {
    EXPECT_LT(find_words(argv, {"--tmpfs", "/tmp"}), shown);
    EXPECT_LT(shown, find_words(argv, {"--bind", job.string(), job.string()}));
  }
  // A path no hidden folder holds is visible already: no bind of its own.
  EXPECT_EQ(find_words(argv, {"--ro-bind", "/usr/include", "/usr/include"}), argv.size());
}

} // namespace
} // namespace rpl::workers
