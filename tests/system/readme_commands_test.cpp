// The READMEs' commands work as written (issue 26). Every fenced command block (``` with no
// language, sh, bash, shell or console) of README.md and examples/*/README.md carries a marker on
// the line before it, read here at test time:
//
//   <!-- readme-test: run -->              run it; it must exit 0
//   <!-- readme-test: run exit N (why) --> run it; it must exit N
//   <!-- readme-test: gpu -->              needs a GPU: skipped here, saying so
//   <!-- readme-test: skip (why) -->       not runnable as printed (a synopsis, two hosts, ...)
//   <!-- readme-test: same-as FILE -->     the very text of a block FILE runs (not run twice)
//
// A command block without a marker fails, so new docs cannot drift unchecked. A `run` block runs
// exactly as printed, through bash with `set -e`, in a fresh copy of the repository root (each
// top-level entry a symbolic link, but examples/, copied because its README builds there, and
// build/, whose bin/ is this build's bin folder and whose other files are the copy's own), with
// that bin folder first on PATH and an empty temporary HOME. The demo block must also be what
// `make demo` runs (the Makefile's recipe, expanded).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/test_support.hpp"

namespace rpl {
namespace {

namespace fs = std::filesystem;
using rpl::testing::read_text;
using rpl::testing::source_dir;
using rpl::testing::temp_dir;

/// One fenced command block and its marker.
struct readme_block {
  std::string file;   ///< relative to the repository root
  int line = 0;       ///< the opening fence's line, from 1
  std::string text;   ///< the lines between the fences
  std::string marker; ///< what follows `readme-test:`; empty when the block has none
  std::string kind;   ///< run, gpu, skip, same-as; empty when the marker is missing or malformed
  std::string detail; ///< skip: the reason; same-as: the file; gpu: an optional reason
  int expected_exit = 0;
  std::string name; ///< for ctest: file and first words, made unique
};

void PrintTo(const readme_block& block, std::ostream* out) {
  *out << block.file << ':' << block.line;
}

std::string where(const readme_block& block) {
  return block.file + ":" + std::to_string(block.line);
}

/// README.md, examples/README.md and examples/*/README.md, relative to the repository root.
std::vector<std::string> readme_files() {
  std::vector<std::string> files = {"README.md"};
  std::vector<std::string> examples;
  std::error_code ec;
  if (fs::exists(source_dir / "examples" / "README.md", ec))
    examples.push_back("examples/README.md");
  for (const auto& entry : fs::directory_iterator(source_dir / "examples", ec))
    if (entry.is_directory() && fs::exists(entry.path() / "README.md"))
      examples.push_back("examples/" + entry.path().filename().string() + "/README.md");
  std::sort(examples.begin(), examples.end());
  files.insert(files.end(), examples.begin(), examples.end());
  return files;
}

void parse_marker(readme_block& block) {
  static const std::regex run(R"(run(?:\s+exit\s+(\d+))?(?:\s+\((.+)\))?)");
  static const std::regex gpu(R"(gpu(?:\s+\((.+)\))?)");
  static const std::regex skip(R"(skip\s+\((.+)\))");
  static const std::regex same(R"(same-as\s+(\S+))");
  std::smatch m;
  if (std::regex_match(block.marker, m, run)) {
    block.kind = "run";
    block.expected_exit = m[1].matched ? std::stoi(m[1]) : 0;
    block.detail = m[2];
  } else if (std::regex_match(block.marker, m, gpu)) {
    block.kind = "gpu";
    block.detail = m[1].matched ? std::string(m[1]) : "it needs a GPU";
  } else if (std::regex_match(block.marker, m, skip)) {
    block.kind = "skip";
    block.detail = m[1];
  } else if (std::regex_match(block.marker, m, same)) {
    block.kind = "same-as";
    block.detail = m[1];
  }
}

/// The file's fenced command blocks, each with the marker on the nearest non-blank line above.
std::vector<readme_block> blocks_of(const std::string& file) {
  static const std::regex fence(R"(```([A-Za-z0-9_+-]*)\s*)");
  static const std::regex marker(R"(<!--\s*readme-test:\s*(.*?)\s*-->\s*)");
  static const std::vector<std::string> command_languages = {"", "sh", "bash", "shell", "console"};
  std::vector<std::string> lines;
  std::istringstream in(read_text(source_dir / file));
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  std::vector<readme_block> found;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, fence))
      continue;
    const std::string language = m[1];
    std::size_t end = i + 1;
    while (end < lines.size() && lines[end].rfind("```", 0) != 0)
      ++end;
    if (std::find(command_languages.begin(), command_languages.end(), language) !=
        command_languages.end()) {
      readme_block block;
      block.file = file;
      block.line = static_cast<int>(i + 1);
      for (std::size_t k = i + 1; k < end; ++k)
        block.text += lines[k] + "\n";
      std::size_t above = i;
      while (above > 0 && lines[above - 1].find_first_not_of(" \t") == std::string::npos)
        --above;
      if (above > 0 && std::regex_match(lines[above - 1], m, marker)) {
        block.marker = m[1];
        parse_marker(block);
      }
      found.push_back(std::move(block));
    }
    i = end; // past the closing fence
  }
  return found;
}

