#pragma once
/// Helpers shared by the tests: private temporary folders, files, fixture paths, reading result
/// databases; and, for integration and system tests only (they start processes), running the
/// rocm-perf binary and finding a process's children.

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <dirent.h>
#include <netinet/in.h>

#include "stages/sqlite/sqlite_statement.hpp"
#include "workers/compile/compile_sandbox.hpp"
#include "workers/process/child_process.hpp"

namespace rpl::testing {

inline const std::filesystem::path source_dir{RPL_SOURCE_DIR};
inline const std::filesystem::path rocm_perf{RPL_BINARY};

/// A temporary folder removed at the end of the test.
class temp_dir {
public:
  temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "rpl-test-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// Runs rocm-perf with the arguments; stdout and stderr come back merged.
inline workers::child_outcome
run_rocm_perf(std::vector<std::string> args,
              std::chrono::milliseconds timeout = std::chrono::minutes(5)) {
  workers::child_options options;
  options.argv = {rocm_perf.string()};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.max_output_bytes = 16 << 20;
  return workers::run_child(options, timeout);
}

/// The first integer the query returns (0 when it returns no row or fails).
inline long long query_int(const std::filesystem::path& db, const std::string& sql) {
  try {
    stages::sqlite::connection connection(db, SQLITE_OPEN_READONLY);
    connection.busy_timeout(std::chrono::milliseconds(2000));
    stages::sqlite::statement query(connection, sql);
    return query.step() ? query.column_int64(0) : 0;
  } catch (const stages::sqlite::sqlite_error&) {
    return 0;
  }
}

/// Every row of a one-column text query (the rows before a failure; none when it cannot start).
inline std::vector<std::string> query_texts(const std::filesystem::path& db,
                                            const std::string& sql) {
  std::vector<std::string> rows;
  try {
    stages::sqlite::connection connection(db, SQLITE_OPEN_READONLY);
    connection.busy_timeout(std::chrono::milliseconds(2000));
    stages::sqlite::statement query(connection, sql);
    while (query.step()) {
      rows.emplace_back(query.column_text(0));
    }
  } catch (const stages::sqlite::sqlite_error&) {
    // Callers assert on the rows; a failed query shows there as missing ones.
  }
  return rows;
}

/// Direct children of `parent` whose command line contains `needle`.
inline std::vector<pid_t> children_of(pid_t parent, const std::string& needle) {
  std::vector<pid_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) {
      continue;
    }
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent || state == 'Z') {
      continue;
    }
    auto cmdline = read_text(entry.path() / "cmdline");
    for (auto& ch : cmdline) {
      if (ch == '\0') {
        ch = ' ';
      }
    }
    if (cmdline.find(needle) != std::string::npos) {
      found.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return found;
}

inline bool process_alive(pid_t pid) {
  const auto stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) {
    return false;
  }
  const auto close = stat.rfind(')');
  return close != std::string::npos && stat.size() > close + 2 && stat[close + 2] != 'Z';
}

/// Polls `condition` every 20 ms until it holds or the timeout passes.
template <class Condition> bool wait_until(Condition condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

/// The fixture program's build template: MODE and SLEEP_US come from the space.
inline const char* fixture_build_template =
    "g++ -O0 -DMODE={MODE} -DSLEEP_US={SLEEP_US} candidate.cpp -o {OUT}";

/// A loopback TCP port that was free a moment ago.
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

inline std::filesystem::path fixture(const std::string& name) {
  return source_dir / "tests" / "fixtures" / name;
}

/// `autotune` arguments for a sweep of the fixture space that compiles only on remote workers
/// (`--compile-workers 0`, 100 ms heartbeats); callers add `--listen` and what else they test.
inline std::vector<std::string> remote_sweep_args(const std::filesystem::path& db) {
  return {"autotune",
          "--space",
          fixture("space-ok.json").string(),
          "--source",
          fixture("candidate.cpp").string(),
          "--build-template",
          fixture_build_template,
          "--cmd-template",
          "{BIN}",
          "--runs",
          "3",
          "--warmup",
          "1",
          "--timeout",
          "1",
          "--compile-workers",
          "0",
          "--heartbeat-ms",
          "100",
          "--db",
          db.string()};
}

/// Whether this host can sandbox compilers (bwrap works here; workers/compile/compile_sandbox.hpp),
/// probed once per test process.
inline bool sandbox_works() {
  static const bool works = workers::probe_sandbox(std::filesystem::temp_directory_path()).works();
  return works;
}

/// `rocm-perf worker compile` connecting to `endpoint` with 100 ms heartbeats (as
/// remote_sweep_args' engine), then `extra`; sandboxed where this host can, else `--no-sandbox`
/// (a worker that cannot sandbox does not start without it).
inline std::vector<std::string> remote_worker_argv(const std::string& endpoint,
                                                   const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {rocm_perf.string(), "worker",         "compile", "--connect",
                                   endpoint,           "--heartbeat-ms", "100"};
  if (!sandbox_works())
    argv.push_back("--no-sandbox");
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

} // namespace rpl::testing
