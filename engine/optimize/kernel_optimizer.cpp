#include "engine/optimize/kernel_optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <set>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "engine/autotune/candidate_screen.hpp"
#include "engine/optimize/optimize_journal.hpp"
#include "stages/optimize/artifact_guard.hpp"
#include "stages/optimize/source_guard.hpp"
#include "stages/optimize/tunable_macros.hpp"
#include "stages/optimize/unified_diff.hpp"
#include "stages/optimize/validation_plan.hpp"
#include "stages/search/strategy.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::engine {

namespace {

using steady = std::chrono::steady_clock;
namespace opt = stages::optimize;

constexpr std::size_t max_detail_bytes = 4000;

std::atomic<std::uint64_t> partial_sequence{0};

std::string clip(std::string text, std::size_t limit = max_detail_bytes) {
  if (text.size() > limit) {
    text.resize(limit);
    text += "\n[... cut]";
  }
  return text;
}

/// The guard to name when several fired: a new global is also a declaration outside the
/// target, but "new_global" says what the change is.
std::string most_specific(const std::vector<opt::guard_finding>& findings) {
  for (const char* guard : {"kernel_missing", "signature_changed", "new_global", "inline_asm",
                            "device_launch", "host_code", "directive_changed"}) {
    for (const auto& f : findings) {
      if (f.guard == guard) {
        return f.guard;
      }
    }
  }
  return findings.front().guard;
}

/// A compiled source: its code object on disk (the lane loads it by path) and in memory.
struct build {
  bool ok = false;
  std::string error; ///< the compiler's output or the reason
  std::filesystem::path artifact;
  std::vector<std::byte> bytes;
  messages::compile_reply reply;
};

double median_of(std::vector<std::int64_t> samples) {
  if (samples.empty()) {
    return std::nan("");
  }
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  return n % 2 == 1 ? static_cast<double>(samples[n / 2])
                    : 0.5 * static_cast<double>(samples[n / 2 - 1] + samples[n / 2]);
}

/// The loop's state for one kernel.
class optimizer {
public:
  optimizer(const kernel_target& target,
            const optimizer_settings& settings,
            const optimizer_services& services,
            workers::lane_backend& lane,
            optimize_journal& journal,
            const std::atomic<bool>& stop)
      : target_(target), settings_(settings), services_(services), lane_(lane), journal_(journal),
        stop_(stop) {}

  target_result run();

private:
  bool out_of_time() const {
    return stop_ || (settings_.deadline && steady::now() >= *settings_.deadline);
  }
  build compile(const std::string& source_text);
  bool replay() const { return !target_.replay_dir.empty(); }
  std::optional<messages::kernel_launch> resolve(const stages::launch_spec& spec,
                                                 std::string& error) const;
  messages::measure_result run_lane(const std::filesystem::path& artifact,
                                    const std::optional<messages::kernel_launch>& launch,
                                    std::uint32_t runs,
                                    std::uint32_t warmup);
  /// Validation against the original; empty when every case passed, else the failing case.
  std::string validate(const std::filesystem::path& artifact, nlohmann::json& record);
  opt::paired_verdict compare(const std::filesystem::path& incumbent,
                              const std::filesystem::path& challenger,
                              std::uint32_t rounds,
                              nlohmann::json& record);
  bool prepare_original(target_result& result);
  void iterate(target_result& result);
  struct candidate;
  /// The record of an attempt at `proposal` against the incumbent, before any check.
  attempt_record attempt_of(const messages::proposal& proposal,
                            const std::string& proposer,
                            const std::string& worker) const;
  /// The static checks of one proposal, then its compile started (asynchronously).
  /// `worker`: the worker_id of the proposer process that sent it (its host and pid).
  candidate prepare(const messages::proposal& proposal,
                    const std::string& proposer,
                    const std::string& worker,
                    std::uint32_t repair_round);
  /// The rest of the checks, on the GPU; returns the record (not yet journaled). `alone`: a
  /// configuration of a tunable proposal, timed by itself instead of against the incumbent.
  attempt_record judge(candidate& c, bool alone = false);
  /// Searches a proposal's tunable macros; the fastest configuration as a plain proposal, or
  /// nullopt when none beat the defaults (every configuration tried is recorded).
  std::optional<messages::proposal> tune(const messages::proposal& proposal,
                                         const std::string& proposer,
                                         const std::string& worker,
                                         target_result& result);
  /// Runs a batch of one proposer's proposals; true when one was accepted (the rest of the
  /// batch is then dropped: it was made for the old incumbent).
  bool run_batch(const std::string& kind,
                 const std::string& proposer,
                 const std::string& worker,
                 const std::vector<messages::proposal>& proposals,
                 target_result& result,
                 bool& proposed_any);
  void finish(attempt_record& attempt, target_result& result, bool to_history = true);
  messages::propose_request make_request(std::uint32_t repair_round) const;
  void resume_accepted(target_result& result);
  void run_loop(target_result& result);

