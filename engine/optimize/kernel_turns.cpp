#include "engine/optimize/kernel_turns.hpp"

#include <algorithm>
#include <mutex>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

namespace rpl::engine {

target_result not_reached_result(const std::string& kernel,
                                 const std::filesystem::path& source,
                                 std::string reason) {
  target_result r;
  r.kernel = kernel;
  r.source_path = source;
  r.status = "not_reached";
  r.reason = std::move(reason);
  return r;
}

namespace {

target_result failed_result(const kernel_target& target, const std::string& why) {
  target_result r;
  r.kernel = target.kernel;
  r.source_path = target.source_path;
  r.status = "failed";
  r.error = why;
  r.reason = why;
  return r;
}

} // namespace

std::vector<target_result> run_kernel_turns(const std::vector<kernel_target>& targets,
                                            const std::vector<int>& devices,
                                            const run_budget& budget,
                                            const std::atomic<bool>& stop,
                                            const optimize_one_fn& optimize_one,
                                            std::size_t wanted) {
  wanted = std::min(wanted, targets.size());
  std::vector<target_result> results(targets.size());
  std::vector<char> done(targets.size(), 0);  // not vector<bool>: threads write apart
  std::vector<char> taken(targets.size(), 0); // a device took it (its result counts)
  const std::size_t n_devices = std::max<std::size_t>(devices.size(), 1);
  std::vector<std::size_t> current(n_devices, targets.size()); // each device's current kernel
  // The next kernel not yet taken: a device that is free takes it, so one slow kernel does not
  // hold back the kernels that a fixed deal would have queued behind it. `holding`: kernels taken
  // and not skipped (running or ended), at most `wanted`.
  std::mutex mutex;
  std::size_t next = 0;
  std::size_t holding = 0;
  const auto take = [&](std::size_t& kernels_left) {
    const std::lock_guard lock(mutex);
    if (next >= targets.size() || holding >= wanted) {
      return targets.size();
    }
    kernels_left = (wanted - holding + n_devices - 1) / n_devices;
    ++holding;
    taken[next] = 1;
    return next++;
  };
  const auto run_device = [&](std::size_t d) {
    std::size_t left = 0;
    for (std::size_t i = take(left); i < targets.size(); i = take(left)) {
      const auto& target = targets[i];
      const auto begin = budget.now();
      if (stop) {
        results[i] = not_reached_result(target.kernel, target.source_path,
                                        "interrupted before its turn came");
      } else if (const auto turn = budget.kernel_turn(left); !turn.refused.empty()) {
        spdlog::warn("{}: not started: {}", target.kernel, turn.refused);
        results[i] = not_reached_result(target.kernel, target.source_path, turn.refused);
      } else {
        if (turn.deadline) {
          spdlog::info("{}: its turn, {} of the budget", target.kernel,
                       seconds_text(*turn.deadline - begin));
        }
        current[d] = i;
        results[i] = optimize_one(i, d, turn.deadline);
      }
      results[i].seconds += std::chrono::duration<double>(budget.now() - begin).count();
      done[i] = 1;
      if (results[i].status == "skipped") {
        const std::lock_guard lock(mutex);
        --holding;
      }
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < n_devices && d < targets.size(); ++d) {
    threads.emplace_back([&, d] {
      try {
        run_device(d);
      } catch (const std::exception& error) {
        // The kernel this device had taken fails; the others go to the devices still running.
        const std::string why = "the lane of device " +
                                std::to_string(d < devices.size() ? devices[d] : 0) +
                                " failed: " + error.what();
        if (const std::size_t i = current[d]; i < targets.size() && !done[i]) {
          results[i] = failed_result(targets[i], why);
          done[i] = 1;
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  // Every device failed before these were taken; spares beyond `wanted` are left out.
  std::vector<target_result> out;
  std::size_t counted = 0;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (!done[i] && !taken[i] && counted >= wanted) {
      continue;
    }
    if (!done[i]) {
      results[i] = failed_result(targets[i], "no device was left to run it: every lane failed");
    }
    counted += results[i].status == "skipped" ? 0 : 1;
    out.push_back(std::move(results[i]));
  }
  return out;
}

} // namespace rpl::engine
