#include "workers/process/descendant_reaper.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iterator>
#include <limits>
#include <optional>
#include <signal.h>
#include <string_view>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>

#include <dirent.h>

namespace rpl::workers {

namespace {

/// How long a killed leftover may take to die (a process in a GPU driver call can sit in D state
/// for a while); past it the run ends anyway and the process is left to whoever reaps it.
constexpr auto death_wait_limit = std::chrono::seconds(10);

/// Rounds of scan-and-kill: each round kills what the previous one missed (a leftover that forked
/// between the scan and its kill). Killed processes cannot fork, so two rounds normally suffice.
constexpr int max_kill_rounds = 16;

/// One line of /proc/<pid>/stat, the fields the reaper needs.
struct process_entry {
  pid_t pid = -1;
  pid_t ppid = -1;
  pid_t pgrp = -1;
  pid_t sid = -1;
  char state = '?';
  std::uint64_t start_ticks = 0; ///< since boot; tells a reused pid from the process we saw
  bool dead() const { return state == 'Z' || state == 'X' || state == 'x'; }
};

/// Reads a whole /proc file (environ) with plain syscalls; empty when unreadable.
std::string read_proc_file(const char* path) {
  std::string text;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return text;
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      text.append(buffer, static_cast<std::size_t>(got));
      continue;
    }
    if (got < 0 && errno == EINTR)
      continue;
    break;
  }
  ::close(fd);
  return text;
}

std::optional<process_entry> read_process(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  // One read: the line is far shorter than the buffer, and a scan reads one per process.
  char text[1024];
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  ssize_t got = 0;
  do {
    got = ::read(fd, text, sizeof text - 1);
  } while (got < 0 && errno == EINTR);
  ::close(fd);
  if (got <= 0)
    return std::nullopt;
  text[got] = '\0';
  // The command name is in parentheses and may itself contain ')' or spaces: parse after the last.
  const char* paren = std::strrchr(text, ')');
  if (paren == nullptr)
    return std::nullopt;
  // After it: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime
  // stime cutime cstime priority nice num_threads itrealvalue starttime (fields 3 to 22).
  process_entry e;
  e.pid = pid;
  const char* at = paren + 1;
  while (*at == ' ')
    ++at;
  if (*at == '\0')
    return std::nullopt;
  e.state = *at++;
  long long fields[19] = {}; // fields 4 to 22
  for (long long& field : fields) {
    char* end = nullptr;
    field = std::strtoll(at, &end, 10);
    if (end == at)
      return std::nullopt;
    at = end;
  }
  e.ppid = static_cast<pid_t>(fields[0]);
  e.pgrp = static_cast<pid_t>(fields[1]);
  e.sid = static_cast<pid_t>(fields[2]);
  e.start_ticks = static_cast<std::uint64_t>(fields[18]);
  return e;
}

/// Every process this PID namespace's /proc shows with a pid above `above` (0: all of them).
std::vector<process_entry> list_processes(pid_t above = 0) {
  std::vector<process_entry> out;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr)
    return out;
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || end == entry->d_name || *end != '\0' || pid <= above)
      continue;
    if (auto e = read_process(static_cast<pid_t>(pid)))
      out.push_back(*e);
  }
  ::closedir(dir);
  return out;
}

/// The first unsigned number after `label` in `text`, if any.
std::optional<std::uint64_t> number_after(const std::string& text, const char* label) {
  const auto at = text.find(label);
  if (at == std::string::npos)
    return std::nullopt;
  const char* begin = text.c_str() + at + std::strlen(label);
  char* end = nullptr;
  const unsigned long long value = std::strtoull(begin, &end, 10);
  if (end == begin)
    return std::nullopt;
  return value;
}

/// Pids below this are never handed out again once the allocator has wrapped (RESERVED_PIDS).
constexpr std::uint64_t reserved_pids = 300;

