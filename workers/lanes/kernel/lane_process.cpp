#include "workers/lanes/kernel/lane_process.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "messages/kernel_lane.hpp"
#include "workers/process/descendant_reaper.hpp"
#include "workers/process/exit_description.hpp"

extern char** environ;

namespace rpl::workers {

namespace {

/// Enough of the child's stderr to quote its last complaint.
constexpr std::size_t kept_stderr_bytes = 8192;

void close_fd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

std::vector<std::string> child_environment(const lane_process_options& options) {
  std::vector<std::string> entries;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry)
    entries.emplace_back(*entry);
  for (const auto& [name, value] : options.environment) {
    const std::string prefix = name + "=";
    std::erase_if(entries, [&](const std::string& e) { return e.starts_with(prefix); });
    if (value)
      entries.push_back(prefix + *value);
  }
  return entries;
}

/// Everything exec needs, built before fork (after fork only async-signal-safe calls are allowed).
struct exec_plan {
  explicit exec_plan(const lane_process_options& options)
      : env_entries(child_environment(options)), pdeathsig(options.kill_on_parent_death) {
    for (const std::string& word : options.argv)
      args.push_back(const_cast<char*>(word.c_str()));
    args.push_back(nullptr);
    for (std::string& entry : env_entries)
      envp.push_back(entry.data());
    envp.push_back(nullptr);
  }
  exec_plan(const exec_plan&) = delete;
  exec_plan& operator=(const exec_plan&) = delete;
  std::vector<char*> args;
  std::vector<std::string> env_entries;
  std::vector<char*> envp;
  bool pdeathsig;
};

/// The descriptors spawn() opens: [0] parent's end, [1] child's end. Closed unless released.
struct spawn_fds {
  int channel[2] = {-1, -1};
  int errors[2] = {-1, -1}; ///< the child's stderr
  int report[2] = {-1, -1}; ///< CLOEXEC: the child writes errno here when exec fails
  ~spawn_fds() {
    for (int* pair : {channel, errors, report}) {
      close_fd(pair[0]);
      close_fd(pair[1]);
    }
  }
  std::string open() {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0)
      return std::string("socketpair: ") + std::strerror(errno);
    if (::pipe2(errors, O_CLOEXEC) != 0 || ::pipe2(report, O_CLOEXEC) != 0)
      return std::string("pipe: ") + std::strerror(errno);
    return {};
  }
};

[[noreturn]] void child_fail(int report_fd) {
  const int error = errno;
  [[maybe_unused]] const ssize_t written = ::write(report_fd, &error, sizeof error);
  ::_exit(127);
}

/// The child's side of fork: own group, clean signals, the three descriptors, exec.
[[noreturn]] void exec_child(const exec_plan& plan, const spawn_fds& fds, pid_t parent) {
  const int report = fds.report[1];
  if (::setpgid(0, 0) != 0)
    child_fail(report);
  if (plan.pdeathsig) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
      child_fail(report);
    if (::getppid() != parent)
      ::_exit(127);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (const int sig : {SIGPIPE, SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGCHLD})
    ::signal(sig, SIG_DFL);
  if (::dup2(fds.channel[1], STDIN_FILENO) < 0 || ::dup2(fds.channel[1], STDOUT_FILENO) < 0 ||
      ::dup2(fds.errors[1], STDERR_FILENO) < 0)
    child_fail(report);
#ifdef SYS_close_range
  ::syscall(SYS_close_range, 3u, ~0u, 1u << 2); // CLOSE_RANGE_CLOEXEC: no leaked descriptors
#endif
  ::execvpe(plan.args[0], plan.args.data(), plan.envp.data());
  child_fail(report);
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

int poll_timeout_ms(lane_process::clock::time_point deadline) {
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - lane_process::clock::now());
  return static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 1000));
}

} // namespace

