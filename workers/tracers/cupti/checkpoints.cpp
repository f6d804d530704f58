#include "workers/tracers/cupti/checkpoints.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <exception>
#include <fcntl.h>
#include <mutex>
#include <poll.h>
#include <thread>
#include <unistd.h>

#include <pthread.h>

namespace rpl::workers::cupti_tracer {
namespace {

constexpr int signal_slots = 65; // signal numbers 1..64 on Linux

/// What the handlers and the checkpoint thread share. Created once and never freed: a handler may
/// run at any time, static destruction included.
struct guard {
  // Set before the handlers are installed and the thread starts; only read by handlers.
  int request_read = -1, request_write = -1; // handler -> thread: {signal, fatal}; {0, 0}: stop
  int done_read = -1, done_write = -1;       // thread -> handler: one byte per last write done
  pid_t pid = 0;
  std::int64_t signal_wait_ms = 3000;
  pthread_t thread{};
  struct sigaction previous[signal_slots] = {};
  std::atomic<bool> installed[signal_slots] = {};
  std::atomic<bool> serving{false};       // the thread answers requests
  std::atomic<bool> in_last_write{false}; // a handler waits for a last write
  std::atomic<bool> stop_requested{false};

  // The thread's side; handlers never touch these.
  checkpoint_settings settings;
  checkpoint_hooks hooks;
  std::mutex mutex;
  std::condition_variable changed;
  bool thread_alive = false; // guarded by mutex
};

std::atomic<guard*> g_guard{nullptr};

// ---- In the signal handler: async-signal-safe calls only ----------------------------------------

std::int64_t monotonic_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1'000'000;
}

/// Whether `action` lets the signal's default action happen (SIG_IGN counts: only signals that
/// were not ignored get a handler, so an ignored one here is a fault signal, which the kernel does
/// not let a process ignore).
bool default_action(const struct sigaction& action) {
  if ((action.sa_flags & SA_SIGINFO) != 0 && action.sa_sigaction != nullptr) {
    return false;
  }
  return action.sa_handler == SIG_DFL || action.sa_handler == SIG_IGN;
}

/// Asks the checkpoint thread for a last write and waits for it, at most signal_wait_ms.
void ask_for_last_write(const guard& g, int signal, bool fatal) {
  char stale[16];
  while (::read(g.done_read, stale, sizeof stale) > 0) {
    // an answer to an earlier handler that stopped waiting
  }
  const char request[2] = {static_cast<char>(signal), static_cast<char>(fatal ? 1 : 0)};
  if (::write(g.request_write, request, sizeof request) != static_cast<ssize_t>(sizeof request)) {
    return;
  }
  const std::int64_t deadline = monotonic_ms() + g.signal_wait_ms;
  for (;;) {
    const std::int64_t left = deadline - monotonic_ms();
    if (left <= 0) {
      return;
    }
    pollfd done{g.done_read, POLLIN, 0};
    const int ready = ::poll(&done, 1, static_cast<int>(std::min<std::int64_t>(left, 60'000)));
    if (ready > 0) {
      char byte = 0;
      (void)::read(g.done_read, &byte, 1);
      return;
    }
    if (ready < 0 && errno != EINTR) {
      return;
    }
  }
}

/// What would have happened without us: the program's own handler, or the default action (the
/// signal is raised again with SIG_DFL; it stays pending until our handler returns).
void hand_on(int signal, siginfo_t* info, void* context, const struct sigaction& previous) {
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal, info, context);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);
    return;
  }
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  ::sigaction(signal, &fallback, nullptr);
  ::raise(signal);
}

void on_signal(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  guard* g = g_guard.load();
  if (g == nullptr || signal <= 0 || signal >= signal_slots) {
    errno = saved_errno;
    return;
  }
  const struct sigaction previous = g->previous[signal];
  const bool fatal = default_action(previous);
  // Not in a fork()ed child (the thread is the parent's), and never on the checkpoint thread itself
  // (it would wait for itself).
  if (::getpid() == g->pid && g->serving.load() && !::pthread_equal(::pthread_self(), g->thread)) {
    if (!g->in_last_write.exchange(true)) {
      ask_for_last_write(*g, signal, fatal);
      g->in_last_write.store(false);
    } else {
      // Another thread's signal is being written: let it finish before this one may end us.
      const std::int64_t deadline = monotonic_ms() + g->signal_wait_ms;
      while (g->in_last_write.load() && monotonic_ms() < deadline) {
        (void)::poll(nullptr, 0, 10);
      }
    }
  }
  hand_on(signal, info, context, previous);
  errno = saved_errno;
}

// ---- The checkpoint thread ----------------------------------------------------------------------

void serve(guard* g) {
  (void)::pthread_setname_np(::pthread_self(), "rpl-checkpoint");
  using clock = std::chrono::steady_clock;
  const std::chrono::milliseconds period = g->settings.period;
  auto next = clock::now() + period;
  for (;;) {
    int timeout_ms = -1;
    if (period.count() > 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(next - clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<long long>(left, 0, 60'000));
    }
    pollfd request{g->request_read, POLLIN, 0};
    const int ready = ::poll(&request, 1, timeout_ms);
    if (ready > 0) {
      char message[2] = {0, 0};
      if (::read(g->request_read, message, sizeof message) ==
          static_cast<ssize_t>(sizeof message)) {
        if (message[0] == 0) {
          break; // stop
        }
        try {
          if (g->hooks.on_signal)
            g->hooks.on_signal(static_cast<unsigned char>(message[0]), message[1] != 0);
        } catch (...) {
          // the hook reports its own failures; the handler must be answered regardless
        }
        const char done = 1;
        (void)::write(g->done_write, &done, 1);
        continue;
      }
    }
    if (g->stop_requested.load()) {
      break;
    }
    if (period.count() > 0 && clock::now() >= next) {
      const auto started = clock::now();
      try {
        if (g->hooks.periodic)
          g->hooks.periodic();
      } catch (...) {
        // the hook reports its own failures
      }
      const auto took = clock::now() - started;
      next = clock::now() + std::max<clock::duration>(period, 4 * took);
    }
  }
  g->serving.store(false);
  std::lock_guard<std::mutex> lock(g->mutex);
  g->thread_alive = false;
  g->changed.notify_all();
}

bool make_pipe(int& read_end, int& write_end, std::string& error) {
  if (read_end >= 0) {
    char stale[64];
    while (::read(read_end, stale, sizeof stale) > 0) {
    }
    return true; // kept from an earlier start
  }
  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    error = std::string("pipe2: ") + std::strerror(errno);
    return false;
  }
  read_end = fds[0];
  write_end = fds[1];
  return true;
}

void install_handlers(guard& g, const std::vector<int>& signals) {
  for (const int signal : signals) {
    if (signal <= 0 || signal >= signal_slots || g.installed[signal].load()) {
      continue;
    }
    struct sigaction old {};
    if (::sigaction(signal, nullptr, &old) != 0) {
      continue;
    }
    if ((old.sa_flags & SA_SIGINFO) == 0 && old.sa_handler == SIG_IGN) {
      continue; // the program chose to ignore it (nohup, a daemon): leave it so
    }
    g.previous[signal] = old;
    struct sigaction ours {};
    ours.sa_sigaction = on_signal;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&ours.sa_mask);
    if (::sigaction(signal, &ours, nullptr) == 0) {
      g.installed[signal].store(true);
    }
  }
}

} // namespace