  const kernel_target& target_;
  const optimizer_settings& settings_;
  const optimizer_services& services_;
  workers::lane_backend& lane_;
  optimize_journal& journal_;
  const std::atomic<bool>& stop_;

  std::optional<opt::source_model> original_model_;
  build original_;
  std::string incumbent_text_;
  std::filesystem::path incumbent_artifact_;
  std::vector<messages::proposal_attempt> history_;
  std::map<std::string, attempt_record> earlier_;
  std::set<std::string> seen_hashes_;
  std::uint32_t sequence_ = 0;
  std::uint32_t iteration_ = 0;
  std::uint64_t lane_sequence_ = 0;
  std::string step_ = "starting"; ///< what the loop was doing, for an internal error's message
  /// Without a profile (--launch): the original's resources and occupancy from the static
  /// screen, and its time, for the proposers.
  std::string static_analysis_;
};

build optimizer::compile(const std::string& source_text) {
  build b;
  std::vector<messages::source_file> sources = target_.sources;
  const std::string name = target_.source_path.filename().string();
  for (auto& s : sources) {
    if (s.name == name) {
      s.content = source_text;
    }
  }
  b.reply = services_.compile(sources, target_.build_argv);
  if (b.reply.status != messages::compile_status::ok || !b.reply.has_artifact) {
    b.error = std::string(messages::to_string(b.reply.status)) +
              (b.reply.error.empty() ? "" : ": " + b.reply.error) +
              (b.reply.output.empty() ? "" : "\n" + b.reply.output);
    return b;
  }
  const std::string hash =
      text_hash(std::string_view(b.reply.artifact.data(), b.reply.artifact.size()));
  std::error_code ec;
  const auto dir = settings_.artifact_dir / target_.kernel;
  std::filesystem::create_directories(dir, ec);
  b.artifact = dir / (hash + ".co");
  // Written aside and renamed: a lane may be reading the same content-addressed file right now.
  const auto partial = dir / (hash + ".co." + std::to_string(++partial_sequence) + ".partial");
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out.write(b.reply.artifact.data(), static_cast<std::streamsize>(b.reply.artifact.size()));
    if (!out) {
      b.error = "cannot write the code object to " + partial.string();
      return b;
    }
  }
  std::filesystem::rename(partial, b.artifact, ec);
  if (ec) {
    b.error = "cannot write the code object to " + b.artifact.string() + ": " + ec.message();
    return b;
  }
  b.bytes.resize(b.reply.artifact.size());
  std::memcpy(b.bytes.data(), b.reply.artifact.data(), b.bytes.size());
  b.ok = true;
  return b;
}

std::optional<messages::kernel_launch> optimizer::resolve(const stages::launch_spec& spec,
                                                          std::string& error) const {
  auto resolved = stages::resolve_launch(spec, target_.config);
  if (!resolved.ok()) {
    error = resolved.error;
    return std::nullopt;
  }
  auto launch = std::move(*resolved.launch);
  // The original kernel defines "right", at the same geometry (its ABI is the candidate's).
  messages::kernel_reference ref;
  ref.code_object_path = original_.artifact.string();
  ref.symbol = launch.symbol;
  ref.grid = launch.grid;
  ref.block = launch.block;
  ref.shared_bytes = launch.shared_bytes;
  launch.reference = ref;
  return launch;
}

messages::measure_result optimizer::run_lane(const std::filesystem::path& artifact,
                                             const std::optional<messages::kernel_launch>& launch,
                                             std::uint32_t runs,
                                             std::uint32_t warmup) {
  messages::measure_request request;
  request.candidate_key = target_.kernel + "#" + std::to_string(++lane_sequence_);
  request.argv = {artifact.string()};
  if (replay() && !target_.symbol.empty()) {
    request.argv.push_back(target_.symbol);
  }
  request.runs = runs;
  request.warmup = warmup;
  request.timeout_ms = settings_.lane_timeout_ms;
  request.launch = launch;
  request.fixed_count = true;
  return lane_.measure(request);
}