/// A full scan at least this often: it also reaps the zombies reparented here that no run's scan
/// looked at (see reap_reparented_zombies).
constexpr auto full_scan_every = std::chrono::seconds(1);
std::atomic<std::int64_t> last_full_scan_ns{std::numeric_limits<std::int64_t>::min() / 2};

/// The pids a scan for `run`'s processes may skip: those at or below the returned bound (0: none
/// may be skipped). The kernel hands out pids in increasing order, wrapping at pid_max to 300, so
/// every process the run started has a pid above its leader's unless the allocator wrapped since;
/// it cannot have wrapped when the pid it handed out last is still above the leader's and fewer
/// processes were created since the spawn than a whole cycle of free pids needs (with a margin
/// of 2 for pids taken by forks that failed late). Otherwise, and once a second, every process is
/// read.
pid_t skippable_pids(const finished_run& run) {
  if (!run.created_before)
    return 0;
  const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  const std::int64_t last = last_full_scan_ns.load(std::memory_order_relaxed);
  if (now_ns - last >= std::chrono::nanoseconds(full_scan_every).count()) {
    last_full_scan_ns.store(now_ns, std::memory_order_relaxed);
    return 0;
  }
  // "0.52 1.65 3.47 7/118 11076": the tasks that exist (threads included), the last pid handed
  // out in this PID namespace.
  const std::string load = read_proc_file("/proc/loadavg");
  const auto slash = load.find('/');
  if (slash == std::string::npos)
    return 0;
  char* end = nullptr;
  const unsigned long long tasks = std::strtoull(load.c_str() + slash + 1, &end, 10);
  const unsigned long long last_pid = std::strtoull(end, nullptr, 10);
  const auto pid_max = number_after(read_proc_file("/proc/sys/kernel/pid_max"), "").value_or(0);
  const auto created = processes_created();
  if (tasks == 0 || last_pid < static_cast<unsigned long long>(run.leader) || !created ||
      *created < *run.created_before || pid_max <= reserved_pids)
    return 0;
  const std::uint64_t since = *created - *run.created_before;
  if (2 * (since + tasks) >= pid_max - reserved_pids)
    return 0;
  return run.leader;
}

/// The processes below `root` in the tree `all` describes (root excluded).
std::vector<process_entry> descendants_of(pid_t root, const std::vector<process_entry>& all) {
  std::unordered_map<pid_t, std::vector<std::size_t>> children;
  for (std::size_t i = 0; i < all.size(); ++i) {
    children[all[i].ppid].push_back(i);
  }
  std::vector<process_entry> out;
  std::vector<pid_t> pending{root};
  std::unordered_set<pid_t> seen{root};
  while (!pending.empty()) {
    const pid_t parent = pending.back();
    pending.pop_back();
    const auto it = children.find(parent);
    if (it == children.end())
      continue;
    for (const std::size_t i : it->second) {
      if (seen.insert(all[i].pid).second) {
        out.push_back(all[i]);
        pending.push_back(all[i].pid);
      }
    }
  }
  return out;
}

std::atomic<bool> subreaper{false};

std::mutex direct_children_mutex;
/// pid -> how many registrations: a pid reaped by one thread may be forked again by another
/// before the first unregisters it.
std::unordered_map<pid_t, int> direct_children;

/// Reaps the zombies among `processes` that were reparented here: our children (ppid = us) that
/// no code here forked. child_process's children are registered; the engine's own long-lived
/// children (compile workers, the kernel lane process) stay in our session and either stay in our
/// process group or lead their own; a reparented orphan of a run is in another session (it called
/// setsid) or in a group led by someone else (its run's).
void reap_reparented_zombies(const std::vector<process_entry>& processes) {
  const pid_t self = ::getpid();
  const pid_t own_group = ::getpgrp();
  const pid_t own_session = ::getsid(0);
  const std::lock_guard lock(direct_children_mutex);
  for (const process_entry& seen : processes) {
    if (seen.ppid != self || !seen.dead() || direct_children.contains(seen.pid))
      continue;
    // Read again under the lock: the snapshot may be stale, and a pid reaped meanwhile may have
    // been reused.
    const auto e = read_process(seen.pid);
    if (!e || e->start_ticks != seen.start_ticks || e->ppid != self || !e->dead())
      continue;
    const bool reparented = e->sid != own_session || (e->pgrp != e->pid && e->pgrp != own_group);
    if (reparented) {
      int status = 0;
      ::waitpid(e->pid, &status, WNOHANG);
    }
  }
}

