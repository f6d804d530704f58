#include "engine/optimize/kernel_optimizer.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <future>
#include <limits>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "engine/autotune/candidate_screen.hpp"
#include "engine/graph/compile_service.hpp"
#include "engine/graph/lane_worker.hpp"
#include "engine/graph/tuning_graph.hpp"
#include "engine/optimize/journey_context.hpp"
#include "engine/optimize/optimize_journal.hpp"
#include "engine/optimize/proposal_guard.hpp"
#include "engine/optimize/proposal_journey.hpp"
#include "engine/optimize/run_budget.hpp"
#include "stages/optimize/proposer_kinds.hpp"
#include "stages/optimize/unified_diff.hpp"
#include "stages/optimize/validation_plan.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::engine {

namespace {

namespace opt = stages::optimize;
using steady = std::chrono::steady_clock;

/// The flag journey_context reads as its stop between measurements (paired rounds, knob
/// configurations, the feed's requests): the user's stop, or the loop's deadline passed, checked
/// every 20 ms. So a paired comparison in flight ends at the deadline after the measurement it is
/// in (the lane is never left mid-measurement), not after all its rounds. After the loop
/// (end_loop) only the user's stop counts: the final comparison has its own rounds to fit.
class loop_stop {
public:
  explicit loop_stop(const std::atomic<bool>& user)
      : user_(user), flag_(user.load()), watcher_([this] { watch(); }) {}
  ~loop_stop() {
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
    }
    changed_.notify_all();
    watcher_.join();
  }
  loop_stop(const loop_stop&) = delete;
  loop_stop& operator=(const loop_stop&) = delete;

  const std::atomic<bool>& flag() const { return flag_; }
  void set_deadline(std::optional<steady::time_point> deadline) {
    const std::lock_guard lock(mutex_);
    deadline_ = deadline;
  }
  void end_loop() {
    const std::lock_guard lock(mutex_);
    deadline_.reset();
    flag_ = user_.load();
  }

private:
  void watch() {
    std::unique_lock lock(mutex_);
    while (!done_) {
      if (user_ || (deadline_ && steady::now() >= *deadline_)) {
        flag_ = true;
      }
      changed_.wait_for(lock, std::chrono::milliseconds(20));
    }
  }

  const std::atomic<bool>& user_;
  std::atomic<bool> flag_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<steady::time_point> deadline_;
  bool done_ = false;
  std::thread watcher_; // last: starts once the members above exist
};

/// One kernel's time: the settings the journey reads (its loop deadline moved earlier once the
/// original is validated, to leave the final comparison its time), the kernel's own end (its turn's
/// deadline) and one lane measurement's cost as the original's validation showed it.
struct kernel_clock {
  optimizer_settings& loop;
  loop_stop& stop;
  std::optional<steady::time_point> end;
  double measurement_s = 0; ///< one lane measurement, seconds (0: unknown)
  steady::time_point started = steady::now();
};

/// A build outside the graph (the original, a resumed accepted change): through the same compile
/// service and artifact cache, waited for.
struct built_source {
  bool ok = false;
  std::string error;
  messages::compile_reply reply; ///< without the artifact's bytes
  std::filesystem::path artifact;
  std::vector<std::byte> bytes;
};

/// A build submitted outside the graph, waited for by built_source_of.
using pending_build =
    std::future<std::pair<messages::compile_reply, std::optional<artifact_store::stored>>>;

pending_build submit_build(const journey_context& journey, const std::string& text) {
  auto request = journey.compile_request(text);
  auto promise = std::make_shared<
      std::promise<std::pair<messages::compile_reply, std::optional<artifact_store::stored>>>>();
  auto future = promise->get_future();
  journey.services().compiler->submit_storing(
      std::move(request),
      [promise](const messages::compile_reply& reply, const artifact_store::stored* stored) {
        promise->set_value({reply, stored ? std::optional(*stored) : std::nullopt});
      });
  return future;
}