bool start_checkpoints(const checkpoint_settings& settings,
                       checkpoint_hooks hooks,
                       std::string& error) {
  guard* g = g_guard.load();
  if (g == nullptr) {
    g = new guard; // never freed, see guard
  }
  {
    std::lock_guard<std::mutex> lock(g->mutex);
    if (g->thread_alive) {
      error = "the checkpoint thread is already running";
      return false;
    }
  }
  if (!make_pipe(g->request_read, g->request_write, error) ||
      !make_pipe(g->done_read, g->done_write, error)) {
    return false;
  }
  g->pid = ::getpid();
  g->signal_wait_ms = std::max<std::int64_t>(0, settings.signal_wait.count());
  g->settings = settings;
  g->hooks = std::move(hooks);
  g->stop_requested.store(false);
  g_guard.store(g);

  // The thread starts with every asynchronous signal blocked, so that signals sent to the process
  // (SIGTERM, SIGINT) reach the program's threads, and this one stays free to write. Faults stay
  // deliverable: a blocked SIGSEGV would kill the process without a handler.
  sigset_t all{};
  sigset_t before{};
  sigfillset(&all);
  for (const int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) {
    sigdelset(&all, fault);
  }
  ::pthread_sigmask(SIG_BLOCK, &all, &before);
  try {
    std::thread thread(serve, g);
    g->thread = thread.native_handle();
    {
      std::lock_guard<std::mutex> lock(g->mutex);
      g->thread_alive = true;
    }
    thread.detach(); // the process may end with it running: nothing may join it at exit
  } catch (const std::exception& e) {
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    error = std::string("cannot start the checkpoint thread: ") + e.what();
    return false;
  }
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  g->serving.store(true);
  install_handlers(*g, settings.signals);
  return true;
}

bool stop_checkpoints(std::chrono::milliseconds wait) {
  guard* g = g_guard.load();
  if (g == nullptr) {
    return true;
  }
  std::unique_lock<std::mutex> lock(g->mutex);
  if (!g->thread_alive) {
    return true;
  }
  g->stop_requested.store(true);
  const char stop[2] = {0, 0};
  (void)::write(g->request_write, stop, sizeof stop);
  return g->changed.wait_for(lock, wait, [g] { return !g->thread_alive; });
}

void remove_signal_handlers() {
  guard* g = g_guard.load();
  if (g == nullptr) {
    return;
  }
  for (int signal = 1; signal < signal_slots; ++signal) {
    if (g->installed[signal].exchange(false)) {
      ::sigaction(signal, &g->previous[signal], nullptr);
    }
  }
}

bool handles_signal(int signal) {
  guard* g = g_guard.load();
  if (g == nullptr || signal <= 0 || signal >= signal_slots || !g->installed[signal].load()) {
    return false;
  }
  struct sigaction now {};
  return ::sigaction(signal, nullptr, &now) == 0 && (now.sa_flags & SA_SIGINFO) != 0 &&
         now.sa_sigaction == on_signal;
}

} // namespace rpl::workers::cupti_tracer
