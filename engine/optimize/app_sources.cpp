#include "engine/optimize/app_sources.hpp"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include <spdlog/spdlog.h>

#include "engine/optimize/run_optimize.hpp"
#include "stages/optimize/compile_flags.hpp"
#include "stages/optimize/source_model.hpp"
#include "stages/trace/cupti_mapping.hpp"
#include "workers/source/clang_source.hpp"

namespace rpl::engine {

namespace {

namespace fs = std::filesystem;
using stages::optimize::decl_kind;
using stages::optimize::declaration;
using stages::optimize::source_model;

/// Files over this size are linked into the --app-build copy instead of copied.
constexpr std::uintmax_t linked_file_bytes = 16u << 20;

constexpr std::string_view source_extensions[] = {".cu", ".cuh", ".hip", ".cpp",
                                                  ".cc", ".cxx", ".h",   ".hpp"};

std::string whole_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool is_source(const fs::path& path) {
  const std::string ext = path.extension().string();
  return std::find(std::begin(source_extensions), std::end(source_extensions), ext) !=
         std::end(source_extensions);
}

bool is_mangled_symbol(const std::string& name) {
  return name.rfind("_Z", 0) == 0;
}

/// The device symbol of a kernel declaration: libclang mangles a __global__ function as its host
/// stub ("_Z24__device_stub__gemm_tilePKfS0_Pfi"); the code object's symbol lacks the prefix
/// ("_Z9gemm_tilePKfS0_Pfi"), and its length in the source-name's <length><name> is 15 less.
std::string device_symbol(const declaration& d) {
  static constexpr std::string_view stub = "__device_stub__";
  std::string symbol = d.mangled_name.empty() ? d.name : d.mangled_name;
  const auto at = symbol.find(stub);
  if (at == std::string::npos) {
    return symbol;
  }
  std::size_t digits = at;
  while (digits > 0 && symbol[digits - 1] >= '0' && symbol[digits - 1] <= '9') {
    --digits;
  }
  if (digits == at) { // extern "C": the plain name with the prefix
    return symbol.erase(at, stub.size());
  }
  const std::size_t length = std::stoul(symbol.substr(digits, at - digits));
  if (length <= stub.size()) {
    return symbol;
  }
  return symbol.replace(digits, at - digits + stub.size(), std::to_string(length - stub.size()));
}

/// The unqualified function name the text of a defining file must hold.
std::string unqualified(const std::string& name) {
  std::string base =
      kernel_base_name(is_mangled_symbol(name) ? stages::cupti::demangle(name) : name);
  const auto colons = base.rfind("::");
  return colons == std::string::npos ? base : base.substr(colons + 2);
}

} // namespace

std::string kernel_base_name(std::string name) {
  // The parameter list: the last balanced (...) at the end.
  if (!name.empty() && name.back() == ')') {
    int depth = 0;
    for (std::size_t i = name.size(); i-- > 0;) {
      if (name[i] == ')') {
        ++depth;
      } else if (name[i] == '(' && --depth == 0) {
        name.erase(i);
        break;
      }
    }
  }
  // Template arguments at the end: "gemm<128, float>".
  if (!name.empty() && name.back() == '>') {
    int depth = 0;
    for (std::size_t i = name.size(); i-- > 0;) {
      if (name[i] == '>') {
        ++depth;
      } else if (name[i] == '<' && --depth == 0) {
        name.erase(i);
        break;
      }
    }
  }
  // A return type before the name (function templates): the last word outside <...>.
  int depth = 0;
  for (std::size_t i = name.size(); i-- > 0;) {
    if (name[i] == '>') {
      ++depth;
    } else if (name[i] == '<') {
      --depth;
    } else if (name[i] == ' ' && depth == 0) {
      return name.substr(i + 1);
    }
  }
  return name;
}

bool left_out_folder(const fs::path& folder, const std::vector<fs::path>& exclude) {
  const std::string name = folder.filename().string();
  if (name.empty()) {
    return false;
  }
  if (name.front() == '.' && name != "." && name != "..") {
    return true;
  }
  if (name == "build" || name.rfind("build-", 0) == 0 || name.rfind("build_", 0) == 0 ||
      name.rfind("cmake-build-", 0) == 0 || name == "CMakeFiles" || name == "_build") {
    return true;
  }
  std::error_code ec;
  const auto here = fs::weakly_canonical(folder, ec);
  for (const auto& e : exclude) {
    std::error_code ec2;
    if (!ec && here == fs::weakly_canonical(e, ec2) && !ec2) {
      return true;
    }
  }
  return false;
}

std::vector<fs::path> copy_source_tree(const fs::path& root,
                                       const fs::path& destination,
                                       const std::vector<fs::path>& exclude) {
  std::vector<fs::path> copied;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto& entry = *it;
    const fs::path relative = entry.path().lexically_relative(root);
    std::error_code kind;
    if (entry.is_directory(kind)) {
      if (left_out_folder(entry.path(), exclude)) {
        it.disable_recursion_pending();
        continue;
      }
      fs::create_directories(destination / relative, kind);
      continue;
    }
    if (!entry.is_regular_file(kind)) {
      continue;
    }
    std::error_code copy;
    if (entry.file_size(kind) > linked_file_bytes) {
      // Data, not sources: linked, so that a tree with large inputs is not copied whole.
      fs::create_symlink(fs::absolute(entry.path()), destination / relative, copy);
    } else {
      fs::copy_file(entry.path(), destination / relative, fs::copy_options::overwrite_existing,
                    copy);
    }
    if (copy) {
      throw app_run_error("cannot copy " + entry.path().string() + " to " +
                          (destination / relative).string() + " (" + copy.message() +
                          "); fix: check that --out is writable and has room");
    }
    copied.push_back(destination / relative);
  }
  if (ec) {
    throw app_run_error("cannot read " + root.string() + " (" + ec.message() +
                        "); fix: check that --source-dir is readable");
  }
  return copied;
}

