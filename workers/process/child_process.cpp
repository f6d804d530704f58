#include "workers/process/child_process.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

#include <sched.h>

#include "workers/process/descendant_reaper.hpp"

namespace rpl::workers {

namespace {

/// What the child writes into the CLOEXEC error pipe when it cannot reach exec: which step failed
/// and its errno. An empty read means exec succeeded (the pipe closed on exec).
struct exec_failure {
  int stage = 0;
  int error = 0;
};

enum exec_stage : int { stage_setup = 1, stage_chdir = 2, stage_redirect = 3, stage_exec = 4 };

std::string errno_text(int error) {
  return std::strerror(error);
}

void close_fd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  return fd < 0 ? -1 : static_cast<int>(fd);
#else
  (void)pid;
  return -1;
#endif
}

/// Async-signal-safe: only called between fork and exec.
[[noreturn]] void child_fail(int report_fd, int stage) {
  const exec_failure failure{stage, errno};
  // Nothing useful to do if the parent went away; the exit status still says 127.
  [[maybe_unused]] const ssize_t written = ::write(report_fd, &failure, sizeof failure);
  ::_exit(127);
}

/// The parent's environment with `changes` applied, as NAME=VALUE strings.
std::vector<std::string>
child_environment(const std::vector<std::pair<std::string, std::optional<std::string>>>& changes) {
  std::vector<std::string> entries;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    entries.emplace_back(*entry);
  }
  for (const auto& [name, value] : changes) {
    const auto prefix = name + "=";
    std::erase_if(entries, [&](const std::string& e) { return e.starts_with(prefix); });
    if (value) {
      entries.push_back(prefix + *value);
    }
  }
  return entries;
}

/// Everything exec needs, prepared before fork: after fork in a threaded process only
/// async-signal-safe calls are allowed. Not movable, because args and envp point into it.
struct exec_plan {
  /// `run_token`: the child's RPL_RUN_TOKEN value, empty when descendants are not tracked.
  exec_plan(const child_options& options, const std::string& run_token)
      : cwd(options.cwd.string()), capture_output(options.capture_output),
        capture_stderr(options.capture_stderr), kill_on_parent_death(options.kill_on_parent_death) {
    args.reserve(options.argv.size() + 1);
    for (const std::string& word : options.argv) {
      args.push_back(const_cast<char*>(word.c_str()));
    }
    args.push_back(nullptr);
    auto changes = options.environment;
    if (!run_token.empty())
      changes.emplace_back(run_token_variable, run_token_value(run_token));
    if (!changes.empty()) {
      env_entries = child_environment(changes);
      for (std::string& entry : env_entries) {
        envp.push_back(entry.data());
      }
      envp.push_back(nullptr);
    }
  }
  exec_plan(const exec_plan&) = delete;
  exec_plan& operator=(const exec_plan&) = delete;

  std::vector<char*> args;
  std::string cwd;
  std::vector<std::string> env_entries;
  std::vector<char*> envp; ///< empty: inherit the parent's environment
  bool capture_output;
  bool capture_stderr;
  bool kill_on_parent_death;
};

/// The descriptors spawn() opens; closes what is left open when it goes out of scope.
struct spawn_fds {
  int report[2] = {-1, -1}; ///< CLOEXEC: the child writes an exec_failure, or exec closes it
  int output[2] = {-1, -1}; ///< merged stdout+stderr, when capturing
  int dev_null = -1;
  ~spawn_fds() {
    close_fd(report[0]);
    close_fd(report[1]);
    close_fd(output[0]);
    close_fd(output[1]);
    close_fd(dev_null);
  }
  /// Empty on success, else what failed.
  std::string open(bool capture_output) {
    if (::pipe2(report, O_CLOEXEC) != 0 || (capture_output && ::pipe2(output, O_CLOEXEC) != 0)) {
      return "pipe: " + errno_text(errno);
    }
    dev_null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (dev_null < 0)
      return "open /dev/null: " + errno_text(errno);
    return {};
  }
};