built_source built_source_of(pending_build pending, const artifact_store& artifacts) {
  auto [reply, stored] = pending.get();
  built_source b;
  if (reply.status != messages::compile_status::ok || !reply.has_artifact) {
    b.error = std::string(messages::to_string(reply.status)) +
              (reply.error.empty() ? "" : ": " + reply.error) +
              (reply.output.empty() ? "" : "\n" + reply.output);
    return b;
  }
  if (!stored) {
    stored =
        artifacts.put(std::string_view(reply.artifact.data(), reply.artifact.size()), "original");
  }
  if (!stored->error.empty()) {
    b.error = stored->error;
    return b;
  }
  b.artifact = stored->path;
  b.bytes.resize(reply.artifact.size());
  std::memcpy(b.bytes.data(), reply.artifact.data(), b.bytes.size());
  reply.artifact.clear();
  b.reply = std::move(reply);
  b.ok = true;
  return b;
}

built_source build_now(const journey_context& journey,
                       const artifact_store& artifacts,
                       const std::string& text) {
  return built_source_of(submit_build(journey, text), artifacts);
}

/// The original's validation against itself, on the lane: nullopt when it reproduces its outputs.
std::optional<guard_refusal> validate_on(lane_worker& lane,
                                         const journey_context& journey,
                                         const std::filesystem::path& artifact) {
  std::optional<guard_refusal> refusal;
  const auto ran = lane.run_now([&](workers::lane_backend& backend) {
    const std::string no_text;
    guard_subject subject{journey, no_text, no_text};
    subject.lane = &backend;
    subject.artifact = artifact;
    refusal = run_guards(guard_input::lane_outputs, subject);
    messages::measure_result done;
    done.status = messages::measure_status::ok;
    return done;
  });
  if (ran.status != messages::measure_status::ok && !refusal) {
    return guard_refusal{attempt_stage::validation, attempt_finding::none,
                         std::string(messages::to_string(ran.status)) + ": " + ran.reason};
  }
  return refusal;
}

opt::paired_verdict compare_on(lane_worker& lane,
                               const journey_context& journey,
                               const std::filesystem::path& incumbent,
                               const std::filesystem::path& challenger,
                               std::uint32_t rounds) {
  opt::paired_verdict verdict;
  lane.run_now([&](workers::lane_backend& backend) {
    nlohmann::json record;
    verdict = journey.compare(backend, incumbent, challenger, rounds, record);
    messages::measure_result done;
    done.status = messages::measure_status::ok;
    return done;
  });
  return verdict;
}

/// Proposers that parse the source themselves (stages/optimize/proposer_kinds.hpp, warms_up) are
/// asked for no proposal right away, on their own threads: their first parse, the headers' (about
/// 1 s with CUDA's), then overlaps the original's build and validation instead of delaying the
/// first proposals (workers/source/clang_source.hpp keeps the parsed headers). Replies are
/// ignored; the futures wait for them when they go, before the graph starts.
std::vector<std::future<void>> warm_up_proposers(const journey_context& journey) {
  std::vector<std::future<void>> warming;
  for (const auto& kind : journey.settings().proposers) {
    const auto* registered = stages::optimize::find_proposer_kind(kind);
    if (registered == nullptr || !registered->warms_up || !journey.services().propose) {
      continue;
    }
    messages::propose_request request = journey.propose_request(journey.target().source_text);
    request.max_proposals = 0;
    request.timeout_ms = 30000;
    warming.push_back(std::async(std::launch::async, [&journey, kind, request] {
      try {
        journey.services().propose(kind, request);
      } catch (const std::exception& error) {
        spdlog::debug("warming up the {} proposer: {}", kind, error.what());
      }
    }));
  }
  return warming;
}