lane_process lane_process::spawn(const lane_process_options& options) {
  lane_process child;
  if (options.argv.empty() || options.argv.front().empty()) {
    child.launch_error_ = "empty argv: nothing to run";
    return child;
  }
  const exec_plan plan(options);
  spawn_fds fds;
  if (std::string error = fds.open(); !error.empty()) {
    child.launch_error_ = error;
    return child;
  }
  const pid_t parent = ::getpid();
  pid_t pid = -1;
  {
    // Registered as a child its owner waits for: the run reaper neither reaps it nor takes it for
    // a run's orphan (held across fork: the child only execs).
    const auto registry = lock_direct_children();
    pid = ::fork();
    if (pid == 0)
      exec_child(plan, fds, parent);
    if (pid > 0)
      add_direct_child(pid, registry);
  }
  if (pid < 0) {
    child.launch_error_ = std::string("fork: ") + std::strerror(errno);
    return child;
  }
  ::setpgid(pid, pid); // whichever side runs first sets the group; EACCES after exec is fine
  close_fd(fds.channel[1]);
  close_fd(fds.errors[1]);
  close_fd(fds.report[1]);
  int exec_errno = 0;
  ssize_t got = 0;
  do {
    got = ::read(fds.report[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  if (got > 0) {
    child.launch_error_ = "execvp " + options.argv.front() + ": " + std::strerror(exec_errno);
    int status = 0;
    ::waitpid(pid, &status, 0);
    remove_direct_child(pid);
    return child;
  }
  child.pid_ = pid;
  child.channel_fd_ = std::exchange(fds.channel[0], -1);
  child.stderr_fd_ = std::exchange(fds.errors[0], -1);
  set_nonblocking(child.channel_fd_);
  set_nonblocking(child.stderr_fd_);
  return child;
}

lane_process::lane_process(lane_process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), channel_fd_(std::exchange(other.channel_fd_, -1)),
      stderr_fd_(std::exchange(other.stderr_fd_, -1)),
      launch_error_(std::move(other.launch_error_)), pending_(std::move(other.pending_)),
      stderr_tail_(std::move(other.stderr_tail_)), exit_code_(other.exit_code_) {}

lane_process& lane_process::operator=(lane_process&& other) noexcept {
  if (this != &other) {
    lane_process doomed(std::move(*this)); // kills and reaps what this held
    pid_ = std::exchange(other.pid_, -1);
    channel_fd_ = std::exchange(other.channel_fd_, -1);
    stderr_fd_ = std::exchange(other.stderr_fd_, -1);
    launch_error_ = std::move(other.launch_error_);
    pending_ = std::move(other.pending_);
    stderr_tail_ = std::move(other.stderr_tail_);
    exit_code_ = other.exit_code_;
  }
  return *this;
}

lane_process::~lane_process() {
  if (running())
    kill();
  close_fds();
}

void lane_process::close_fds() {
  close_fd(channel_fd_);
  close_fd(stderr_fd_);
}

bool lane_process::has_exited() const {
  if (!running())
    return false;
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid_;
}

bool lane_process::send(const std::string& payload,
                        clock::time_point deadline,
                        std::string& error) {
  const std::string bytes = messages::frame_bytes(payload);
  std::size_t done = 0;
  while (done < bytes.size()) {
    if (channel_fd_ < 0) {
      error = "the lane process's input is closed";
      return false;
    }
    const ssize_t put = ::send(channel_fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (put > 0) {
      done += static_cast<std::size_t>(put);
      continue;
    }
    if (put < 0 && errno == EINTR)
      continue;
    if (put < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      error = std::string("writing to the lane process: ") + std::strerror(errno);
      return false;
    }
    if (clock::now() >= deadline) {
      error = "the lane process is not reading its input";
      return false;
    }
    pollfd fds[2] = {{channel_fd_, POLLOUT, 0}, {stderr_fd_, POLLIN, 0}};
    ::poll(fds, stderr_fd_ >= 0 ? 2 : 1, poll_timeout_ms(deadline));
    drain_stderr();
  }
  return true;
}

frame_wait
lane_process::receive(std::string& payload, clock::time_point deadline, std::string& error) {
  char buffer[65536];
  while (true) {
    try {
      if (auto frame = messages::take_frame(pending_)) {
        payload = std::move(*frame);
        return frame_wait::frame;
      }
    } catch (const messages::frame_error& e) {
      error = e.what();
      return frame_wait::broken;
    }
    if (channel_fd_ < 0)
      return frame_wait::closed;
    const ssize_t got = ::recv(channel_fd_, buffer, sizeof buffer, 0);
    if (got > 0) {
      pending_.append(buffer, static_cast<std::size_t>(got));
      continue;
    }
    if (got == 0) {
      drain_stderr();
      return frame_wait::closed;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      error = std::string("reading from the lane process: ") + std::strerror(errno);
      return frame_wait::broken;
    }
    if (clock::now() >= deadline)
      return frame_wait::timed_out;
    pollfd fds[2] = {{channel_fd_, POLLIN, 0}, {stderr_fd_, POLLIN, 0}};
    ::poll(fds, stderr_fd_ >= 0 ? 2 : 1, poll_timeout_ms(deadline));
    drain_stderr();
  }
}

void lane_process::drain_stderr() {
  if (stderr_fd_ < 0)
    return;
  char buffer[16384];
  for (int reads = 0; reads < 64; ++reads) { // bounded: a chatty child cannot trap the caller
    const ssize_t got = ::read(stderr_fd_, buffer, sizeof buffer);
    if (got > 0) {
      stderr_tail_.append(buffer, static_cast<std::size_t>(got));
      if (stderr_tail_.size() > kept_stderr_bytes)
        stderr_tail_.erase(0, stderr_tail_.size() - kept_stderr_bytes);
      continue;
    }
    if (got < 0 && errno == EINTR)
      continue;
    if (got == 0)
      close_fd(stderr_fd_);
    return;
  }
}

std::string lane_process::stderr_tail() const {
  std::string tail = stderr_tail_;
  while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.back())))
    tail.pop_back();
  const std::size_t start = tail.find_first_not_of(" \t\r\n");
  return start == std::string::npos ? std::string() : tail.substr(start);
}

std::string lane_process::reap(clock::time_point deadline) {
  while (true) {
    siginfo_t info{};
    // WNOWAIT keeps the zombie, so its group id cannot be reused before the group is killed below.
    const int rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc == 0 && info.si_pid == pid_)
      break;
    if (rc != 0 && errno != EINTR) {
      remove_direct_child(pid_);
      pid_ = -1;
      close_fds();
      return "could not be waited for (" + std::string(std::strerror(errno)) + ")";
    }
    if (clock::now() >= deadline) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      deadline = clock::time_point::max(); // SIGKILL cannot be refused: wait for it
    }
    drain_stderr();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(-pid_, SIGKILL); // whatever the lane started must not outlive it
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  remove_direct_child(pid_);
  drain_stderr();
  pid_ = -1;
  close_fds();
  exit_code_ = WIFEXITED(status) ? std::optional<int>(WEXITSTATUS(status)) : std::nullopt;
  return describe_wait_status(status);
}

std::string lane_process::stop(std::chrono::milliseconds grace) {
  if (!running())
    return "was not running";
  if (channel_fd_ >= 0)
    ::shutdown(channel_fd_, SHUT_WR); // end of input: the lane's cue to exit
  return reap(clock::now() + grace);
}

std::string lane_process::kill() {
  if (!running())
    return "was not running";
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  return reap(clock::time_point::max());
}

} // namespace rpl::workers
