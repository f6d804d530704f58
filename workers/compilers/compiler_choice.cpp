#include "workers/compilers/compiler_choice.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace rpl::workers {

namespace {

namespace fs = std::filesystem;

std::string file_name_of(const std::string& path) {
  return fs::path(path).filename().string();
}

bool executable_file(const fs::path& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

/// The first executable `name` in PATH's absolute folders: a relative entry ("", ".", "bin")
/// would name a folder of the job's, which the engine fills.
std::optional<fs::path> find_on_absolute_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr)
    return std::nullopt;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty() || dir.front() != '/')
      continue;
    const fs::path candidate = fs::path(dir) / name;
    if (executable_file(candidate))
      return candidate;
  }
  return std::nullopt;
}

/// Where an allow-list entry is on this host: a bare name through PATH, an absolute path as
/// given; an executable regular file whose real name is no shell.
std::optional<fs::path> locate(const std::string& entry) {
  std::optional<fs::path> found;
  if (entry.find('/') == std::string::npos) {
    found = find_on_absolute_path(entry);
  } else if (fs::path(entry).is_absolute()) {
    found = fs::path(entry);
  }
  if (!found || !executable_file(*found))
    return std::nullopt;
  std::error_code error;
  const fs::path real = fs::canonical(*found, error);
  // A compiler name that is a link to a shell runs the shell; one that is a link to ccache (its
  // masquerade folder, /usr/lib/ccache/g++) runs the compiler of that name, as ccache does then.
  const std::string real_name = real.filename().string();
  const bool masquerade = real_name == "ccache" || real_name == "sccache" ||
                          real_name == "distcc" || real_name == "icecc";
  if (error || (runs_any_command(real_name) && !masquerade))
    return std::nullopt;
  return found;
}

bool same_file(const fs::path& a, const fs::path& b) {
  struct stat one {};
  struct stat two {};
  return ::stat(a.c_str(), &one) == 0 && ::stat(b.c_str(), &two) == 0 && one.st_dev == two.st_dev &&
         one.st_ino == two.st_ino;
}

std::string allowed_list(const std::vector<std::string>& allowed) {
  std::string list;
  for (const std::string& entry : allowed)
    list += (list.empty() ? "" : ", ") + entry;
  return list;
}

std::string not_allowed(const std::string& argv0, const std::vector<std::string>& allowed) {
  return "compiler '" + argv0 + "' is not allowed (allowed: " + allowed_list(allowed) +
         "); fix: start the worker with --allow-compiler " +
         (argv0.find('/') == std::string::npos ? file_name_of(argv0) : argv0) +
         " if it is a compiler you trust";
}

} // namespace

bool runs_any_command(std::string_view file_name) {
  static constexpr std::string_view names[] = {
      // shells and interpreters
      "sh", "bash", "dash", "zsh", "ksh", "mksh", "csh", "tcsh", "fish", "busybox", "perl",
      "python", "python3", "ruby", "node", "lua", "tclsh", "awk", "gawk", "mawk", "sed", "expect",
      // launchers: their first argument is the program they run
      "env", "sudo", "doas", "su", "runuser", "pkexec", "xargs", "nohup", "setsid", "nice",
      "ionice", "chrt", "taskset", "numactl", "prlimit", "setarch", "timeout", "time", "stdbuf",
      "flock", "watch", "script", "chroot", "unshare", "nsenter", "systemd-run", "bwrap", "strace",
      "ltrace", "gdb", "valgrind", "make", "ninja", "ssh", "rsh", "ccache", "sccache", "distcc",
      "icecc"};
  return std::find(std::begin(names), std::end(names), file_name) != std::end(names);
}

bool compiler_name_allowed(const std::string& argv0, const std::vector<std::string>& allowed) {
  const std::string name = file_name_of(argv0);
  if (name.empty() || runs_any_command(name))
    return false;
  return std::any_of(allowed.begin(), allowed.end(),
                     [&](const std::string& entry) { return file_name_of(entry) == name; });
}

compiler_choice choose_compiler(const std::string& argv0, const std::vector<std::string>& allowed) {
  compiler_choice choice;
  const std::string name = file_name_of(argv0);
  if (argv0.empty() || name.empty()) {
    choice.refusal = "compiler '" + argv0 + "' names no program";
    return choice;
  }
  if (runs_any_command(name)) {
    choice.refusal = "compiler '" + argv0 + "' is not allowed (allowed: " + allowed_list(allowed) +
                     "): it runs any command it is given, which --allow-compiler cannot change; "
                     "fix: name a compiler in the build template";
    return choice;
  }
  // Entries of this file name first: the family a job asks for (nvcc, hipcc) keeps its rules.
  std::vector<std::string> entries;
  for (const std::string& entry : allowed)
    if (file_name_of(entry) == name)
      entries.push_back(entry);
  const bool name_allowed = !entries.empty();
  if (argv0.find('/') == std::string::npos) {
    // A bare name: what this worker's PATH has for it, else an allowed path of that name.
    std::stable_partition(entries.begin(), entries.end(), [](const std::string& entry) {
      return entry.find('/') == std::string::npos;
    });
    for (const std::string& entry : entries) {
      if (const auto found = locate(entry)) {
        choice.program = *found;
        return choice;
      }
    }
    if (!name_allowed) {
      choice.refusal = not_allowed(argv0, allowed);
      return choice;
    }
    choice.missing = true;
    choice.refusal =
        "execvp " + argv0 + ": No such file or directory (this worker's PATH has no " + name + ")";
    return choice;
  }
  if (!fs::path(argv0).is_absolute()) {
    choice.refusal = "compiler '" + argv0 +
                     "' is a relative path, which names a file in the job "
                     "folder the engine fills; fix: name the compiler by its name (" +
                     name + ") or by an absolute path";
    return choice;
  }
  for (const std::string& entry : allowed)
    if (file_name_of(entry) != name)
      entries.push_back(entry); // a path may be another name of an allowed file (c++ -> g++-12)
  struct stat info {};
  if (::stat(argv0.c_str(), &info) != 0) {
    if (!name_allowed) {
      choice.refusal = not_allowed(argv0, allowed);
      return choice;
    }
    choice.missing = true;
    choice.refusal = "execvp " + argv0 + ": No such file or directory (not on this worker)";
    return choice;
  }
  std::string ours;
  for (const std::string& entry : entries) {
    const auto found = locate(entry);
    if (!found)
      continue;
    if (same_file(argv0, *found)) {
      choice.program = *found;
      return choice;
    }
    if (ours.empty() && file_name_of(entry) == name) {
      std::error_code error;
      ours = found->string() + " (" + fs::canonical(*found, error).string() + ")";
    }
  }
  std::error_code error;
  const fs::path real = fs::canonical(argv0, error);
  choice.refusal = "compiler '" + argv0 + "' (" + (error ? argv0 : real.string()) +
                   ") is not the file of an allowed compiler" +
                   (ours.empty() ? std::string() : "; this worker's " + name + " is " + ours) +
                   "; fix: name the compiler " + name +
                   " in the build template, or start the worker with --allow-compiler " + argv0 +
                   " if it is a compiler you trust";
  return choice;
}

} // namespace rpl::workers