/// Whether anything of a finished run can still be alive, judged from this process's children
/// alone: false only when every child of the main thread is one that child_process forked. As
/// subreaper, when a run's leader exits its live children are reparented here before the exit is
/// visible to waitid, and every other live descendant of the run is below one of them; the kernel
/// (3.19 and later: find_new_reaper) hands orphans to the subreaper's first live thread, the main
/// thread. True (search /proc) when that thread's children file cannot be read
/// (CONFIG_PROC_CHILDREN) or names a process no spawn here registered: an orphan, a zombie to reap,
/// or a child forked by other code.
bool orphans_possible() {
  char path[64];
  const pid_t self = ::getpid();
  std::snprintf(path, sizeof path, "/proc/%d/task/%d/children", static_cast<int>(self),
                static_cast<int>(self));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return true;
  std::string text;
  char buffer[1024];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      text.append(buffer, static_cast<std::size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fd);
  const std::lock_guard lock(direct_children_mutex);
  const char* at = text.c_str();
  for (;;) {
    char* end = nullptr;
    const long pid = std::strtol(at, &end, 10);
    if (end == at)
      return false;
    if (!direct_children.contains(static_cast<pid_t>(pid)))
      return true;
    at = end;
  }
}

/// Waits until every killed leftover is gone, reaping those that are (or become, when their
/// parent dies too) our children.
void await_deaths(std::unordered_map<pid_t, std::uint64_t> killed) {
  const pid_t self = ::getpid();
  const auto deadline = std::chrono::steady_clock::now() + death_wait_limit;
  auto pause = std::chrono::microseconds(200);
  while (!killed.empty()) {
    for (auto it = killed.begin(); it != killed.end();) {
      const auto e = read_process(it->first);
      bool gone = !e || e->start_ticks != it->second;
      if (!gone && e->dead()) {
        if (e->ppid == self) {
          int status = 0;
          const pid_t got = ::waitpid(it->first, &status, WNOHANG);
          gone = got == it->first || (got < 0 && errno == ECHILD);
        } else {
          // Dead, and its parent is alive: if the parent is dying too, the zombie comes to us;
          // otherwise it is the parent's to reap.
          gone = !killed.contains(e->ppid);
        }
      }
      it = gone ? killed.erase(it) : std::next(it);
    }
    if (killed.empty() || std::chrono::steady_clock::now() >= deadline)
      return;
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(10));
  }
}

/// What /proc/<pid>/environ says about a run token.
enum class token_state { carries, lacks, unread };

token_state token_in_environ(pid_t pid, const std::string& token) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/environ", static_cast<int>(pid));
  const std::string environ_text = read_proc_file(path);
  if (environ_text.empty())
    return token_state::unread;
  const std::string prefix = std::string(run_token_variable) + "=";
  std::string_view rest(environ_text);
  while (!rest.empty()) {
    const auto end = rest.find('\0');
    const std::string_view entry = rest.substr(0, end);
    if (entry.starts_with(prefix)) {
      std::string_view list = entry.substr(prefix.size());
      while (!list.empty()) {
        const auto colon = list.find(':');
        if (list.substr(0, colon) == token)
          return token_state::carries;
        if (colon == std::string_view::npos)
          break;
        list.remove_prefix(colon + 1);
      }
    }
    if (end == std::string_view::npos)
      break;
    rest.remove_prefix(end + 1);
  }
  return token_state::lacks;
}