std::string optimizer::validate(const std::filesystem::path& artifact, nlohmann::json& record) {
  record = nlohmann::json::array();
  if (replay()) {
    // The replay restores the captured memory and compares the candidate's outputs with what the
    // original kernel wrote in the application.
    const auto result = run_lane(artifact, std::nullopt, 1, 0);
    const bool ok = result.status == messages::measure_status::ok;
    const std::string label = "captured dispatch " + target_.replay_dir.filename().string();
    record.push_back({{"case", label},
                      {"status", ok ? "matched" : messages::to_string(result.status)},
                      {"reason", result.reason}});
    return ok ? std::string()
              : label + ": " + messages::to_string(result.status) + ": " + result.reason;
  }
  for (const auto& c : opt::validation_cases(target_.launch, settings_.seed)) {
    std::string error;
    const auto launch = resolve(c.spec, error);
    if (!launch) {
      record.push_back({{"case", c.label}, {"status", "not_run"}, {"reason", error}});
      continue; // a size the launch file cannot express is not the candidate's fault
    }
    const auto result = run_lane(artifact, *launch, 1, 0);
    const bool ok = result.status == messages::measure_status::ok;
    record.push_back({{"case", c.label},
                      {"status", ok ? "matched" : messages::to_string(result.status)},
                      {"reason", result.reason}});
    if (!ok) {
      return c.label + ": " +
             (result.status == messages::measure_status::nonzero_exit
                  ? "outputs differ from the original kernel's: "
                  : std::string(messages::to_string(result.status)) + ": ") +
             result.reason;
    }
  }
  return {};
}

opt::paired_verdict optimizer::compare(const std::filesystem::path& incumbent,
                                       const std::filesystem::path& challenger,
                                       std::uint32_t rounds,
                                       nlohmann::json& record) {
  std::string error;
  const auto launch = replay() ? std::nullopt : resolve(target_.launch, error);
  std::vector<double> a, b;
  for (std::uint32_t r = 0; r < rounds && (launch || replay()) && !stop_; ++r) {
    // The order alternates, so that neither side always runs first (warm caches, clocks).
    const bool incumbent_first = r % 2 == 0;
    double ta = std::nan(""), tb = std::nan("");
    for (int side = 0; side < 2; ++side) {
      const bool is_incumbent = (side == 0) == incumbent_first;
      const auto result =
          run_lane(is_incumbent ? incumbent : challenger, launch, settings_.runs_per_round, 1);
      const double t = result.status == messages::measure_status::ok ? median_of(result.samples_ns)
                                                                     : std::nan("");
      (is_incumbent ? ta : tb) = t;
    }
    a.push_back(ta);
    b.push_back(tb);
  }
  stages::finalist_config config;
  config.target_noise = settings_.noise_target;
  auto verdict = opt::judge_pair(a, b, config);
  record = {{"incumbent_ns", a},
            {"candidate_ns", b},
            {"incumbent_median_ns", verdict.incumbent_median_ns},
            {"candidate_median_ns", verdict.candidate_median_ns},
            {"relative_change", verdict.relative_change.median},
            {"interval", {verdict.relative_change.low, verdict.relative_change.high}},
            {"confidence", verdict.relative_change.confidence},
            {"separating_noise", verdict.separating_noise},
            {"rounds", verdict.rounds},
            {"outcome", opt::to_string(verdict.outcome)},
            {"summary", verdict.summary}};
  if (!error.empty()) {
    record["error"] = error;
  }
  return verdict;
}

bool optimizer::prepare_original(target_result& result) {
  std::string error;
  step_ = "parsing the original source";
  original_model_ = services_.parse(target_.source_text, error);
  if (!original_model_) {
    result.error =
        target_.source_path.string() + ": cannot parse the source for the guards: " + error;
    return false;
  }
  step_ = "compiling the original";
  original_ = compile(target_.source_text);
  if (!original_.ok) {
    result.error = "the original " + target_.source_path.string() +
                   " does not build with --build-template: " + clip(original_.error, 2000);
    return false;
  }
  // The original against itself: the lane works, the launch file fits the kernel, and its outputs
  // are reproducible within tolerance (else no candidate could ever validate).
  nlohmann::json record;
  step_ = "validating the original on the lane";
  if (std::string failed = validate(original_.artifact, record); !failed.empty()) {
    const bool wrong = failed.find("outputs differ") != std::string::npos;
    result.error =
        wrong
            ? "the original kernel " + target_.kernel + " does not reproduce its own outputs (" +
                  failed + "); fix: check the launch file's arguments and tolerances"
            : "the original kernel " + target_.kernel + " could not be run on the lane: " + failed;
    return false;
  }
  incumbent_text_ = target_.source_text;
  incumbent_artifact_ = original_.artifact;
  if (!replay()) {
    std::string launch_error;
    const auto launch = resolve(target_.launch, launch_error);
    const auto screen =
        screen_candidate(original_.reply, original_.artifact, launch, settings_.device_arch);
    if (!screen.record.is_null()) {
      static_analysis_ = "Static analysis of the original kernel (resources from the compiler or "
                         "the code object, theoretical occupancy at the launch's geometry): " +
                         screen.record.dump();
    } else if (!screen.skipped.empty()) {
      static_analysis_ = "No static analysis: " + screen.skipped;
    }
  }
  return true;
}

