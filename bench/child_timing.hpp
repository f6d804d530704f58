#pragma once
/// What the benchmarks that time a command in a child share (analyze_out, compare): running a body
/// in a forked child with its wall time, CPU time and own peak RSS (wait4), and the median of the
/// repeats.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace rpl::bench {

struct child_run {
  int status = -1;
  double wall_s = 0;
  double cpu_s = 0; ///< user + system: the run's own cost, which a busy machine barely changes
  double peak_rss_mb = 0;
};

/// Runs `body` in a child process and returns how it ended, its wall and CPU time and its own
/// peak RSS.
inline child_run in_child(const std::function<int()>& body) {
  std::fflush(stdout); // the child must not print what this process has buffered
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0)
    _exit(body());
  child_run r;
  rusage usage{};
  wait4(pid, &r.status, 0, &usage);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.peak_rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;
  r.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
            static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  return r;
}

/// The upper median (the middle element, the higher of two); 0 for none.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace rpl::bench