/// How long a live process whose environment reads empty is read again: the window is an execve
/// (the old image's memory released, the new one's environment not yet set up) or an exit not yet
/// a zombie. A daemon that execs just as its run ends sits in it (seen under load in CI).
constexpr auto unread_environ_limit = std::chrono::milliseconds(200);

/// Whether `seen` (a live process of this tree) carries `token`, reading its environment again
/// while it reads empty and the process is still the one seen and alive.
bool carries_token_settled(const process_entry& seen, const std::string& token) {
  const auto deadline = std::chrono::steady_clock::now() + unread_environ_limit;
  for (;;) {
    const token_state state = token_in_environ(seen.pid, token);
    if (state != token_state::unread)
      return state == token_state::carries;
    const auto again = read_process(seen.pid);
    if (!again || again->start_ticks != seen.start_ticks || again->dead() ||
        std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

} // namespace

bool become_subreaper() {
  static std::once_flag once;
  std::call_once(once, [] { subreaper = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; });
  return subreaper;
}

std::string new_run_token() {
  static std::atomic<std::uint64_t> sequence{0};
  return std::to_string(::getpid()) + "." + std::to_string(++sequence);
}

std::string run_token_value(const std::string& token) {
  const char* outer = std::getenv(run_token_variable);
  if (outer == nullptr || *outer == '\0')
    return token;
  return std::string(outer) + ":" + token;
}

bool carries_run_token(pid_t pid, const std::string& token) {
  return token_in_environ(pid, token) == token_state::carries;
}

std::optional<std::uint64_t> processes_created() {
  return number_after(read_proc_file("/proc/stat"), "\nprocesses ");
}

std::vector<pid_t> reap_leftovers(const finished_run& run) {
  const pid_t self = ::getpid();
  const bool tree_holds_all = become_subreaper();
  std::vector<pid_t> found;
  std::unordered_map<pid_t, std::uint64_t> killed; // pid -> start time
  if (tree_holds_all && !orphans_possible()) {
    // Nothing of the run outlived its leader; a group member would be one of its descendants.
    ::kill(-run.leader, SIGKILL);
    return found;
  }
  std::vector<process_entry> snapshot = list_processes(skippable_pids(run));
  for (int round = 0; round < max_kill_rounds; ++round) {
    if (round > 0)
      snapshot = list_processes(skippable_pids(run));
    // As subreaper every descendant, orphaned or not, stays in our tree: only it is searched (and
    // only its environments read). Without it, orphans went to init: search everything.
    const std::vector<process_entry> candidates =
        tree_holds_all ? descendants_of(self, snapshot) : snapshot;
    bool killed_more = false;
    for (const process_entry& e : candidates) {
      if (e.pid == run.leader || e.pid == self || e.dead())
        continue;
      if (const auto it = killed.find(e.pid); it != killed.end() && it->second == e.start_ticks)
        continue; // killed in an earlier round, not dead yet
      const bool in_group = e.pgrp == run.leader;
      // Only this tree's processes are read again when their environment reads empty: a search of
      // every process (no subreaper) meets kernel threads, whose environment is always empty.
      if (!in_group && !(tree_holds_all ? carries_token_settled(e, run.token)
                                        : carries_run_token(e.pid, run.token)))
        continue;
      ::kill(e.pid, SIGKILL);
      killed[e.pid] = e.start_ticks;
      killed_more = true;
      if (!in_group || !run.group_signalled)
        found.push_back(e.pid);
    }
    // The group, too: members that left the tree's reach (a process that could not be read).
    ::kill(-run.leader, SIGKILL);
    if (!killed_more)
      break;
  }
  if (!killed.empty()) {
    await_deaths(std::move(killed));
    snapshot = list_processes(skippable_pids(run));
  }
  reap_reparented_zombies(snapshot);
  return found;
}

namespace {

/// A run in progress, with the thread that spawned it. Entries are changed under
/// live_runs_mutex, which kill_live_runs() holds throughout: while it works on a run, that run's
/// owner waits in begin_reaping_live_run() before it may reap the leader, so the leader's pid (its
/// group's id) stays its own.
struct live_run {
  std::thread::id owner;
  finished_run run;
  bool owner_reaping = false; ///< its owner is in reap_leftovers() for it
};
std::mutex live_runs_mutex;
std::condition_variable live_runs_changed;
std::vector<live_run> live_runs;

/// Waits until `leader` (our child) has exited, without reaping it; false after the limit.
bool await_exit(pid_t leader) {
  const auto deadline = std::chrono::steady_clock::now() + death_wait_limit;
  auto pause = std::chrono::microseconds(200);
  for (;;) {
    siginfo_t info{};
    const int rc = ::waitid(P_PID, static_cast<id_t>(leader), &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc != 0 && errno == EINTR)
      continue;
    if (rc != 0 || info.si_pid == leader)
      return true; // exited (ECHILD would mean reaped already: it cannot be while we hold it)
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(10));
  }
}

} // namespace

void add_live_run(const finished_run& run) {
  const std::lock_guard lock(live_runs_mutex);
  live_runs.push_back({std::this_thread::get_id(), run, false});
}

bool begin_reaping_live_run(pid_t leader) {
  const std::lock_guard lock(live_runs_mutex);
  for (live_run& entry : live_runs) {
    if (entry.run.leader == leader) {
      entry.owner_reaping = true;
      return true;
    }
  }
  return false;
}

void remove_live_run(pid_t leader) {
  {
    const std::lock_guard lock(live_runs_mutex);
    std::erase_if(live_runs,
                  [leader](const live_run& entry) { return entry.run.leader == leader; });
  }
  live_runs_changed.notify_all();
}

std::vector<pid_t> kill_live_runs(std::thread::id spawner) {
  std::unique_lock lock(live_runs_mutex);
  // A run whose leader ended on its own just now is its owner's: let it finish with it first, so
  // that whatever it left is dead when this returns.
  live_runs_changed.wait_for(lock, death_wait_limit, [spawner] {
    return std::none_of(live_runs.begin(), live_runs.end(), [spawner](const live_run& entry) {
      return entry.owner == spawner && entry.owner_reaping;
    });
  });
  std::vector<finished_run> runs;
  std::erase_if(live_runs, [&](const live_run& entry) {
    if (entry.owner != spawner || entry.owner_reaping)
      return false;
    runs.push_back(entry.run);
    return true;
  });
  for (finished_run& run : runs) {
    ::kill(-run.leader, SIGKILL);
    run.group_signalled = true; // its members are expected to die: not listed
  }
  std::vector<pid_t> found;
  for (const finished_run& run : runs) {
    // Once the leader has exited, its live children are reparented here, where the search of
    // reap_leftovers() looks (its quick check reads only this process's own children).
    if (!await_exit(run.leader))
      continue; // stuck in the kernel: its group is signalled, the rest cannot be told apart yet
    const auto left = reap_leftovers(run);
    found.insert(found.end(), left.begin(), left.end());
  }
  return found;
}

std::string describe_leftovers(const std::vector<pid_t>& pids) {
  std::string text = "left " + std::to_string(pids.size()) +
                     (pids.size() == 1 ? " process running (pid " : " processes running (pids ");
  for (std::size_t i = 0; i < pids.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(pids[i]);
  }
  return text + ")";
}

std::unique_lock<std::mutex> lock_direct_children() {
  return std::unique_lock(direct_children_mutex);
}

void add_direct_child(pid_t pid, const std::unique_lock<std::mutex>& held) {
  (void)held; // proof that the caller holds the lock
  ++direct_children[pid];
}

void remove_direct_child(pid_t pid) {
  const std::lock_guard lock(direct_children_mutex);
  if (const auto it = direct_children.find(pid); it != direct_children.end() && --it->second <= 0)
    direct_children.erase(it);
}

} // namespace rpl::workers