/// A ctest-friendly name: the file, then the block's first words.
std::string name_of(const readme_block& block) {
  std::string words = block.text.substr(0, block.text.find('\n'));
  std::string name = block.file.substr(0, block.file.rfind('/') + 1) + "README " + words;
  std::string out;
  for (char c : name) {
    const bool word = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (word)
      out += c;
    else if (!out.empty() && out.back() != '_')
      out += '_';
    if (out.size() >= 56)
      break;
  }
  while (!out.empty() && out.back() == '_')
    out.pop_back();
  return out;
}

std::vector<readme_block> all_blocks() {
  std::vector<readme_block> blocks;
  for (const auto& file : readme_files()) {
    auto more = blocks_of(file);
    blocks.insert(blocks.end(), more.begin(), more.end());
  }
  std::map<std::string, int> seen;
  for (auto& block : blocks) {
    block.name = name_of(block);
    if (const int n = ++seen[block.name]; n > 1)
      block.name += "_" + std::to_string(n);
  }
  return blocks;
}

/// What the shell got and gave back.
struct block_run {
  int exit_code = -1;
  std::string how; ///< how it ended, when not by exit
  std::string stdout_text;
  std::string stderr_text;
};

/// A copy of the repository root to run a block in: links to the top-level entries, examples/
/// copied, build/bin linked to this build's bin folder.
void make_repository_view(const fs::path& view) {
  fs::create_directories(view / "build");
  fs::create_directory_symlink(rpl::testing::rocm_perf.parent_path(), view / "build" / "bin");
  for (const auto& entry : fs::directory_iterator(source_dir)) {
    const std::string name = entry.path().filename().string();
    if (name == ".git" || name.rfind("build", 0) == 0)
      continue;
    if (name == "examples")
      fs::copy(entry.path(), view / name, fs::copy_options::recursive);
    else
      fs::create_symlink(entry.path(), view / name);
  }
}

block_run run_block(const readme_block& block, const temp_dir& dir) {
  const auto view = dir / "repository";
  const auto home = dir / "home";
  fs::create_directories(home);
  make_repository_view(view);
  rpl::testing::write_file(dir / "block.sh", "set -e\n" + block.text);
  workers::child_options options;
  options.argv = {"bash",
                  "-c",
                  R"(exec bash "$0" >"$1" 2>"$2")",
                  (dir / "block.sh").string(),
                  (dir / "stdout").string(),
                  (dir / "stderr").string()};
  options.cwd = view;
  const char* path = std::getenv("PATH");
  options.environment = {
      {"PATH", rpl::testing::rocm_perf.parent_path().string() + ":" + (path ? path : "/usr/bin")},
      {"HOME", home.string()}};
  const auto outcome = workers::run_child(options, std::chrono::minutes(5));
  block_run result;
  result.exit_code = outcome.exit_code;
  if (!outcome.launched)
    result.how = "bash did not start: " + outcome.launch_error;
  else if (outcome.timed_out)
    result.how = "timed out after 5 minutes and was killed";
  else if (outcome.term_signal != 0)
    result.how = "killed by signal " + std::to_string(outcome.term_signal);
  result.stdout_text = read_text(dir / "stdout");
  result.stderr_text = read_text(dir / "stderr");
  return result;
}

std::string tail(const std::string& text, std::size_t bytes = 12000) {
  return text.size() <= bytes ? text : "[...]\n" + text.substr(text.size() - bytes);
}

/// The shell words of a command with its line continuations joined and its spacing collapsed.
std::string one_line(std::string text) {
  text = std::regex_replace(text, std::regex(R"(\\\n)"), " ");
  text = std::regex_replace(text, std::regex(R"(\s+)"), " ");
  const auto first = text.find_first_not_of(' ');
  const auto last = text.find_last_not_of(' ');
  return first == std::string::npos ? "" : text.substr(first, last - first + 1);
}