/// The child's side of the spawn: its own process group, a clean signal state, the redirections,
/// then exec. It may share the parent's memory (see spawn_child), so: async-signal-safe calls
/// only, nothing written but its own stack (and errno); never returns.
[[noreturn]] void exec_in_child(const exec_plan& plan, const spawn_fds& fds, pid_t parent) {
  const int report = fds.report[1];
  // The parent blocked every signal around the spawn. Before they are unblocked, no handler of the
  // parent's may be left installed: it would run here, on the parent's memory. exec resets caught
  // signals anyway; ignored ones survive it, so the engine's usual ones go back to the default.
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP)
      continue;
    struct sigaction action {};
    if (::sigaction(sig, nullptr, &action) != 0)
      continue; // a signal number the C library reserves for itself
    const bool caught = (action.sa_flags & SA_SIGINFO) != 0 ||
                        (action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN);
    if (caught)
      ::signal(sig, SIG_DFL);
  }
  for (const int sig : {SIGPIPE, SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGCHLD}) {
    ::signal(sig, SIG_DFL);
  }
  // Own process group, so kill(-pid) reaches everything the program starts.
  if (::setpgid(0, 0) != 0)
    child_fail(report, stage_setup);
  if (plan.kill_on_parent_death) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
      child_fail(report, stage_setup);
    if (::getppid() != parent)
      ::_exit(127); // the parent died before prctl took effect
  }
  // The engine may block signals in its threads; the mask survives exec, so clear it.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (!plan.cwd.empty() && ::chdir(plan.cwd.c_str()) != 0)
    child_fail(report, stage_chdir);
  const int out = plan.capture_output ? fds.output[1] : fds.dev_null;
  const int err = plan.capture_stderr ? out : fds.dev_null;
  if (::dup2(fds.dev_null, STDIN_FILENO) < 0 || ::dup2(out, STDOUT_FILENO) < 0 ||
      ::dup2(err, STDERR_FILENO) < 0) {
    child_fail(report, stage_redirect);
  }
#ifdef SYS_close_range
  // Descriptors some library opened without O_CLOEXEC must not leak into the program (a leaked
  // socket or pipe end can keep a peer waiting). CLOSE_RANGE_CLOEXEC = 1u << 2, Linux >= 5.11;
  // on older kernels this fails harmlessly.
  ::syscall(SYS_close_range, 3u, ~0u, 1u << 2);
#endif
  if (plan.envp.empty()) {
    ::execvp(plan.args[0], plan.args.data());
  } else {
    ::execvpe(plan.args[0], plan.args.data(), plan.envp.data());
  }
  child_fail(report, stage_exec);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RPL_SPAWN_SHARES_MEMORY 0 // the sanitizers' runtimes expect a child of fork()
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RPL_SPAWN_SHARES_MEMORY 0
#endif
#endif
#ifndef RPL_SPAWN_SHARES_MEMORY
#define RPL_SPAWN_SHARES_MEMORY 1
#endif

struct child_start {
  const exec_plan* plan;
  const spawn_fds* fds;
  pid_t parent;
};

#if RPL_SPAWN_SHARES_MEMORY
int child_entry(void* start) {
  const auto* s = static_cast<const child_start*>(start);
  exec_in_child(*s->plan, *s->fds, s->parent);
}
#endif

/// Starts the child; its pid, or -1 with errno set. The child shares this process's memory until
/// it execs (clone with CLONE_VM | CLONE_VFORK, as posix_spawn does), on a stack of its own, while
/// the calling thread waits: unlike fork(), nothing of this process's address space is copied,
/// so a spawn costs the same however large the engine (its threads, its mappings) has grown, and
/// no page of it is copied on write afterwards. Every signal is blocked meanwhile, so that no
/// handler of ours runs in the child (exec_in_child resets them before it unblocks).
pid_t spawn_child(const child_start& start) {
#if RPL_SPAWN_SHARES_MEMORY
  // Enough for execvp's path buffers and a script's argv copy, both on the stack; only the pages
  // touched are ever backed.
  const std::size_t stack_size = 256 * 1024 + 16 * start.plan->args.size();
  void* stack = ::mmap(nullptr, stack_size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  if (stack != MAP_FAILED) {
    sigset_t all;
    sigset_t old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    // The stack grows down on every architecture this builds for.
    const pid_t pid = ::clone(child_entry, static_cast<char*>(stack) + stack_size,
                              CLONE_VM | CLONE_VFORK | SIGCHLD, const_cast<child_start*>(&start));
    const int error = errno;
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    ::munmap(stack, stack_size);
    errno = error;
    return pid;
  }
#endif
  const pid_t pid = ::fork();
  if (pid == 0)
    exec_in_child(*start.plan, *start.fds, start.parent);
  return pid;
}

/// launch_error for what the child reported through the error pipe.
std::string exec_failure_text(const exec_failure& failure, const child_options& options) {
  switch (failure.stage) {
  case stage_chdir: return "chdir " + options.cwd.string() + ": " + errno_text(failure.error);
  case stage_redirect: return "dup2: " + errno_text(failure.error);
  case stage_exec: return "execvp " + options.argv.front() + ": " + errno_text(failure.error);
  default: return "child setup: " + errno_text(failure.error);
  }
}

} // namespace