/// The original: parsed for the guards, built, validated against itself (the lane works, the
/// launch file fits the kernel, its outputs reproduce within tolerance: else no candidate could
/// ever validate), screened for the proposers. False with result.error set when it fails.
bool prepare_original(journey_context& journey,
                      const artifact_store& artifacts,
                      lane_worker& lane,
                      kernel_clock& clock,
                      target_result& result) {
  const auto& target = journey.target();
  // The original builds while libclang parses it.
  auto building = submit_build(journey, target.source_text);
  std::string error;
  auto model = journey.parse(target.source_text, error);
  auto built = built_source_of(std::move(building), artifacts);
  if (!model) {
    result.error =
        target.source_path.string() + ": cannot parse the source for the guards: " + error;
    return false;
  }
  if (!built.ok) {
    result.error = "the original " + target.source_path.string() +
                   " does not build with --build-template: " + clip_detail(built.error, 2000);
    return false;
  }
  journey.set_original({std::move(*model), built.artifact, std::move(built.bytes), built.reply});
  journey.set_validating_original(true);
  const auto validating = steady::now();
  const auto failed = validate_on(lane, journey, built.artifact);
  // One measurement's cost: the validation's cases each took one (the replay's one case).
  const auto cases =
      journey.replay() ? 1 : opt::validation_cases(target.launch, journey.settings().seed).size();
  clock.measurement_s = std::chrono::duration<double>(steady::now() - validating).count() /
                        static_cast<double>(std::max<std::size_t>(cases, 1));
  journey.set_validating_original(false);
  if (failed) {
    result.error = failed->outputs_differ
                       ? "the original kernel " + target.kernel +
                             " does not reproduce its own outputs (" + failed->detail +
                             "); fix: check the launch file's arguments and tolerances"
                       : "the original kernel " + target.kernel +
                             " could not be run on the lane: " + failed->detail;
    return false;
  }
  if (!journey.replay()) {
    std::string launch_error;
    const auto launch = journey.resolve(target.launch, launch_error);
    const auto screen =
        screen_candidate(built.reply, built.artifact, launch, journey.settings().device_arch);
    if (!screen.record.is_null()) {
      journey.set_static_analysis(
          "Static analysis of the original kernel (resources from the compiler or the code "
          "object, theoretical occupancy at the launch's geometry): " +
          screen.record.dump());
    } else if (!screen.skipped.empty()) {
      journey.set_static_analysis("No static analysis: " + screen.skipped);
    }
  }
  return true;
}

/// --resume: the accepted chain of earlier runs, rebuilt (artifact cache hits) and revalidated.
proposal_journey::incumbent resume_accepted(const journey_context& journey,
                                            const artifact_store& artifacts,
                                            lane_worker& lane,
                                            optimize_journal& journal,
                                            target_result& result,
                                            std::set<std::string>& seen) {
  const auto& target = journey.target();
  proposal_journey::incumbent now{target.source_text, journey.original().artifact};
  for (const auto& accepted : journal.earlier_accepted(target.kernel)) {
    const auto patched = opt::apply_unified_diff(now.text, accepted.diff);
    if (!patched.ok) {
      continue;
    }
    const auto built = build_now(journey, artifacts, patched.text);
    if (!built.ok || validate_on(lane, journey, built.artifact)) {
      continue;
    }
    now = {patched.text, built.artifact};
    attempt_record again = accepted;
    again.resumed = true;
    again.detail = "resumed: accepted by an earlier run (" + accepted.detail + ")";
    result.attempts.push_back(again);
    seen.insert(accepted.diff_hash);
    spdlog::info("{}: resumed the accepted change [{}]", target.kernel, accepted.title);
  }
  return now;
}

/// The rounds of the original's self-comparison that fit before the kernel's end (two
/// measurements a round at the original's measured cost): `wanted` when they fit or there is no
/// end, else as many as fit, 0 when fewer than `least`.
std::uint32_t
rounds_that_fit(const kernel_clock& clock, std::uint32_t wanted, std::uint32_t least) {
  if (!clock.end || clock.measurement_s <= 0.0) {
    return wanted;
  }
  const double left = std::chrono::duration<double>(*clock.end - steady::now()).count();
  const double fit = left / (2.0 * clock.measurement_s);
  if (fit >= wanted) {
    return wanted;
  }
  return fit >= least ? static_cast<std::uint32_t>(fit) : 0;
}

/// Appends a comparison record's per-round values (NaN for a missed round) to `into`.
void append_rounds(const nlohmann::json& record, const char* side, std::vector<double>& into) {
  if (!record.contains(side)) {
    return;
  }
  for (const auto& v : record[side]) {
    into.push_back(v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN());
  }
}

