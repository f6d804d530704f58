// `rocm-perf compare BASE NEW`: did a change make the application faster, which kernels, by how
// much with what confidence, what it did to the critical path, and why. Both sides are read at
// once (a thread each), each in one pass over its dispatch tables (compare_side.hpp); the
// statistics, verdicts and renderings are stages/compare/.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/commands/command.hpp"
#include "engine/commands/compare_side.hpp"
#include "stages/compare/compare_text.hpp"
#include "stages/compare/comparison_builder.hpp"
#include "stages/compare/fail_rule.hpp"
#include "stages/statistics/median_interval.hpp"

namespace rpl::engine::commands {

namespace {

namespace fs = std::filesystem;
namespace cmp = stages::compare;

struct compare_options {
  std::vector<fs::path> positional; ///< BASE NEW
  std::vector<fs::path> base;       ///< --base, repeatable: one run each
  std::vector<fs::path> next;       ///< --new, repeatable
  bool json = false;
  bool markdown = false;
  std::string noise = "2%";
  std::string fail_on;
  std::string arch;
};

/// "2%", "2", "0.5 %" → 0.02, 0.02, 0.005; nullopt for anything else.
std::optional<double> parse_percent(std::string text) {
  while (!text.empty() && (text.back() == '%' || text.back() == ' '))
    text.pop_back();
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || value < 0 ||
      value >= 100)
    return std::nullopt;
  return value / 100.0;
}

int bad(const std::string& message) {
  std::fprintf(stderr, "rocm-perf compare: error: %s\n", message.c_str());
  return exit_code::bad_input;
}

/// Both sides, each on its own thread; the first failure (BASE's first) is rethrown.
std::pair<compare_side, compare_side> read_sides(const std::vector<fs::path>& base,
                                                 const std::vector<fs::path>& next,
                                                 const std::string& arch) {
  compare_side a, b;
  std::exception_ptr base_error, next_error;
  std::thread other([&] {
    try {
      b = read_compare_side("NEW", next, arch);
    } catch (...) {
      next_error = std::current_exception();
    }
  });
  try {
    a = read_compare_side("BASE", base, arch);
  } catch (...) {
    base_error = std::current_exception();
  }
  other.join();
  if (base_error)
    std::rethrow_exception(base_error);
  if (next_error)
    std::rethrow_exception(next_error);
  return {std::move(a), std::move(b)};
}

cmp::side_input input_of(const compare_side& s) {
  return {s.summary, &s.report, &s.launches, &s.path, &s.counters};
}

/// Each side's what-if replays on its own thread.
void add_critical_path_effects(cmp::comparison& c,
                               const compare_side& base,
                               const compare_side& next) {
  const cmp::what_if_plan plan = cmp::plan_what_if(c);
  std::vector<double> base_savings, next_savings;
  std::thread other([&] {
    next_savings =
        stages::analysis::what_if_each(next.timeline, plan.next.names, plan.next.percents);
  });
  base_savings = stages::analysis::what_if_each(base.timeline, plan.base.names, plan.base.percents);
  other.join();
  cmp::apply_what_if(c, plan, base_savings, next_savings);
}

/// Results stores: what the rows are, and each side's fastest configuration (the tuning's answer,
/// by the median of its samples); counters are no question for them.
void add_store_notes(cmp::comparison& c, const compare_side& base, const compare_side& next) {
  // No counters, and no runs to give several of: a side is one tuning run's samples.
  std::erase_if(c.notes, [](const std::string& n) {
    return n.rfind("counters:", 0) == 0 || n.rfind("one run per side", 0) == 0;
  });
  c.notes.insert(c.notes.begin(),
                 "results stores: each configuration of BASE's run " + base.summary.store_run +
                     " against the same configuration (by its parameters) of NEW's run " +
                     next.summary.store_run +
                     "; its samples are the lane's measurements; no timeline, no critical path");
  for (const auto* side : {&base, &next}) {
    const cmp::launch_samples* best = nullptr;
    double best_ns = 0;
    for (const auto& l : side->launches) {
      const double m = stages::estimate_median(l.durations_ns, 0.95).median;
      if (best == nullptr || m < best_ns) {
        best = &l;
        best_ns = m;
      }
    }
    char figure[32];
    std::snprintf(figure, sizeof figure, "%.3f ms", best_ns / 1e6);
    c.notes.push_back(std::string(side == &base ? "BASE" : "NEW") +
                      "'s fastest configuration: " + best->name + " (median " + figure + ")");
  }
}

/// "no kernel in common" names a few kernels of each side.
std::string some_names(const std::vector<cmp::launch_samples>& launches) {
  std::string out;
  std::size_t shown = 0;
  for (const auto& l : launches) {
    if (out.find(l.name) != std::string::npos)
      continue;
    if (shown++ == 3) {
      out += ", ...";
      break;
    }
    out += (out.empty() ? "" : ", ") + l.name;
  }
  return out.empty() ? "none" : out;
}

int compare(const compare_options& o) {
  if (o.json && o.markdown)
    return bad("--json and --markdown: choose one; fix: drop one of them");
  std::vector<fs::path> base = o.base, next = o.next;
  if (!o.positional.empty()) {
    if (o.positional.size() != 2 || !base.empty() || !next.empty())
      return bad("give BASE and NEW either as two arguments or with --base/--new, not both; "
                 "fix: rocm-perf compare BASE NEW, or rocm-perf compare --base A --base B --new "
                 "C --new D");
    base = {o.positional[0]};
    next = {o.positional[1]};
  }
  if (base.empty() || next.empty())
    return bad(std::string(base.empty() ? "no BASE" : "no NEW") +
               " given; fix: rocm-perf compare BASE NEW (rocpd files, folders of them, or "
               "profile --out folders)");
  const auto noise = parse_percent(o.noise);
  if (!noise)
    return bad("--noise " + o.noise + ": not a percentage; fix: --noise 2% (0 to 100)");
  std::optional<cmp::fail_rule> rule;
  if (!o.fail_on.empty()) {
    std::string error;
    rule = cmp::parse_fail_rule(o.fail_on, error);
    if (!rule)
      return bad(error);
  }
  std::pair<compare_side, compare_side> sides;
  try {
    sides = read_sides(base, next, o.arch);
  } catch (const compare_input_error& error) {
    return bad(error.what());
  }
  const auto& [a, b] = sides;
  const bool stores = !a.summary.store_run.empty();
  if (stores != !b.summary.store_run.empty())
    return bad(std::string(stores ? "BASE" : "NEW") + " is a results store and " +
               (stores ? "NEW" : "BASE") +
               " is a trace: a store's rows are configurations, a trace's are kernels; fix: "
               "compare two stores (autotune --db) or two traces");
  if (stores && rule && rule->what == cmp::fail_rule::kind::critical_path)
    return bad("--fail-on " + o.fail_on +
               ": results stores have no critical path; fix: "
               "--fail-on slower:P% for stores");
  cmp::comparison c =
      cmp::build_comparison(input_of(a), input_of(b), {.noise = *noise, .confidence = 0.95});
  if (count(c, cmp::kernel_verdict::added) + count(c, cmp::kernel_verdict::removed) ==
      c.kernels.size())
    return bad("BASE and NEW have no kernel in common (BASE: " + some_names(a.launches) +
               "; NEW: " + some_names(b.launches) +
               "); fix: compare two runs of the same application");
  if (stores)
    add_store_notes(c, a, b);
  else
    add_critical_path_effects(c, a, b);
  if (o.json)
    std::printf("%s\n", cmp::to_json(c).dump(2).c_str());
  else
    std::fputs((o.markdown ? cmp::to_markdown(c) : cmp::to_text(c)).c_str(), stdout);
  if (rule) {
    const auto failing = cmp::tripped(c, *rule);
    for (const auto& k : failing)
      std::fprintf(stderr, "rocm-perf compare: --fail-on %s: %s\n", o.fail_on.c_str(), k.c_str());
    if (!failing.empty())
      return exit_code::run_failed;
  }
  return exit_code::done;
}

class compare_command final : public command {
public:
  void add_to(CLI::App& app) override {
    cmd_ = app.add_subcommand("compare", "Compare two profiles of an application (BASE, NEW): "
                                         "per kernel and on the critical path");
    cmd_->add_option("inputs", options_.positional,
                     "BASE NEW: rocpd files, folders of them, profile --out folders, or two "
                     "results stores (autotune --db)")
        ->expected(0, 2);
    cmd_->add_option("--base", options_.base, "A BASE run (repeatable: several runs)")
        ->expected(1)
        ->take_all();
    cmd_->add_option("--new", options_.next, "A NEW run (repeatable: several runs)")
        ->expected(1)
        ->take_all();
    cmd_->add_flag("--json", options_.json, "Print strict JSON (docs/schema/compare.schema.json)");
    cmd_->add_flag("--markdown", options_.markdown, "Print Markdown for a pull-request comment");
    cmd_->add_option("--noise", options_.noise,
                     "The least band of `same`, in percent (default 2%); the noise measured "
                     "between runs widens it");
    cmd_->add_option("--fail-on", options_.fail_on,
                     "Exit 1 when a kernel is slower by more than this at its interval's low "
                     "end: slower:5% (slower: any slower verdict), or when NEW's critical path "
                     "is longer by more than this: critical-path:2%");
    cmd_->add_option("--arch", options_.arch, "Target for occupancy (default: the agent's)");
  }

  bool chosen() const override { return cmd_->parsed(); }

  int run() override {
    setup_logging(true);
    tune_allocator_for_traces();
    return compare(options_);
  }

private:
  CLI::App* cmd_ = nullptr;
  compare_options options_;
};

} // namespace

command_ptr make_compare_command() {
  return std::make_unique<compare_command>();
}

} // namespace rpl::engine::commands