messages::propose_request optimizer::make_request(std::uint32_t repair_round) const {
  messages::propose_request request;
  request.kernel = target_.kernel;
  request.source_name = target_.source_path.filename().string();
  request.source = incumbent_text_;
  request.language = target_.language;
  request.compile_flags = target_.compile_flags;
  request.block_threads = target_.block_threads;
  request.analysis = target_.analysis.empty() ? static_analysis_ : target_.analysis;
  request.history = history_;
  request.repair_round = repair_round;
  request.max_proposals = settings_.max_proposals;
  request.timeout_ms = settings_.propose_timeout_ms;
  return request;
}

/// A proposal on its way through the checks: the static ones and the compile can run for a whole
/// batch at once (compiles in parallel on the workers), the GPU ones one after the other.
struct optimizer::candidate {
  attempt_record attempt;
  std::string patched;
  std::future<build> compiled;
  steady::time_point compile_started;
  bool done = false; ///< attempt.stage/verdict are final
};

attempt_record optimizer::attempt_of(const messages::proposal& proposal,
                                     const std::string& proposer,
                                     const std::string& worker) const {
  attempt_record a;
  a.kernel = target_.kernel;
  a.iteration = iteration_;
  a.proposer = proposer;
  a.worker = worker;
  a.proposal_id = proposal.id;
  a.title = proposal.title;
  a.rationale = clip(proposal.rationale, 2000);
  a.diff = proposal.diff;
  a.diff_hash = text_hash(incumbent_text_ + "\n\x01" + proposal.diff);
  return a;
}

optimizer::candidate optimizer::prepare(const messages::proposal& proposal,
                                        const std::string& proposer,
                                        const std::string& worker,
                                        std::uint32_t repair_round) {
  step_ = "checking " + proposal.id + " (apply, source guard)";
  candidate c;
  c.attempt = attempt_of(proposal, proposer, worker);
  attempt_record& a = c.attempt;
  a.repair_round = repair_round;
  const auto reject = [&](std::string stage, std::string guard, std::string detail) {
    a.stage = std::move(stage);
    a.verdict = "rejected";
    a.guard = std::move(guard);
    a.detail = clip(std::move(detail));
    c.done = true;
    return std::move(c);
  };
  const auto patched = opt::apply_unified_diff(incumbent_text_, proposal.diff);
  if (!patched.ok) {
    return reject("apply", "patch_does_not_apply", patched.error);
  }
  if (patched.text == incumbent_text_) {
    return reject("apply", "empty_patch", "the diff changes nothing");
  }
  std::string parse_error;
  const auto model = services_.parse(patched.text, parse_error);
  if (!model) {
    return reject("source_guard", "unparsable", parse_error);
  }
  // Against the user's original: whatever was accepted before must also have kept the rest
  // of the translation unit as it was.
  const auto findings = opt::check_source(*original_model_, target_.source_text, *model,
                                          patched.text, target_.kernel);
  if (!findings.empty()) {
    std::string detail;
    for (const auto& f : findings) {
      detail += (detail.empty() ? "" : "\n") + f.guard + ": " + f.detail;
    }
    return reject("source_guard", most_specific(findings), detail);
  }
  c.patched = patched.text;
  c.compile_started = steady::now();
  c.compiled = std::async(std::launch::async, [this, text = c.patched] { return compile(text); });
  return c;
}