child_process child_process::spawn(const child_options& options) {
  child_process child;
  child.max_output_bytes_ = options.max_output_bytes;
  child.reaped_ = true; // until a pid exists there is nothing to reap
  if (options.argv.empty() || options.argv.front().empty()) {
    child.outcome_.launch_error = "empty argv: nothing to run";
    return child;
  }
  if (options.reap_descendants) {
    // Before fork: only processes forked after it are reparented here when orphaned.
    become_subreaper();
    child.run_token_ = new_run_token();
    // Before fork too: what the system has created since bounds the scan for leftovers.
    child.created_before_ = processes_created();
  }
  const exec_plan plan(options, child.run_token_);
  spawn_fds fds;
  if (std::string error = fds.open(options.capture_output); !error.empty()) {
    child.outcome_.launch_error = std::move(error);
    return child;
  }

  const pid_t parent = ::getpid();
  child.start_ = std::chrono::steady_clock::now();
  pid_t pid = -1;
  int fork_error = 0;
  {
    // Registered before any sweep can see it (the child only execs: it never touches the lock).
    const auto registry = lock_direct_children();
    pid = spawn_child(child_start{&plan, &fds, parent});
    if (pid > 0)
      add_direct_child(pid, registry);
    else
      fork_error = errno;
  }
  if (pid < 0) {
    child.outcome_.launch_error = "fork: " + errno_text(fork_error);
    return child;
  }

  // Also set the group from the parent: whichever runs first wins, so a kill_group() issued right
  // after spawn cannot miss. EACCES (the child already exec'd) is fine.
  ::setpgid(pid, pid);
  child.pid_ = pid;
  child.reaped_ = false;
  close_fd(fds.report[1]);
  close_fd(fds.output[1]);
  close_fd(fds.dev_null);

  exec_failure failure{};
  ssize_t got = 0;
  do {
    got = ::read(fds.report[0], &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);

  if (got > 0) {
    child.outcome_.launch_error = exec_failure_text(failure, options);
    child.run_token_.clear(); // it never ran: nothing of it to seek
    child.reap_blocking();
    child.outcome_.launched = false;
    child.outcome_.exit_code = -1;
    child.outcome_.term_signal = 0;
    return child;
  }

  child.outcome_.launched = true;
  if (!child.run_token_.empty())
    add_live_run({pid, child.run_token_, false, child.created_before_});
  child.output_fd_ = std::exchange(fds.output[0], -1);
  if (child.output_fd_ >= 0) {
    ::fcntl(child.output_fd_, F_SETFL, ::fcntl(child.output_fd_, F_GETFL) | O_NONBLOCK);
  }
  child.exit_fd_ = open_pidfd(pid);
  return child;
}

child_process::child_process(child_process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), output_fd_(std::exchange(other.output_fd_, -1)),
      exit_fd_(std::exchange(other.exit_fd_, -1)), reaped_(std::exchange(other.reaped_, true)),
      max_output_bytes_(other.max_output_bytes_), run_token_(std::move(other.run_token_)),
      group_signalled_(other.group_signalled_), created_before_(other.created_before_),
      start_(other.start_), outcome_(std::move(other.outcome_)) {}

child_process& child_process::operator=(child_process&& other) noexcept {
  if (this != &other) {
    child_process doomed(std::move(*this)); // kills and reaps what this held
    pid_ = std::exchange(other.pid_, -1);
    output_fd_ = std::exchange(other.output_fd_, -1);
    exit_fd_ = std::exchange(other.exit_fd_, -1);
    reaped_ = std::exchange(other.reaped_, true);
    max_output_bytes_ = other.max_output_bytes_;
    run_token_ = std::move(other.run_token_);
    group_signalled_ = other.group_signalled_;
    created_before_ = other.created_before_;
    start_ = other.start_;
    outcome_ = std::move(other.outcome_);
  }
  return *this;
}

child_process::~child_process() {
  if (pid_ > 0 && !reaped_) {
    kill_group(SIGKILL);
    reap_blocking();
  }
  close_fds();
}

void child_process::close_fds() {
  close_fd(output_fd_);
  close_fd(exit_fd_);
}

void child_process::drain_output() {
  if (output_fd_ < 0)
    return;
  char buffer[16384];
  // Bounded so that a child writing without pause cannot trap the caller's poll loop here.
  for (int reads = 0; reads < 64; ++reads) {
    const ssize_t got = ::read(output_fd_, buffer, sizeof buffer);
    if (got > 0) {
      const std::size_t room =
          max_output_bytes_ - std::min(max_output_bytes_, outcome_.output.size());
      const std::size_t keep = std::min(room, static_cast<std::size_t>(got));
      outcome_.output.append(buffer, keep);
      if (keep < static_cast<std::size_t>(got))
        outcome_.output_truncated = true;
      continue;
    }
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    close_fd(output_fd_); // EOF, or an error that will not go away
    return;
  }
}

void child_process::record_status(int status) {
  if (WIFEXITED(status)) {
    outcome_.exit_code = WEXITSTATUS(status);
    outcome_.term_signal = 0;
  } else if (WIFSIGNALED(status)) {
    outcome_.exit_code = -1;
    outcome_.term_signal = WTERMSIG(status);
  }
}

bool child_process::try_reap() {
  if (reaped_ || pid_ <= 0)
    return true;
  siginfo_t info{};
  // WNOWAIT leaves the zombie in place, so its pid (= the group id) cannot be reused while the
  // stragglers of its group are killed below.
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == EINTR)
      return false;
    // ECHILD: someone else reaped it (SIGCHLD set to SIG_IGN); the status is lost.
    outcome_.wall = std::chrono::steady_clock::now() - start_;
    reaped_ = true;
    remove_live_run(pid_);
    remove_direct_child(pid_);
    close_fd(exit_fd_);
    return true;
  }
  if (info.si_pid == 0)
    return false;
  const auto end = std::chrono::steady_clock::now();
  // A background grandchild must not outlive the job or hold the pipe, nor a daemon that left the
  // group (setsid) hold the device the next run measures.
  if (run_token_.empty()) {
    ::kill(-pid_, SIGKILL);
  } else if (begin_reaping_live_run(pid_)) {
    outcome_.leftovers = reap_leftovers({pid_, run_token_, group_signalled_, created_before_});
    remove_live_run(pid_);
  } else {
    group_signalled_ = true; // killed whole by kill_live_runs(), which listed what it left
  }
  int status = 0;
  pid_t got = 0;
  do {
    got = ::waitpid(pid_, &status, 0);
  } while (got < 0 && errno == EINTR);
  remove_direct_child(pid_);
  if (got == pid_)
    record_status(status);
  outcome_.wall = end - start_;
  reaped_ = true;
  close_fd(exit_fd_);
  return true;
}

