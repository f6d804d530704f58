// bench/search/recorded_run: `rocm-perf autotune --recorded` end to end on a 10,000-configuration
// landscape at a 10 % budget (issue 12's goal: under 5 s on the 2-core machine, so that strategy
// overhead never matters next to a real compile). Runs the real CLI as a child --repeat times per
// strategy and prints the median wall time; baseline: the same strategy's search in-process on the
// same landscape (bench/search/search.cpp's loop, no engine, no store), so the ratio is what the
// engine's graph, lanes and results store add.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include <CLI/CLI.hpp>

#include "stages/search/model_strategy.hpp"
#include "stages/search/strategy.hpp"
#include "workers/lanes/recorded/landscape_file.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"autotune --recorded end to end (issue 12)"};
  std::filesystem::path file = std::filesystem::path(RPL_SOURCE_ROOT) / ".." / "shared" /
                               "landscapes" / "dedispersion_milo_A4000.json.gz";
  double budget_pct = 10;
  int repeat = 3;
  app.add_option("landscape", file, "Kernel Tuner cache file (default: dedispersion, 11,130)");
  app.add_option("--budget", budget_pct, "Budget, % of the space");
  app.add_option("--repeat", repeat, "Runs per strategy");
  CLI11_PARSE(app, argc, argv);
  const auto l = rpl::workers::load_landscape(file);
  const auto configs = l.as_space().configurations;
  const auto budget =
      static_cast<std::size_t>(budget_pct / 100 * static_cast<double>(configs.size()));
  const auto exe = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "rocm-perf";
  char dir_pattern[] = "/tmp/rpl-recorded-XXXXXX";
  const std::filesystem::path dir = mkdtemp(dir_pattern);
  std::printf("%s: %zu configurations, budget %zu (%.0f %%)\n", file.filename().c_str(),
              configs.size(), budget, budget_pct);
  int status = 0;
  for (const std::string strategy : {"random", "model"}) {
    std::vector<double> engine, inproc;
    for (int r = 0; r < repeat; ++r) {
      const auto db = dir / (strategy + std::to_string(r) + ".db");
      const std::string command = exe.string() + " autotune --recorded '" + file.string() +
                                  "' --strategy " + strategy + " --budget " +
                                  std::to_string(budget) + " --seed " + std::to_string(r + 1) +
                                  " --db '" + db.string() + "' --json > /dev/null 2>&1";
      const auto start = clock_type::now();
      if (std::system(command.c_str()) != 0) {
        std::fprintf(stderr, "recorded_run: failed: %s\n", command.c_str());
        status = 1;
      }
      engine.push_back(std::chrono::duration<double>(clock_type::now() - start).count());
      const auto in_start = clock_type::now();
      auto s = strategy == "model"
                   ? std::unique_ptr<rpl::stages::strategy>(
                         std::make_unique<rpl::stages::model_strategy>(configs, budget, r + 1))
                   : rpl::stages::make_strategy(strategy, configs.size(), budget, r + 1);
      while (const auto i = s->next()) {
        rpl::stages::observation o;
        o.index = *i;
        o.config = &configs[*i];
        if (l.entries[*i].value)
          o.value_ns = l.cost(*i);
        s->observe(o);
      }
      inproc.push_back(std::chrono::duration<double>(clock_type::now() - in_start).count());
    }
    const double e = median(engine), b = median(inproc);
    std::printf("%-7s engine %.2f s (median of %d), in-process search %.3f s: x%.1f; target < 5 s: "
                "%s\n",
                strategy.c_str(), e, repeat, b, b > 0 ? e / b : 0, e < 5 ? "met" : "NOT met");
  }
  std::filesystem::remove_all(dir);
  return status;
}