attempt_record optimizer::judge(candidate& c, bool alone) {
  attempt_record& a = c.attempt;
  if (c.done) {
    return a;
  }
  step_ = "judging " + a.proposal_id + " (compile)";
  build built = c.compiled.get();
  a.compile_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - c.compile_started)
          .count();
  const auto reject = [&](std::string stage, std::string guard, std::string detail) {
    a.stage = std::move(stage);
    a.verdict = "rejected";
    a.guard = std::move(guard);
    a.detail = clip(std::move(detail));
    return a;
  };
  if (!built.ok) {
    a.stage = "compile";
    a.verdict = "failed";
    a.guard = "compile";
    a.detail = clip(built.error);
    return a;
  }
  std::vector<std::pair<std::string, std::string>> artifact_findings;
  if (services_.check_artifact) {
    artifact_findings = services_.check_artifact(original_.bytes, built.bytes, target_.kernel);
  } else {
    for (const auto& f :
         opt::check_artifact(original_.bytes, built.bytes, target_.kernel, target_.kernel)) {
      artifact_findings.emplace_back(f.guard, f.detail);
    }
  }
  if (!artifact_findings.empty()) {
    std::string detail;
    for (const auto& [guard, text] : artifact_findings) {
      detail += (detail.empty() ? "" : "\n") + guard + ": " + text;
    }
    return reject("artifact_guard", artifact_findings.front().first, detail);
  }
  step_ = "judging " + a.proposal_id + " (artifact guard passed; static screen)";
  {
    std::string error;
    const auto launch = replay() ? std::nullopt : resolve(target_.launch, error);
    const auto screen =
        screen_candidate(built.reply, built.artifact, launch, settings_.device_arch);
    if (!screen.refusal.empty()) {
      return reject("screen", "static_screen", screen.refusal);
    }
  }
  nlohmann::json validation;
  step_ = "judging " + a.proposal_id + " (validation)";
  const std::string failed = validate(built.artifact, validation);
  a.validation = validation.dump();
  if (!failed.empty()) {
    const std::string which = failed.rfind("odd size", 0) == 0       ? "validation:odd_size"
                              : failed.rfind("smaller size", 0) == 0 ? "validation:smaller_size"
                                                                     : "validation:launch_size";
    return reject("validation", which, failed);
  }
  if (alone) {
    step_ = "timing " + a.proposal_id;
    std::string error;
    const auto launch = replay() ? std::nullopt : resolve(target_.launch, error);
    const auto timed = run_lane(built.artifact, launch, settings_.runs_per_round * 3, 1);
    a.stage = "tuning";
    if (timed.status != messages::measure_status::ok || timed.samples_ns.empty()) {
      a.verdict = "failed";
      a.guard = "measurement";
      a.detail = clip(std::string(messages::to_string(timed.status)) + ": " + timed.reason);
      return a;
    }
    const double median = median_of(timed.samples_ns);
    a.verdict = "measured";
    a.measurement = nlohmann::json{{"median_ns", median}, {"samples_ns", timed.samples_ns}}.dump();
    a.detail = "median " + std::to_string(median / 1000.0) + " us alone";
    return a;
  }
  nlohmann::json measurement;
  step_ = "judging " + a.proposal_id + " (measurement)";
  const auto verdict = compare(incumbent_artifact_, built.artifact, settings_.rounds, measurement);
  a.measurement = measurement.dump();
  a.stage = "measurement";
  a.detail = verdict.summary;
  if (verdict.candidate_median_ns > 0.0) {
    a.speedup = verdict.incumbent_median_ns / verdict.candidate_median_ns;
  }
  switch (verdict.outcome) {
  case opt::paired_outcome::faster:
    a.stage = "accepted";
    a.verdict = "accepted";
    incumbent_text_ = c.patched;
    incumbent_artifact_ = built.artifact;
    break;
  case opt::paired_outcome::within_noise: a.verdict = "within_noise"; break;
  case opt::paired_outcome::slower: a.verdict = "slower"; break;
  case opt::paired_outcome::not_measured:
    a.verdict = "failed";
    a.guard = "measurement";
    break;
  }
  return a;
}

void optimizer::finish(attempt_record& attempt, target_result& result, bool to_history) {
  attempt.sequence = ++sequence_;
  journal_.record(attempt);
  if (!to_history) {
    result.attempts.push_back(attempt);
    return;
  }
  messages::proposal_attempt h;
  h.proposal_id = attempt.proposal_id;
  h.title = attempt.title;
  h.diff = attempt.diff;
  h.stage = attempt.stage;
  h.verdict = attempt.verdict;
  h.detail = clip(attempt.detail, 3000);
  history_.push_back(std::move(h));
  spdlog::info("{}: #{} {} [{}] {}: {}{}", target_.kernel, attempt.sequence, attempt.proposer,
               attempt.title, attempt.stage, attempt.verdict,
               attempt.guard.empty() ? "" : " (" + attempt.guard + ")");
  result.attempts.push_back(attempt);
}

void optimizer::resume_accepted(target_result& result) {
  earlier_ = journal_.earlier_attempts(target_.kernel);
  for (const auto& accepted : journal_.earlier_accepted(target_.kernel)) {
    const auto patched = opt::apply_unified_diff(incumbent_text_, accepted.diff);
    if (!patched.ok) {
      continue;
    }
    build b = compile(patched.text);
    nlohmann::json record;
    if (!b.ok || !validate(b.artifact, record).empty()) {
      continue;
    }
    incumbent_text_ = patched.text;
    incumbent_artifact_ = b.artifact;
    attempt_record again = accepted;
    again.verdict = "accepted";
    again.stage = "accepted";
    again.detail = "resumed: accepted by an earlier run (" + accepted.detail + ")";
    result.attempts.push_back(again);
    seen_hashes_.insert(accepted.diff_hash);
    spdlog::info("{}: resumed the accepted change [{}]", target_.kernel, accepted.title);
  }
}