/// The Makefile's `demo` recipe with its variables expanded (their defaults: `make demo` as typed).
std::string make_demo_command() {
  const std::string makefile = read_text(source_dir / "Makefile");
  std::map<std::string, std::string> variables;
  const std::regex assignment(R"((?:^|\n)([A-Z_]+)\s*(?::=|\?=)[ \t]*([^\n]*))");
  for (std::sregex_iterator it(makefile.begin(), makefile.end(), assignment), end; it != end; ++it)
    variables[(*it)[1]] = (*it)[2];
  std::smatch m;
  if (!std::regex_search(makefile, m, std::regex(R"(\ndemo:[^\n]*\n((?:\t[^\n]*\n)+))")))
    return {};
  std::string recipe = m[1];
  const std::regex reference(R"(\$\(([A-Z_]+)\))");
  for (int round = 0; round < 5 && std::regex_search(recipe, m, reference); ++round) {
    std::string expanded;
    auto from = recipe.cbegin();
    for (std::sregex_iterator it(recipe.begin(), recipe.end(), reference), end; it != end; ++it) {
      expanded.append(from, recipe.cbegin() + it->position());
      expanded += variables[(*it)[1]];
      from = recipe.cbegin() + it->position() + it->length();
    }
    expanded.append(from, recipe.cend());
    recipe = expanded;
  }
  return one_line(recipe);
}

TEST(readme_commands, every_command_block_is_classified) {
  const auto blocks = all_blocks();
  ASSERT_FALSE(blocks.empty()) << "no command block found in " << source_dir / "README.md";
  std::map<std::string, int> counts;
  for (const auto& block : blocks) {
    ++counts[block.kind.empty() ? "unclassified" : block.kind];
    if (block.marker.empty()) {
      ADD_FAILURE() << where(block)
                    << ": a command block with no readme-test marker; fix: put <!-- readme-test: "
                       "run -->, <!-- readme-test: gpu --> or <!-- readme-test: skip (why) --> on "
                       "the line before its fence (tests/system/readme_commands_test.cpp)\n"
                    << block.text;
    } else if (block.kind.empty()) {
      ADD_FAILURE() << where(block) << ": readme-test marker '" << block.marker
                    << "' is not one of run, run exit N (why), gpu, skip (why), same-as FILE";
    } else if (block.kind == "same-as") {
      const bool twin = std::any_of(blocks.begin(), blocks.end(), [&](const readme_block& other) {
        return other.file == block.detail && other.kind == "run" && other.text == block.text;
      });
      EXPECT_TRUE(twin) << where(block) << ": no block marked run in " << block.detail
                        << " has exactly this text; fix: make the two agree\n"
                        << block.text;
    }
  }
  std::cout << blocks.size() << " command blocks: " << counts["run"] << " run, " << counts["gpu"]
            << " need a GPU (skipped), " << counts["skip"] << " not runnable as printed, "
            << counts["same-as"] << " the same as a block that runs, " << counts["unclassified"]
            << " unclassified\n";
}

TEST(readme_commands, make_demo_runs_the_command_the_readme_prints) {
  const std::string demo = make_demo_command();
  ASSERT_NE(demo.find("autotune"), std::string::npos)
      << "no `demo:` recipe running autotune in the Makefile";
  const auto blocks = all_blocks();
  const bool printed = std::any_of(blocks.begin(), blocks.end(), [&](const readme_block& block) {
    return block.file == "README.md" && block.kind == "run" && one_line(block.text) == demo;
  });
  EXPECT_TRUE(printed) << "README.md prints no runnable block equal to the demo's command, which "
                          "is, expanded from the Makefile:\n"
                       << demo;
}

class readme_block_test : public ::testing::TestWithParam<readme_block> {};

TEST_P(readme_block_test, runs_as_printed) {
  const auto& block = GetParam();
  if (block.kind == "gpu")
    GTEST_SKIP() << where(block) << ": " << block.detail;
  if (block.kind == "skip")
    GTEST_SKIP() << where(block) << ": " << block.detail;
  if (block.kind == "same-as")
    GTEST_SKIP() << where(block) << ": the same text as a block of " << block.detail
                 << ", which runs";
  ASSERT_EQ(block.kind, "run") << where(block)
                               << ": not classified (every_command_block_is_classified says how)";
  temp_dir dir;
  const auto result = run_block(block, dir);
  EXPECT_TRUE(result.how.empty() && result.exit_code == block.expected_exit)
      << where(block) << " exited "
      << (result.how.empty() ? std::to_string(result.exit_code) : result.how) << ", expected "
      << block.expected_exit
      << " (run with bash, set -e, in a copy of the repository root, HOME empty)\n"
      << "--- block ---\n"
      << block.text << "--- stdout ---\n"
      << tail(result.stdout_text) << "--- stderr ---\n"
      << tail(result.stderr_text);
}

std::string test_name(const ::testing::TestParamInfo<readme_block>& param) {
  return param.param.name;
}

INSTANTIATE_TEST_SUITE_P(readmes, readme_block_test, ::testing::ValuesIn(all_blocks()), test_name);

} // namespace
} // namespace rpl
