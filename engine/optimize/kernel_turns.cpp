#include "engine/optimize/kernel_turns.hpp"

#include <algorithm>
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

std::vector<target_result> run_kernel_turns(const std::vector<kernel_target>& targets,
                                            const std::vector<int>& devices,
                                            const run_budget& budget,
                                            const std::atomic<bool>& stop,
                                            const optimize_one_fn& optimize_one) {
  std::vector<target_result> results(targets.size());
  std::vector<char> done(targets.size(), 0); // not vector<bool>: threads write apart
  const std::size_t n_devices = std::max<std::size_t>(devices.size(), 1);
  const auto run_device = [&](std::size_t d) {
    for (std::size_t i = d; i < targets.size(); i += n_devices) {
      const auto& target = targets[i];
      const std::size_t left = (targets.size() - i + n_devices - 1) / n_devices;
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
        results[i] = optimize_one(i, d, turn.deadline);
      }
      results[i].seconds += std::chrono::duration<double>(budget.now() - begin).count();
      done[i] = 1;
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < n_devices && d < targets.size(); ++d) {
    threads.emplace_back([&, d] {
      try {
        run_device(d);
      } catch (const std::exception& error) {
        for (std::size_t i = d; i < targets.size(); i += n_devices) {
          if (!done[i]) {
            results[i].kernel = targets[i].kernel;
            results[i].source_path = targets[i].source_path;
            results[i].status = "failed";
            results[i].error = "the lane of device " +
                               std::to_string(d < devices.size() ? devices[d] : 0) +
                               " failed: " + error.what();
            results[i].reason = results[i].error;
          }
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  return results;
}

} // namespace rpl::engine