/// One source file: its text, and its model once parsed.
struct indexed_source {
  fs::path path;
  std::string text;
  bool parsed = false;
  source_model model;
};

struct kernel_source_index::state {
  app_source_search search;
  std::vector<indexed_source> sources; ///< explicit: every --source; discovered: the candidates
  std::size_t files_read = 0;
  std::uintmax_t bytes_read = 0;
  std::vector<std::string> notes;

  void discover();
  /// Parses `s` once; false (with a note) when libclang cannot.
  bool parse(indexed_source& s, bool fail_hard);
};

void kernel_source_index::state::discover() {
  const fs::path& root = search.dir;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw optimize_input_error("--source-dir " + root.string() +
                               ": no such folder; fix: name the folder of the application's "
                               "sources, or list them with --source FILE");
  }
  bool capped = false;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto& entry = *it;
    std::error_code kind;
    if (entry.is_directory(kind)) {
      if (left_out_folder(entry.path(), search.exclude)) {
        it.disable_recursion_pending();
      }
      continue;
    }
    if (!is_source(entry.path()) || !entry.is_regular_file(kind) ||
        entry.file_size(kind) > search.max_file_bytes) {
      continue;
    }
    if (files_read == search.max_files || bytes_read > search.max_total_bytes) {
      capped = true;
      break;
    }
    ++files_read;
    std::string text = whole_file(entry.path());
    bytes_read += text.size();
    if (text.find("__global__") != std::string::npos) {
      sources.push_back({entry.path(), std::move(text), false, {}});
    }
  }
  std::sort(sources.begin(), sources.end(),
            [](const indexed_source& a, const indexed_source& b) { return a.path < b.path; });
  notes.push_back("searched " + std::to_string(files_read) + " CUDA/HIP source file" +
                  (files_read == 1 ? "" : "s") + " under " + root.string() +
                  " (hidden and build folders and --out left out); " +
                  std::to_string(sources.size()) + " of them define __global__ functions");
  if (capped) {
    notes.push_back("stopped after " + std::to_string(files_read) + " files (" +
                    std::to_string(bytes_read >> 20) + " MiB) under " + root.string() +
                    ", the most it reads (" + std::to_string(search.max_files) + " files, " +
                    std::to_string(search.max_total_bytes >> 20) +
                    " MiB): name a narrower --source-dir, or the files with --source");
  }
}

bool kernel_source_index::state::parse(indexed_source& s, bool fail_hard) {
  if (s.parsed) {
    return true;
  }
  std::string error;
  std::vector<std::string> flags = {"-I" + fs::absolute(s.path).parent_path().string()};
  if (!search.dir.empty()) {
    flags.push_back("-I" + fs::absolute(search.dir).string());
  }
  s.model =
      workers::parse_source(s.text, s.path.string(),
                            stages::optimize::source_language(s.path.string(), {}), flags, error);
  if (!error.empty()) {
    if (fail_hard) {
      throw optimize_input_error("--source " + s.path.string() + ": " + error);
    }
    notes.push_back(s.path.string() + " could not be parsed, left out: " + error);
    s.text.clear(); // not searched again
    return false;
  }
  s.parsed = true;
  return true;
}

kernel_source_index::kernel_source_index(const app_source_search& search)
    : state_(std::make_unique<state>()) {
  state_->search = search;
  std::string why;
  if (!workers::libclang_available(why)) {
    throw optimize_input_error("optimize -- APP finds kernels in the sources with libclang: " +
                               why);
  }
  if (search.files.empty()) {
    state_->discover();
    return;
  }
  for (const auto& path : search.files) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      throw optimize_input_error("--source " + path.string() +
                                 ": no such file; fix: name a CUDA/HIP source file that exists");
    }
    state_->sources.push_back({path, whole_file(path), false, {}});
  }
  // Parsed before the application runs: a source that cannot be read fails in a second.
  for (auto& s : state_->sources) {
    state_->parse(s, true);
  }
}

kernel_source_index::~kernel_source_index() = default;

std::vector<source_definition> kernel_source_index::find(const std::string& mangled,
                                                         const std::string& name) {
  std::vector<source_definition> by_symbol;
  std::vector<source_definition> by_name;
  const std::string wanted = kernel_base_name(name);
  const std::string word = unqualified(name);
  for (auto& s : state_->sources) {
    // The text search first: only a file that names the kernel is parsed.
    if (!s.parsed && (s.text.find(word) == std::string::npos || !state_->parse(s, false))) {
      continue;
    }
    for (const auto& d : s.model.declarations) {
      if (d.kind != decl_kind::kernel || !d.is_definition) {
        continue;
      }
      const source_definition found{s.path, d.name, device_symbol(d), d.line};
      if (!mangled.empty() && (found.symbol == mangled || d.name == mangled)) {
        by_symbol.push_back(found);
      } else if (d.qualified_name == wanted || d.name == wanted || found.symbol == name) {
        by_name.push_back(found);
      }
    }
  }
  return by_symbol.empty() ? by_name : by_symbol;
}

std::string kernel_source_index::searched() const {
  if (!state_->search.files.empty()) {
    std::string names;
    for (const auto& f : state_->search.files) {
      names += (names.empty() ? "" : ", ") + f.string();
    }
    return names;
  }
  return (state_->files_read == 1
              ? "the one CUDA/HIP file under "
              : "the " + std::to_string(state_->files_read) + " CUDA/HIP files under ") +
         state_->search.dir.string();
}

const std::vector<std::string>& kernel_source_index::notes() const {
  return state_->notes;
}

} // namespace rpl::engine