/// The accepted chain against the original: the 6 rounds a verdict needs at 95 %, then as many
/// more, up to twice --rounds, as fit before the kernel's end at the pace the first 6 ran (the
/// original's validation, which carries the lane's start, overstates a round's cost); judged over
/// all the rounds together.
opt::paired_verdict confirm_on(lane_worker& lane,
                               const journey_context& journey,
                               const kernel_clock& clock,
                               const std::filesystem::path& original,
                               const std::filesystem::path& best) {
  const std::uint32_t wanted = journey.settings().rounds * 2;
  std::vector<double> incumbent;
  std::vector<double> candidate;
  const auto rounds_of = [&](std::uint32_t rounds) {
    lane.run_now([&](workers::lane_backend& backend) {
      nlohmann::json record;
      journey.compare(backend, original, best, rounds, record);
      append_rounds(record, "incumbent_ns", incumbent);
      append_rounds(record, "candidate_ns", candidate);
      messages::measure_result done;
      done.status = messages::measure_status::ok;
      return done;
    });
  };
  const std::uint32_t first = std::min<std::uint32_t>(6, wanted);
  const auto started = steady::now();
  rounds_of(first);
  std::uint32_t more = wanted - first;
  if (clock.end && more > 0) {
    const double per_round = std::chrono::duration<double>(steady::now() - started).count() / first;
    const double left = std::chrono::duration<double>(*clock.end - steady::now()).count();
    more = per_round > 0.0 ? static_cast<std::uint32_t>(
                                 std::clamp(left / per_round, 0.0, static_cast<double>(more)))
                           : more;
  }
  if (more > 0 && !journey.stop()) {
    rounds_of(more);
  }
  stages::finalist_config config;
  config.target_noise = journey.settings().noise_target;
  return opt::judge_pair(incumbent, candidate, config);
}

/// The original's median time from the paired comparisons the loop ran while it was the incumbent
/// (nothing accepted); 0 when none was measured.
double original_from_attempts(const target_result& result) {
  std::vector<double> medians;
  for (const auto& a : result.attempts) {
    if (a.stage != attempt_stage::measurement || a.measurement.empty()) {
      continue;
    }
    const auto m = nlohmann::json::parse(a.measurement, nullptr, false);
    const double ns = m.is_object() ? m.value("incumbent_median_ns", 0.0) : 0.0;
    if (ns > 0.0) {
      medians.push_back(ns);
    }
  }
  if (medians.empty()) {
    return 0.0;
  }
  std::nth_element(medians.begin(),
                   medians.begin() + static_cast<std::ptrdiff_t>(medians.size() / 2),
                   medians.end());
  return medians[medians.size() / 2];
}

/// Nothing accepted: the original against itself for its time (5 rounds) when they fit, else the
/// loop's own measurements of it, else no figure.
void unchanged_figures(const journey_context& journey,
                       lane_worker& lane,
                       const kernel_clock& clock,
                       target_result& result) {
  const auto& original = journey.original().artifact;
  result.status = "unchanged";
  const auto rounds = journey.stop() ? 0 : rounds_that_fit(clock, 5, 3);
  if (rounds > 0) {
    const auto verdict = compare_on(lane, journey, original, original, rounds);
    result.original_ns = result.best_ns = verdict.incumbent_median_ns;
  }
  if (result.original_ns <= 0.0) {
    result.original_ns = result.best_ns = original_from_attempts(result);
  }
}

