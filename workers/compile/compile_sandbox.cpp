#include "workers/compile/compile_sandbox.hpp"

#include <chrono>

#include <stdlib.h>

#include "workers/process/child_process.hpp"
#include "workers/process/find_program.hpp"

namespace rpl::workers {

namespace {

namespace fs = std::filesystem;

bool inside(const fs::path& path, const fs::path& root) {
  const fs::path relative = path.lexically_normal().lexically_relative(root.lexically_normal());
  return !relative.empty() && *relative.begin() != "..";
}

} // namespace

fs::path installation_of(const fs::path& program) {
  const fs::path folder = program.parent_path();
  return folder.filename() == "bin" && folder.has_parent_path() ? folder.parent_path() : folder;
}

std::vector<std::string> sandbox_argv(const fs::path& bwrap,
                                      const sandbox_layout& layout,
                                      const std::vector<std::string>& command) {
  std::vector<std::string> argv = {bwrap.string(),
                                   "--die-with-parent", // the worker's death ends the compile
                                   "--new-session",     // no terminal to push keystrokes into
                                   "--unshare-net",
                                   "--unshare-pid",
                                   "--unshare-ipc",
                                   "--unshare-uts",
                                   "--ro-bind",
                                   "/",
                                   "/",
                                   "--dev",
                                   "/dev",
                                   "--proc",
                                   "/proc"};
  std::vector<fs::path> hidden_dirs;
  std::error_code error;
  auto hide = [&](const fs::path& path) {
    if (path.empty() || path == path.root_path() || !fs::exists(path, error))
      return;
    for (const fs::path& dir : hidden_dirs)
      if (inside(path, dir))
        return; // already under an empty tmpfs
    if (fs::is_directory(path, error)) {
      argv.insert(argv.end(), {"--tmpfs", path.string()});
      hidden_dirs.push_back(path);
    } else {
      argv.insert(argv.end(), {"--ro-bind", "/dev/null", path.string()});
    }
  };
  for (const char* path : {"/tmp", "/var/tmp", "/home", "/root", "/run/user", "/etc/shadow",
                           "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/ssh"})
    hide(path);
  for (const fs::path& path : layout.hidden)
    hide(path);
  // The other jobs' folders, unless the program itself lives there.
  if (!(command.empty() || inside(command.front(), layout.work_root)))
    hide(layout.work_root);
  for (const fs::path& path : layout.shown) {
    if (path.empty() || !fs::exists(path, error))
      continue;
    for (const fs::path& dir : hidden_dirs) {
      if (inside(path, dir)) {
        argv.insert(argv.end(), {"--ro-bind", path.string(), path.string()});
        break;
      }
    }
  }
  // Bound last: the job folder may be under /tmp or the work root, hidden just above.
  argv.insert(argv.end(), {"--bind", layout.job_dir.string(), layout.job_dir.string(), "--chdir",
                           layout.job_dir.string(), "--setenv", "TMPDIR", "/tmp", "--"});
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

sandbox_probe probe_sandbox(const fs::path& work_root, const std::vector<fs::path>& hidden) {
  sandbox_probe probe;
  std::optional<fs::path> bwrap;
  if (const char* given = std::getenv("RPL_BWRAP"); given != nullptr && *given != '\0') {
    if (::access(given, X_OK) != 0) {
      probe.why = std::string("RPL_BWRAP=") + given +
                  " is not an executable bwrap; fix: unset RPL_BWRAP to use the bwrap on PATH, or "
                  "point it at bubblewrap";
      return probe;
    }
    bwrap = fs::path(given);
  } else {
    bwrap = find_on_path("bwrap");
  }
  if (!bwrap) {
    probe.why = "bwrap (bubblewrap) is not on PATH; fix: install it (Debian/Ubuntu: apt-get "
                "install bubblewrap)";
    return probe;
  }
  probe.bwrap = *bwrap;
  const auto truth = find_on_path("true");
  std::string pattern = (work_root / "rpl-sandbox-probe-XXXXXX").string();
  if (!truth || ::mkdtemp(pattern.data()) == nullptr) {
    probe.why = "cannot try the sandbox: no `true` on PATH or no folder under " +
                work_root.string() + "; fix: --work-dir with a writable folder";
    return probe;
  }
  child_options options;
  options.argv = sandbox_argv(
      *bwrap, {.job_dir = pattern, .work_root = work_root, .hidden = hidden}, {truth->string()});
  options.max_output_bytes = 4096;
  options.reap_descendants = false;
  const auto outcome = run_child(options, std::chrono::seconds(20));
  std::error_code error;
  fs::remove_all(pattern, error);
  if (!outcome.succeeded()) {
    const std::string said = first_output_line(outcome.output);
    probe.why = "bwrap cannot start a sandbox here (" + describe_exit(outcome) +
                (said.empty() ? std::string() : ": " + said) +
                "); fix: run the worker as root or enable unprivileged user namespaces "
                "(sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04+ "
                "kernel.apparmor_restrict_unprivileged_userns=0)";
  }
  return probe;
}

} // namespace rpl::workers