std::optional<messages::proposal> optimizer::tune(const messages::proposal& proposal,
                                                  const std::string& proposer,
                                                  const std::string& worker,
                                                  target_result& result) {
  step_ = "tuning " + proposal.id;
  attempt_record summary = attempt_of(proposal, proposer, worker);
  summary.stage = "tuning";
  const auto give_up = [&](std::string verdict, std::string guard, std::string detail) {
    summary.verdict = std::move(verdict);
    summary.guard = std::move(guard);
    summary.detail = clip(std::move(detail));
    finish(summary, result);
    return std::nullopt;
  };
  const auto patched = opt::apply_unified_diff(incumbent_text_, proposal.diff);
  if (!patched.ok) {
    summary.stage = "apply";
    return give_up("rejected", "patch_does_not_apply", patched.error);
  }
  if (settings_.tune_budget == 0) {
    return give_up("skipped", "", "--tune-budget 0: proposals with tunable macros are not tried");
  }
  const std::vector<stages::configuration> space = opt::knob_configurations(proposal.tunables);
  if (space.empty()) {
    return give_up("rejected", "tunables", "a tunable macro without values");
  }
  const std::size_t budget = std::min<std::size_t>(space.size(), settings_.tune_budget);
  const std::string strategy_name = space.size() <= budget ? "exhaustive" : "model";
  // Every knob at its default: the code as it was.
  std::size_t default_index = space.size();
  for (std::size_t i = 0; i < space.size() && default_index == space.size(); ++i) {
    bool all = true;
    for (std::size_t k = 0; k < proposal.tunables.size(); ++k) {
      const auto* v = std::get_if<std::int64_t>(&space[i].params[k].second);
      all = all && v != nullptr && *v == proposal.tunables[k].default_value;
    }
    default_index = all ? i : default_index;
  }
  // The defaults count against the budget; a strategy's pick of them again is skipped.
  const auto strategy = stages::make_strategy(strategy_name, space, budget, settings_.seed);
  const std::string name = target_.source_path.filename().string();
  std::optional<std::size_t> best;
  std::map<std::size_t, double> times;
  // The defaults are timed first, whatever the strategy picks: the baseline of the search.
  std::optional<std::size_t> forced;
  if (default_index < space.size()) {
    forced = default_index;
  }
  std::set<std::size_t> taken;
  std::size_t tried = 0;
  bool exhausted = false;
  while (!out_of_time() && !exhausted) {
    // A few configurations at a time: their compiles run in parallel, their timings in turn.
    std::vector<std::pair<std::size_t, candidate>> batch;
    std::vector<std::pair<std::size_t, attempt_record>> resumed;
    while (batch.size() + resumed.size() < 4 && tried < budget) {
      std::optional<std::size_t> index = forced;
      forced.reset();
      if (!index) {
        index = strategy->next();
      }
      if (!index) {
        exhausted = true;
        break;
      }
      if (!taken.insert(*index).second) {
        continue; // the defaults again: timed already
      }
      ++tried;
      std::string text = patched.text;
      std::string error;
      if (!opt::set_knobs(text, proposal.tunables, space[*index], error)) {
        return give_up("rejected", "tunables", error);
      }
      messages::proposal variant;
      variant.id = proposal.id + "{" + opt::describe(space[*index]) + "}";
      variant.title = opt::describe(space[*index]);
      variant.rationale = "a configuration of " + proposal.id;
      variant.diff = opt::make_unified_diff(incumbent_text_, text, name);
      // Its own hash space: the defaults' diff is the proposal's own, whose hash names the
      // proposal's verdict (the summary) on --resume.
      const std::string hash = text_hash(incumbent_text_ + "\n\x02tuning\n" + variant.diff);
      if (settings_.resume) {
        if (auto it = earlier_.find(hash); it != earlier_.end() && it->second.stage == "tuning" &&
                                           it->second.verdict == "measured") {
          resumed.emplace_back(*index, it->second);
          continue;
        }
      }
      batch.emplace_back(*index, prepare(variant, proposer, worker, 0));
      batch.back().second.attempt.diff_hash = hash;
    }
    exhausted = exhausted || tried >= budget;
    if (batch.empty() && resumed.empty()) {
      break;
    }
    const auto observe = [&](std::size_t index, const attempt_record& a) {
      stages::observation o;
      o.index = index;
      o.config = &space[index];
      if (a.verdict == "measured") {
        const double median =
            nlohmann::json::parse(a.measurement, nullptr, false).value("median_ns", 0.0);
        if (median > 0.0) {
          o.value_ns = median;
          times[index] = median;
          if (!best || median < times[*best]) {
            best = index;
          }
        }
      }
      if (!o.value_ns) {
        o.failure = a.stage + ": " + a.verdict + (a.guard.empty() ? "" : " (" + a.guard + ")");
      }
      strategy->observe(o);
    };
    for (auto& [index, old] : resumed) {
      old.detail = "resumed: " + old.detail;
      result.attempts.push_back(old);
      observe(index, old);
    }
    for (auto& [index, c] : batch) {
      if (out_of_time()) {
        break;
      }
      attempt_record a = judge(c, true);
      finish(a, result, false);
      observe(index, a);
    }
  }
  if (out_of_time()) {
    // Interrupted: the configurations timed so far are in the journal, and --resume takes them
    // up; no verdict for the whole proposal yet.
    spdlog::info("{}: tuning {} stopped after {} configurations", target_.kernel, proposal.id,
                 tried);
    return std::nullopt;
  }
  const std::string searched = "searched " + std::to_string(tried) + " of " +
                               std::to_string(space.size()) + " configurations (" + strategy_name +
                               ", --tune-budget " + std::to_string(settings_.tune_budget) + ")";
  if (!best) {
    return give_up("failed", "tuning", searched + "; none was measured");
  }
  const auto defaults = times.find(default_index);
  std::string figures = searched + "; fastest " + opt::describe(space[*best]) + ": " +
                        std::to_string(times[*best] / 1000.0) + " us alone";
  if (defaults != times.end()) {
    figures += ", defaults " + std::to_string(defaults->second / 1000.0) + " us";
  }
  if (*best == default_index) {
    return give_up("unchanged", "", figures + "; the defaults are the fastest, nothing to try");
  }
  if (defaults != times.end() &&
      times[*best] >= defaults->second * (1.0 - settings_.noise_target)) {
    return give_up("unchanged", "",
                   figures + "; within --noise of the defaults, nothing to try against the "
                             "incumbent");
  }
  summary.verdict = "tuned";
  summary.detail = clip(figures + "; it goes on against the incumbent");
  finish(summary, result);
  std::string text = patched.text;
  std::string error;
  opt::set_knobs(text, proposal.tunables, space[*best], error);
  messages::proposal chosen;
  chosen.id = proposal.id + ":" + opt::describe(space[*best]);
  chosen.title = proposal.title + ", tuned: " + opt::describe(space[*best]);
  chosen.rationale = proposal.rationale + " Tuning " + figures + ".";
  chosen.diff = opt::make_unified_diff(incumbent_text_, text, name);
  return chosen;
}