/// The report's figures: the accepted chain against the original, measured afresh with twice the
/// rounds (fewer when the kernel's time is short, never under 6); or, when nothing was accepted,
/// the original's time. Interrupted: nothing more is measured, and an accepted chain that was not
/// confirmed is not reported as improved (--resume confirms it).
void final_comparison(const journey_context& journey,
                      lane_worker& lane,
                      const proposal_journey::incumbent& best,
                      const kernel_clock& clock,
                      target_result& result) {
  const auto& target = journey.target();
  const auto& original = journey.original().artifact;
  result.best_source = best.text;
  if (best.text == target.source_text) {
    unchanged_figures(journey, lane, clock, result);
    return;
  }
  if (journey.stop()) {
    result.status = "unchanged";
    result.error = "interrupted before the accepted changes were confirmed against the original; "
                   "--resume with the same --out confirms them";
    result.best_source = target.source_text;
    return;
  }
  result.final_comparison = confirm_on(lane, journey, clock, original, best.artifact);
  result.original_ns = result.final_comparison.incumbent_median_ns;
  result.best_ns = result.final_comparison.candidate_median_ns;
  if (result.final_comparison.outcome == opt::paired_outcome::faster) {
    result.status = "improved";
    result.accepted_diff = opt::make_unified_diff(target.source_text, best.text,
                                                  target.source_path.filename().string());
    return;
  }
  result.status = "unchanged";
  result.error = "the accepted changes did not hold up against the original in the final "
                 "comparison: " +
                 result.final_comparison.summary;
  result.best_source = target.source_text;
}

/// --resume of a kernel an earlier run finished: its result from the journal, nothing rebuilt or
/// measured. False when the journal has no finished result for it.
bool resume_finished(const kernel_target& target,
                     optimize_journal& journal,
                     target_result& result) {
  const auto row = journal.earlier_target(target.kernel);
  if (!row || (row->status != "improved" && row->status != "unchanged")) {
    return false;
  }
  std::string best = target.source_text;
  if (!row->accepted_diff.empty()) {
    const auto patched = opt::apply_unified_diff(target.source_text, row->accepted_diff);
    if (!patched.ok) {
      return false; // the source changed since: optimize it again
    }
    best = patched.text;
  }
  result.status = row->status;
  result.original_ns = row->original_ns;
  result.best_ns = row->best_ns;
  result.best_source = best;
  result.accepted_diff = row->accepted_diff;
  if (row->status == "improved") {
    result.final_comparison.outcome = opt::paired_outcome::faster;
    result.final_comparison.incumbent_median_ns = row->original_ns;
    result.final_comparison.candidate_median_ns = row->best_ns;
    result.final_comparison.summary = row->summary;
  } else {
    result.error = row->summary;
  }
  for (auto& [hash, a] : journal.earlier_attempts(target.kernel)) {
    a.resumed = true;
    result.attempts.push_back(std::move(a));
  }
  std::sort(
      result.attempts.begin(), result.attempts.end(),
      [](const attempt_record& a, const attempt_record& b) { return a.sequence < b.sequence; });
  spdlog::info("{}: resumed: finished by an earlier run ({}); nothing rebuilt or measured",
               target.kernel, row->status);
  return true;
}

/// The loop's deadline: the kernel's end less the final comparison's 6 rounds (two measurements
/// each at the original's measured cost), but at most a quarter of what is left: the original's
/// validation carries the lane's start and overstates a measurement.
void set_loop_deadline(kernel_clock& clock) {
  if (!clock.end) {
    return;
  }
  const auto now = steady::now();
  const auto left = std::max(*clock.end - now, steady::duration{});
  const auto final_cost = std::chrono::duration_cast<steady::duration>(
      std::chrono::duration<double>(clock.measurement_s * 2.0 * 6.0));
  clock.loop.deadline = *clock.end - std::min(final_cost, left / 4);
  clock.stop.set_deadline(clock.loop.deadline);
}

/// The one-line reason of the kernel's fate, once its status is known. `cut_short`: the budget
/// ended its loop.
void explain_fate(target_result& result, bool cut_short, bool interrupted) {
  const std::string tried = std::to_string(result.attempts.size()) + " attempt" +
                            (result.attempts.size() == 1 ? "" : "s");
  if (result.status == "improved") {
    result.reason = result.final_comparison.summary;
  } else if (result.status == "failed" || !result.error.empty()) {
    result.reason = result.error;
  } else if (interrupted) {
    result.reason = "interrupted after " + tried + "; none was faster beyond the noise";
  } else if (cut_short) {
    result.reason = "the time budget ran out after " + tried + "; none was faster beyond the noise";
  } else {
    result.reason = "no proposal was faster beyond the noise (" + tried + ")";
  }
}