void child_process::reap_blocking() {
  if (reaped_ || pid_ <= 0)
    return;
  siginfo_t info{};
  int rc = 0;
  do {
    rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT);
  } while (rc != 0 && errno == EINTR);
  (void)try_reap();
  if (!reaped_) { // waitid failed for another reason; do not hang or leak the state
    reaped_ = true;
    remove_live_run(pid_);
    remove_direct_child(pid_);
    outcome_.wall = std::chrono::steady_clock::now() - start_;
  }
}

void child_process::kill_group(int sig) {
  if (pid_ <= 0 || reaped_)
    return;
  group_signalled_ = true;
  if (::kill(-pid_, sig) != 0)
    ::kill(pid_, sig);
}

void child_process::time_out() {
  if (pid_ <= 0 || reaped_)
    return;
  outcome_.timed_out = true;
  kill_group(SIGKILL);
}

child_outcome child_process::finish() {
  reap_blocking();
  drain_output(); // what the child wrote before exiting is still in the pipe
  close_fds();
  return std::move(outcome_);
}

child_outcome run_child(const child_options& options, std::chrono::milliseconds timeout) {
  child_process child = child_process::spawn(options);
  if (!child.launched())
    return child.finish();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!child.try_reap()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      child.time_out();
      break;
    }
    pollfd fds[2]{};
    nfds_t count = 0;
    if (child.output_fd() >= 0)
      fds[count++] = pollfd{child.output_fd(), POLLIN, 0};
    if (child.exit_fd() >= 0)
      fds[count++] = pollfd{child.exit_fd(), POLLIN, 0};
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now);
    // Without a pidfd nothing wakes us when the child exits, so look again after 1 ms.
    if (child.exit_fd() < 0)
      wait = std::min<std::chrono::nanoseconds>(wait, std::chrono::milliseconds(1));
    const timespec ts{static_cast<time_t>(wait.count() / 1'000'000'000),
                      static_cast<long>(wait.count() % 1'000'000'000)};
    const int ready = ::ppoll(fds, count, &ts, nullptr);
    if (ready > 0 && count > 0 && fds[0].fd == child.output_fd() && fds[0].revents != 0) {
      child.drain_output();
    }
  }
  return child.finish();
}

std::string first_output_line(std::string_view output, std::size_t max_chars) {
  std::size_t begin = 0;
  while (begin < output.size()) {
    std::size_t end = output.find('\n', begin);
    if (end == std::string_view::npos) {
      end = output.size();
    }
    std::string_view line = output.substr(begin, end - begin);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
      line.remove_prefix(1);
    }
    if (!line.empty()) {
      return line.size() > max_chars ? std::string(line.substr(0, max_chars)) + "..."
                                     : std::string(line);
    }
    begin = end + 1;
  }
  return {};
}

} // namespace rpl::workers
