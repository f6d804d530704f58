#pragma once
/// An exclusive lease on a run: one process at a time works on it (an autotune run, the first
/// session or a `--resume`; an optimize `--out` folder). The lease is a lock file beside what the
/// run writes (`<db>.<run_id>.lease`, `OUT/optimize.lease`), locked with flock(2) while held and
/// naming its holder, so that the process refused can say who holds it; it is removed on release.
/// The kernel drops the lock of a process that dies, however it dies: a file left unlocked (a
/// holder killed with SIGKILL) is stale and is taken over, with a log line naming the old holder.

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace rpl::engine {

/// Who holds a lease, as its file says.
struct lease_holder {
  long pid = 0;
  std::string host;
  std::string since;   ///< UTC (utc_timestamp), when it took the lease
  std::string command; ///< what holds it, e.g. "rocm-perf autotune --resume"
};

/// The file's text: one `key=value` line each for pid, host, since and command.
std::string format_lease_holder(const lease_holder& holder);
/// The holder a lease file names; nullopt when the text names no positive pid (an empty file: its
/// holder has not written it yet, or crashed before it did).
std::optional<lease_holder> parse_lease_holder(std::string_view text);
/// "pid 4242 on host node7 (rocm-perf autotune --resume, since 2026-11-27T01:43:00Z)".
std::string describe_lease_holder(const lease_holder& holder);
/// The reason a stale lease is taken over, after "taking over <file>: ". `running` says whether
/// a process with the holder's pid runs now (asked only when the holder is on `this_host`).
std::string describe_stale_lease(const lease_holder& previous,
                                 std::string_view this_host,
                                 std::optional<bool> running);

/// The lease is held by a live process (it holds the lock); what() names it and the file.
class lease_held_error : public std::runtime_error {
public:
  lease_held_error(const std::string& what, std::optional<lease_holder> holder)
      : std::runtime_error(what), holder_(std::move(holder)) {}
  /// nullopt when the holder had not named itself yet.
  const std::optional<lease_holder>& holder() const { return holder_; }

private:
  std::optional<lease_holder> holder_;
};

class run_lease {
public:
  /// Takes the lease at `file` for this process, `command` naming what holds it; a stale file is
  /// taken over and logged (a warning naming its old holder). Throws lease_held_error when a live
  /// process holds it, std::runtime_error (naming the file and a fix) when the file cannot be
  /// created or locked.
  static run_lease acquire(const std::filesystem::path& file, const std::string& command);

  run_lease(run_lease&& other) noexcept;
  run_lease& operator=(run_lease&& other) noexcept;
  run_lease(const run_lease&) = delete;
  run_lease& operator=(const run_lease&) = delete;
  /// Releases it: removes the file, then unlocks.
  ~run_lease();

  const std::filesystem::path& file() const { return file_; }

private:
  run_lease(std::filesystem::path file, int fd) : file_(std::move(file)), fd_(fd) {}
  void release();

  std::filesystem::path file_;
  int fd_ = -1;
};

/// This host's name, as a lease names it.
std::string lease_host_name();

} // namespace rpl::engine