target_result optimize_on_graph(journey_context& journey,
                                const std::vector<std::unique_ptr<lane_worker>>& lanes,
                                optimize_journal& journal,
                                const artifact_store& artifacts,
                                kernel_clock& clock,
                                const std::atomic<bool>& user_stop) {
  const auto& target = journey.target();
  const auto& settings = journey.settings();
  target_result result;
  result.kernel = target.kernel;
  result.source_path = target.source_path;
  if (settings.resume && resume_finished(target, journal, result)) {
    explain_fate(result, false, false);
    return result;
  }
  lane_worker& lane = *lanes.front();
  auto warming = warm_up_proposers(journey);
  const bool prepared = prepare_original(journey, artifacts, lane, clock, result);
  warming.clear(); // done (or asked) before the feed's first request
  if (!prepared) {
    journal.record_target(target.kernel, target.source_path.string(), "failed", 0, 0, result.error,
                          "");
    result.reason = result.error;
    return result;
  }
  set_loop_deadline(clock);
  std::set<std::string> seen;
  std::map<std::string, attempt_record> earlier;
  proposal_journey::incumbent start{target.source_text, journey.original().artifact};
  if (settings.resume) {
    earlier = journal.earlier_attempts(target.kernel);
    start = resume_accepted(journey, artifacts, lane, journal, result, seen);
  }
  proposal_journey policy(journey, journal, artifacts, result, start, std::move(earlier),
                          std::move(seen));
  {
    tuning_graph graph(policy, *journey.services().compiler, lanes);
    graph.run(std::max<std::size_t>(settings.max_in_flight, 1));
  }
  policy.finish();
  // A run cut short is not finished: --resume goes on with it rather than reading it back.
  const bool interrupted = user_stop.load();
  const bool cut_short = !interrupted && journey.out_of_time();
  clock.stop.end_loop();
  if ((cut_short || interrupted) && result.attempts.empty()) {
    // Started, but no proposal was judged: not tried, and no figure to show.
    result.status = "not_reached";
    result.reason = interrupted ? "interrupted before any proposal was judged"
                                : "the time budget ran out before any proposal was judged (its "
                                  "turn: " +
                                      seconds_text(*clock.end - clock.started) + ")";
  } else {
    final_comparison(journey, lane, policy.current(), clock, result);
    explain_fate(result, cut_short, interrupted);
  }
  journal.record_target(
      target.kernel, target.source_path.string(),
      cut_short || interrupted ? "interrupted" : result.status, result.original_ns, result.best_ns,
      result.status == "improved" ? result.final_comparison.summary : result.error,
      result.accepted_diff);
  return result;
}

} // namespace

target_result optimize_kernel(const kernel_target& target,
                              const optimizer_settings& settings,
                              const optimizer_services& services,
                              const std::vector<std::unique_ptr<lane_worker>>& lanes,
                              optimize_journal& journal,
                              const artifact_store& artifacts,
                              const std::atomic<bool>& stop) {
  // The journey reads a copy of the settings whose deadline is the loop's (set once the original
  // is validated), and a stop that the loop's deadline sets too.
  optimizer_settings loop = settings;
  loop_stop stopping(stop);
  kernel_clock clock{loop, stopping, settings.deadline};
  if (settings.deadline) {
    stopping.set_deadline(settings.deadline);
  }
  // Without a deadline the user's stop itself, read at once as before; with one, the flag the
  // watcher sets (the user's stop within 20 ms).
  journey_context journey(target, loop, services, settings.deadline ? stopping.flag() : stop);
  try {
    return optimize_on_graph(journey, lanes, journal, artifacts, clock, stop);
  } catch (const std::exception& error) {
    // Nothing a candidate does may end the run; an error of ours ends this kernel only.
    target_result result;
    result.kernel = target.kernel;
    result.source_path = target.source_path;
    result.error = std::string("internal error: ") + error.what();
    result.reason = result.error;
    journal.record_target(target.kernel, target.source_path.string(), "failed", 0, 0, result.error,
                          "");
    return result;
  }
}

bool has_figures(const target_result& r) {
  return (r.status == "improved" || r.status == "unchanged") && r.original_ns > 0.0;
}

} // namespace rpl::engine