bool optimizer::run_batch(const std::string& kind,
                          const std::string& proposer,
                          const std::string& worker,
                          const std::vector<messages::proposal>& proposals,
                          target_result& result,
                          bool& proposed_any) {
  std::vector<candidate> batch;
  std::vector<const messages::proposal*> tunable; ///< per batch entry: searched first, or null
  for (const auto& proposal : proposals) {
    ++result.proposals_seen;
    const std::string hash = text_hash(incumbent_text_ + "\n\x01" + proposal.diff);
    if (seen_hashes_.count(hash) != 0) {
      continue;
    }
    seen_hashes_.insert(hash);
    if (settings_.resume) {
      if (auto it = earlier_.find(hash); it != earlier_.end()) {
        attempt_record old = it->second;
        old.detail = "resumed: " + old.detail;
        result.attempts.push_back(old);
        continue;
      }
    }
    proposed_any = true;
    // A proposal with tunable macros is searched when its turn comes (it needs the GPU).
    tunable.push_back(proposal.tunables.empty() ? nullptr : &proposal);
    batch.push_back(proposal.tunables.empty() ? prepare(proposal, proposer, worker, 0)
                                              : candidate{});
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (out_of_time()) {
      break;
    }
    candidate& c = batch[i];
    if (tunable[i] != nullptr) {
      const auto chosen = tune(*tunable[i], proposer, worker, result);
      if (!chosen) {
        continue;
      }
      c = prepare(*chosen, proposer, worker, 0);
    }
    attempt_record attempt = judge(c);
    finish(attempt, result);
    // Bounded repair: the compiler's (or the patcher's) complaint goes back to the proposer.
    for (std::uint32_t round = 1;
         kind != "rule" && round <= settings_.max_repairs &&
         (attempt.stage == "compile" || attempt.stage == "apply") && !out_of_time();
         ++round) {
      const auto repair = services_.propose(kind, make_request(round));
      if (repair.status != messages::propose_status::ok || repair.proposals.empty()) {
        result.proposer_errors.push_back(
            kind + " (repair " + std::to_string(round) +
            "): " + (repair.error.empty() ? std::string("no proposal") : repair.error));
        break;
      }
      candidate fixed = prepare(repair.proposals.front(), proposer, repair.worker_id, round);
      seen_hashes_.insert(fixed.attempt.diff_hash);
      attempt = judge(fixed);
      finish(attempt, result);
    }
    if (attempt.verdict == "accepted") {
      return true; // the rest was proposed for the old source: ask again
    }
  }
  // Compiles still running for dropped candidates finish before the batch goes away.
  return false;
}

