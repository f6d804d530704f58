#include "engine/optimize/kernel_optimizer.hpp"

#include <cstring>
#include <future>

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
#include "stages/optimize/proposer_kinds.hpp"
#include "stages/optimize/unified_diff.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::engine {

namespace {

namespace opt = stages::optimize;

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
  const auto failed = validate_on(lane, journey, built.artifact);
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

/// The report's figures: the accepted chain against the original, measured afresh with twice the
/// rounds; or, when nothing was accepted, the original against itself for its time.
void final_comparison(const journey_context& journey,
                      lane_worker& lane,
                      const proposal_journey::incumbent& best,
                      target_result& result) {
  const auto& target = journey.target();
  const auto& original = journey.original().artifact;
  result.best_source = best.text;
  if (best.text == target.source_text) {
    const auto verdict = compare_on(lane, journey, original, original, 5);
    result.original_ns = result.best_ns = verdict.incumbent_median_ns;
    result.status = "unchanged";
    return;
  }
  result.final_comparison =
      compare_on(lane, journey, original, best.artifact, journey.settings().rounds * 2);
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

target_result optimize_on_graph(journey_context& journey,
                                const std::vector<std::unique_ptr<lane_worker>>& lanes,
                                optimize_journal& journal,
                                const artifact_store& artifacts) {
  const auto& target = journey.target();
  const auto& settings = journey.settings();
  target_result result;
  result.kernel = target.kernel;
  result.source_path = target.source_path;
  if (settings.resume && resume_finished(target, journal, result)) {
    return result;
  }
  lane_worker& lane = *lanes.front();
  auto warming = warm_up_proposers(journey);
  const bool prepared = prepare_original(journey, artifacts, lane, result);
  warming.clear(); // done (or asked) before the feed's first request
  if (!prepared) {
    journal.record_target(target.kernel, target.source_path.string(), "failed", 0, 0, result.error,
                          "");
    return result;
  }
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
  final_comparison(journey, lane, policy.current(), result);
  // A run cut short is not finished: --resume goes on with it rather than reading it back.
  const bool finished = !journey.out_of_time();
  journal.record_target(
      target.kernel, target.source_path.string(), finished ? result.status : "interrupted",
      result.original_ns, result.best_ns,
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
  journey_context journey(target, settings, services, stop);
  try {
    return optimize_on_graph(journey, lanes, journal, artifacts);
  } catch (const std::exception& error) {
    // Nothing a candidate does may end the run; an error of ours ends this kernel only.
    target_result result;
    result.kernel = target.kernel;
    result.source_path = target.source_path;
    result.error = std::string("internal error: ") + error.what();
    journal.record_target(target.kernel, target.source_path.string(), "failed", 0, 0, result.error,
                          "");
    return result;
  }
}

} // namespace rpl::engine
