#include "engine/store/run_lease.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <utility>

#include <spdlog/spdlog.h>

#include "engine/store/utc_time.hpp"

namespace rpl::engine {

namespace {

/// How long a refused process waits for the holder to name itself in the file: a holder writes
/// its name right after it takes the lock.
constexpr auto lease_name_wait = std::chrono::seconds(1);

/// Opens and locks at most this often: each retry means the holder released the file (removed
/// it) between our open and our lock, so a few suffice.
constexpr int lease_max_tries = 100;

/// The whole file from its start; empty when unreadable.
std::string lease_read(int fd) {
  std::string text;
  char buffer[1024];
  off_t at = 0;
  for (;;) {
    const ssize_t got = ::pread(fd, buffer, sizeof buffer, at);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return text;
    text.append(buffer, static_cast<std::size_t>(got));
    at += got;
  }
}

/// True when `file` is still the file `fd` has open (a releaser removes it before unlocking).
bool lease_is_current(int fd, const std::filesystem::path& file) {
  struct stat open_file {};
  struct stat named {};
  return ::fstat(fd, &open_file) == 0 && ::stat(file.c_str(), &named) == 0 &&
         open_file.st_dev == named.st_dev && open_file.st_ino == named.st_ino;
}

std::string lease_errno_text(int error) {
  return std::strerror(error);
}

} // namespace

std::string format_lease_holder(const lease_holder& holder) {
  return "pid=" + std::to_string(holder.pid) + "\nhost=" + holder.host + "\nsince=" + holder.since +
         "\ncommand=" + holder.command + "\n";
}

std::optional<lease_holder> parse_lease_holder(std::string_view text) {
  lease_holder holder;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    const auto equals = line.find('=');
    if (equals == std::string_view::npos)
      continue;
    const std::string_view key = line.substr(0, equals);
    const std::string value(line.substr(equals + 1));
    if (key == "pid") {
      char* stop = nullptr;
      const long pid = std::strtol(value.c_str(), &stop, 10);
      if (stop != value.c_str() && *stop == '\0')
        holder.pid = pid;
    } else if (key == "host") {
      holder.host = value;
    } else if (key == "since") {
      holder.since = value;
    } else if (key == "command") {
      holder.command = value;
    }
  }
  if (holder.pid <= 0)
    return std::nullopt;
  return holder;
}

std::string describe_lease_holder(const lease_holder& holder) {
  std::string text = "pid " + std::to_string(holder.pid) + " on host " +
                     (holder.host.empty() ? std::string("(unnamed)") : holder.host);
  std::string details = holder.command;
  if (!holder.since.empty())
    details += (details.empty() ? "since " : ", since ") + holder.since;
  return details.empty() ? text : text + " (" + details + ")";
}

std::string describe_stale_lease(const lease_holder& previous,
                                 std::string_view this_host,
                                 std::optional<bool> running) {
  const std::string who = describe_lease_holder(previous);
  if (previous.host != this_host || !running)
    return who + " no longer holds its lock (it ended without releasing the lease: killed, or "
                 "its host went down)";
  if (!*running)
    return who + " held it and is no longer running";
  return who + " no longer holds its lock (pid " + std::to_string(previous.pid) +
         " runs, but it is another process now, or it closed the file)";
}

std::string lease_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0)
    return "localhost";
  return name;
}

run_lease run_lease::acquire(const std::filesystem::path& file, const std::string& command) {
  const std::string host = lease_host_name();
  for (int attempt = 1;; ++attempt) {
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      throw std::runtime_error("cannot create the lease file " + file.string() + ": " +
                               lease_errno_text(errno) + "; fix: make its folder writable");
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      if (error == EWOULDBLOCK && !lease_is_current(fd, file) && attempt < lease_max_tries) {
        ::close(fd); // released meanwhile: try the file that is there now
        continue;
      }
      if (error != EWOULDBLOCK) {
        ::close(fd);
        throw std::runtime_error("cannot lock the lease file " + file.string() + ": " +
                                 lease_errno_text(error) +
                                 "; fix: put the run on a file system with flock(2) locks");
      }
      // The holder writes its name just after it locks: give it a moment.
      auto holder = parse_lease_holder(lease_read(fd));
      const auto until = std::chrono::steady_clock::now() + lease_name_wait;
      while (!holder && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        holder = parse_lease_holder(lease_read(fd));
      }
      ::close(fd);
      const std::string who = holder ? describe_lease_holder(*holder)
                                     : std::string("a process that has not named itself");
      throw lease_held_error("held by " + who + "; lease file " + file.string(), holder);
    }
    if (!lease_is_current(fd, file) && attempt < lease_max_tries) {
      ::close(fd); // its holder released it (removed the file) before we locked it
      continue;
    }
    if (const auto previous = parse_lease_holder(lease_read(fd))) {
      std::optional<bool> running;
      if (previous->host == host)
        running = ::kill(static_cast<pid_t>(previous->pid), 0) == 0 || errno == EPERM;
      spdlog::warn("taking over the lease {}: {}", file.string(),
                   describe_stale_lease(*previous, host, running));
    }
    const lease_holder self{static_cast<long>(::getpid()), host, utc_timestamp(), command};
    const std::string text = format_lease_holder(self);
    if (::ftruncate(fd, 0) != 0 ||
        ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
      const int error = errno;
      ::close(fd);
      throw std::runtime_error("cannot write the lease file " + file.string() + ": " +
                               lease_errno_text(error) + "; fix: free space on its file system");
    }
    return run_lease(file, fd);
  }
}

run_lease::run_lease(run_lease&& other) noexcept
    : file_(std::move(other.file_)), fd_(std::exchange(other.fd_, -1)) {}

run_lease& run_lease::operator=(run_lease&& other) noexcept {
  if (this != &other) {
    release();
    file_ = std::move(other.file_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

run_lease::~run_lease() {
  release();
}

void run_lease::release() {
  if (fd_ < 0)
    return;
  // Removed while still locked, so that nobody takes a lease on a file about to disappear (one
  // that opened it already sees, once it has the lock, that the name is gone, and starts over).
  if (lease_is_current(fd_, file_))
    ::unlink(file_.c_str());
  ::close(fd_);
  fd_ = -1;
}

} // namespace rpl::engine
