// choose_compiler (workers/compilers/compiler_choice.hpp): a job's argv[0] runs this worker's own
// allowed compiler, never a file the engine picked by name (issue 28). The test's PATH holds a
// folder of its own; files are made in a temporary folder, nothing is run.
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "workers/compilers/compiler_choice.hpp"

namespace rpl::workers {
namespace {

namespace fs = std::filesystem;
using rpl::testing::temp_dir;

void make_program(const fs::path& path) {
  fs::create_directories(path.parent_path());
  rpl::testing::write_file(path, "#!/bin/sh\nexit 0\n");
  ::chmod(path.c_str(), 0755);
}

/// PATH set to `value` for one test, restored after.
class path_override {
public:
  explicit path_override(const std::string& value) {
    if (const char* old = std::getenv("PATH"))
      old_ = old;
    ::setenv("PATH", value.c_str(), 1);
  }
  ~path_override() {
    if (old_)
      ::setenv("PATH", old_->c_str(), 1);
    else
      ::unsetenv("PATH");
  }
  path_override(const path_override&) = delete;
  path_override& operator=(const path_override&) = delete;

private:
  std::optional<std::string> old_;
};

TEST(workers_compiler_choice, a_bare_name_runs_what_this_workers_path_finds) {
  temp_dir dir;
  make_program(dir / "bin" / "mycc");
  const path_override path((dir / "bin").string() + ":/usr/bin:/bin");
  const auto choice = choose_compiler("mycc", {"g++", "mycc"});
  EXPECT_EQ(choice.program, dir / "bin" / "mycc") << choice.refusal;
  EXPECT_TRUE(choice.refusal.empty());
}

TEST(workers_compiler_choice, a_path_runs_only_when_it_is_the_allowed_file) {
  temp_dir dir;
  make_program(dir / "bin" / "mycc");
  // The engine's own folder with a file of the same name: another program, refused unrun.
  make_program(dir / "engine-chosen" / "mycc");
  fs::create_symlink(dir / "bin" / "mycc", dir / "link-to-mycc");
  const path_override path((dir / "bin").string() + ":/usr/bin:/bin");

  const auto rogue = choose_compiler((dir / "engine-chosen" / "mycc").string(), {"mycc"});
  EXPECT_TRUE(rogue.program.empty());
  EXPECT_FALSE(rogue.missing);
  EXPECT_NE(rogue.refusal.find("is not the file of an allowed compiler"), std::string::npos)
      << rogue.refusal;
  EXPECT_NE(rogue.refusal.find("this worker's mycc is " + (dir / "bin" / "mycc").string()),
            std::string::npos)
      << rogue.refusal;
  EXPECT_NE(rogue.refusal.find("--allow-compiler " + (dir / "engine-chosen" / "mycc").string()),
            std::string::npos)
      << rogue.refusal;

  // The very file, by its own path or through a link: the worker runs its own path for it.
  EXPECT_EQ(choose_compiler((dir / "bin" / "mycc").string(), {"mycc"}).program,
            dir / "bin" / "mycc");
  EXPECT_EQ(choose_compiler((dir / "link-to-mycc").string(), {"mycc"}).program,
            dir / "bin" / "mycc");

  // A relative path names a file of the job folder: refused.
  const auto relative = choose_compiler("./mycc", {"mycc"});
  EXPECT_TRUE(relative.program.empty());
  EXPECT_NE(relative.refusal.find("relative path"), std::string::npos) << relative.refusal;
}

TEST(workers_compiler_choice, an_allowed_absolute_path_serves_its_path_and_its_name) {
  temp_dir dir;
  make_program(dir / "opt" / "mycc");
  make_program(dir / "copy" / "mycc");
  const path_override path("/usr/bin:/bin");
  const std::vector<std::string> allowed = {(dir / "opt" / "mycc").string()};
  EXPECT_EQ(choose_compiler("mycc", allowed).program, dir / "opt" / "mycc");
  EXPECT_EQ(choose_compiler((dir / "opt" / "mycc").string(), allowed).program,
            dir / "opt" / "mycc");
  // A copy is another file.
  EXPECT_TRUE(choose_compiler((dir / "copy" / "mycc").string(), allowed).program.empty());
}

TEST(workers_compiler_choice, relative_path_entries_never_find_a_compiler) {
  temp_dir dir;
  make_program(dir / "mycc");
  const auto cwd = fs::current_path();
  fs::current_path(dir.path());
  {
    const path_override path(".:bin::/usr/bin");
    const auto choice = choose_compiler("mycc", {"mycc"});
    EXPECT_TRUE(choice.program.empty());
    EXPECT_TRUE(choice.missing);
  }
  fs::current_path(cwd);
}

TEST(workers_compiler_choice, shells_unknown_names_and_missing_compilers_are_refused) {
  const std::vector<std::string> allowed = {"g++", "sh", "rpl-no-such-compiler"};
  for (const std::string shell : {"sh", "/bin/sh", "bash", "env", "/usr/bin/env"}) {
    const auto choice = choose_compiler(shell, allowed);
    EXPECT_TRUE(choice.program.empty()) << shell;
    EXPECT_FALSE(choice.missing) << shell;
    EXPECT_NE(choice.refusal.find("'" + shell + "'"), std::string::npos) << choice.refusal;
    EXPECT_NE(choice.refusal.find("--allow-compiler"), std::string::npos) << choice.refusal;
  }
  const auto unknown = choose_compiler("clang-format", allowed);
  EXPECT_TRUE(unknown.program.empty());
  EXPECT_FALSE(unknown.missing);
  EXPECT_NE(unknown.refusal.find("allowed: g++, sh, rpl-no-such-compiler"), std::string::npos)
      << unknown.refusal;
  const auto missing = choose_compiler("rpl-no-such-compiler", allowed);
  EXPECT_TRUE(missing.missing);
  EXPECT_NE(missing.refusal.find("execvp rpl-no-such-compiler"), std::string::npos);
  EXPECT_TRUE(choose_compiler("", allowed).program.empty());
  EXPECT_TRUE(choose_compiler("/usr/bin/", allowed).program.empty());
}

TEST(workers_compiler_choice, a_compiler_name_that_links_to_a_shell_never_runs) {
  temp_dir dir;
  fs::create_directories(dir / "bin");
  fs::create_symlink("/bin/sh", dir / "bin" / "cc");
  const path_override path((dir / "bin").string());
  const auto choice = choose_compiler("cc", {"cc", "ccache"});
  EXPECT_TRUE(choice.program.empty());
  // ccache by its own name runs its first argument: refused like a shell.
  EXPECT_TRUE(choose_compiler("ccache", {"cc", "ccache"}).program.empty());
  EXPECT_FALSE(choose_compiler("ccache", {"cc", "ccache"}).missing);
}

TEST(workers_compiler_choice, names_are_matched_by_file_name_for_the_engine) {
  EXPECT_TRUE(compiler_name_allowed("/usr/bin/g++", {"g++"}));
  EXPECT_TRUE(compiler_name_allowed("hipcc", {"/opt/rocm/bin/hipcc"}));
  EXPECT_FALSE(compiler_name_allowed("g++-12", {"g++"}));
  EXPECT_FALSE(compiler_name_allowed("sh", {"sh"}));
  EXPECT_FALSE(compiler_name_allowed("", {"g++"}));
}

} // namespace
} // namespace rpl::workers