void optimizer::iterate(target_result& result) {
  for (iteration_ = 1; iteration_ <= settings_.iterations && !out_of_time(); ++iteration_) {
    bool accepted_any = false;
    bool proposed_any = false;
    for (const auto& kind : settings_.proposers) {
      if (out_of_time()) {
        break;
      }
      step_ = "asking the " + kind + " proposer";
      const auto reply = services_.propose(kind, make_request(0));
      if (reply.status != messages::propose_status::ok) {
        result.proposer_errors.push_back(kind + ": " + messages::to_string(reply.status) + ": " +
                                         reply.error);
        spdlog::warn("{}: the {} proposer: {}: {}; going on without it this iteration",
                     target_.kernel, kind, messages::to_string(reply.status), reply.error);
        continue;
      }
      if (!reply.error.empty()) {
        result.proposer_errors.push_back(kind + ": " + reply.error);
      }
      const std::string proposer = reply.proposer.empty() ? kind : reply.proposer;
      // Every proposer is asked each iteration, against the incumbent as it is by then.
      if (run_batch(kind, proposer, reply.worker_id, reply.proposals, result, proposed_any)) {
        accepted_any = true;
      }
    }
    if (!proposed_any && !accepted_any) {
      spdlog::info("{}: iteration {}: no new proposal; stopping", target_.kernel, iteration_);
      break;
    }
  }
}

target_result optimizer::run() {
  target_result result;
  result.kernel = target_.kernel;
  result.source_path = target_.source_path;
  try {
    run_loop(result);
  } catch (const std::exception& error) {
    // Nothing a candidate does may end the run; an error of ours ends this kernel only.
    result.status = "failed";
    result.error = "internal error while " + step_ + ": " + error.what();
    journal_.record_target(target_.kernel, target_.source_path.string(), "failed", 0, 0,
                           result.error, "");
  }
  return result;
}

void optimizer::run_loop(target_result& result) {
  if (!prepare_original(result)) {
    journal_.record_target(target_.kernel, target_.source_path.string(), "failed", 0, 0,
                           result.error, "");
    return;
  }
  if (settings_.resume) {
    resume_accepted(result);
  }
  iterate(result);
  result.best_source = incumbent_text_;
  nlohmann::json record;
  if (incumbent_text_ == target_.source_text) {
    // Nothing accepted: the original's time for the report, from one more comparison with itself.
    const auto verdict = compare(original_.artifact, original_.artifact, 5, record);
    result.original_ns = result.best_ns = verdict.incumbent_median_ns;
    result.status = "unchanged";
  } else {
    // The accepted chain against the original, measured afresh with twice the rounds.
    result.final_comparison =
        compare(original_.artifact, incumbent_artifact_, settings_.rounds * 2, record);
    result.original_ns = result.final_comparison.incumbent_median_ns;
    result.best_ns = result.final_comparison.candidate_median_ns;
    if (result.final_comparison.outcome == opt::paired_outcome::faster) {
      result.status = "improved";
      result.accepted_diff = opt::make_unified_diff(target_.source_text, incumbent_text_,
                                                    target_.source_path.filename().string());
    } else {
      result.status = "unchanged";
      result.error = "the accepted changes did not hold up against the original in the final "
                     "comparison: " +
                     result.final_comparison.summary;
      result.best_source = target_.source_text;
    }
  }
  journal_.record_target(
      target_.kernel, target_.source_path.string(), result.status, result.original_ns,
      result.best_ns, result.status == "improved" ? result.final_comparison.summary : result.error,
      result.accepted_diff);
}

} // namespace

target_result optimize_kernel(const kernel_target& target,
                              const optimizer_settings& settings,
                              const optimizer_services& services,
                              workers::lane_backend& lane,
                              optimize_journal& journal,
                              const std::atomic<bool>& stop) {
  optimizer loop(target, settings, services, lane, journal, stop);
  return loop.run();
}

} // namespace rpl::engine
