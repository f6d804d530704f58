#include "engine/optimize/proposal_journey.hpp"

#include <chrono>
#include <cstring>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "engine/campaign/interleaved_rounds.hpp"
#include "engine/optimize/optimize_journal.hpp"
#include "engine/optimize/proposal_guard.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::engine {

namespace {

using journey_clock = std::chrono::steady_clock;

proposal_candidate& as_proposal(candidate_state& c) {
  return static_cast<proposal_candidate&>(c);
}
const proposal_candidate& as_proposal(const candidate_state& c) {
  return static_cast<const proposal_candidate&>(c);
}

void take_refusal(attempt_record& a, const guard_refusal& r) {
  a.stage = r.stage;
  a.verdict = attempt_verdict::rejected;
  a.guard = r.finding;
  a.detail = r.detail;
}

messages::measure_result lane_outcome(messages::measure_status status, std::string reason) {
  messages::measure_result result;
  result.status = status;
  result.reason = std::move(reason);
  return result;
}

} // namespace

proposal_journey::proposal_journey(const journey_context& journey,
                                   optimize_journal& journal,
                                   const artifact_store& artifacts,
                                   target_result& result,
                                   incumbent start,
                                   std::map<std::string, attempt_record> earlier,
                                   std::set<std::string> seen)
    : journey_(journey), journal_(journal), artifacts_(artifacts), result_(result),
      feed_(journey,
            proposal_feed::hooks{[this] { return current().text; },
                                 [this](attempt_record a) {
                                   const std::lock_guard lock(result_mutex_);
                                   result_.attempts.push_back(std::move(a));
                                 },
                                 [this](std::string error) {
                                   const std::lock_guard lock(result_mutex_);
                                   result_.proposer_errors.push_back(std::move(error));
                                 },
                                 [this] {
                                   const std::lock_guard lock(incumbent_mutex_);
                                   return generation_;
                                 }},
            std::move(earlier),
            std::move(seen)),
      incumbent_(std::move(start)) {}

proposal_journey::incumbent proposal_journey::current() const {
  const std::lock_guard lock(incumbent_mutex_);
  return incumbent_;
}

attempt_record proposal_journey::attempt_of(const proposal_ticket& t,
                                            const std::string& incumbent_text) const {
  attempt_record a;
  a.kernel = journey_.target().kernel;
  a.iteration = t.iteration;
  a.proposer = t.proposer;
  a.worker = t.worker;
  a.proposal_id = t.proposal.id;
  a.title = t.proposal.title;
  a.rationale = clip_detail(t.proposal.rationale, 2000);
  a.diff = t.proposal.diff;
  a.diff_hash =
      t.diff_hash.empty() ? text_hash(incumbent_text + "\n\x01" + t.proposal.diff) : t.diff_hash;
  a.repair_round = t.repair_round;
  if (t.decided) {
    a.stage = t.decided->stage;
    a.verdict = t.decided->verdict;
    a.guard = t.decided->guard;
    a.detail = t.decided->detail;
  }
  return a;
}

// 1. The planner room: the proposers' next proposal, made for the incumbent of the moment.
candidate_ptr proposal_journey::next_candidate() {
  auto ticket = feed_.next(in_flight_);
  if (!ticket) {
    return nullptr;
  }
  ++in_flight_;
  auto c = std::make_shared<proposal_candidate>();
  c->sequence = ++handed_out_;
  const incumbent now = [&] {
    const std::lock_guard lock(incumbent_mutex_);
    c->made_for = generation_;
    return incumbent_;
  }();
  c->attempt = attempt_of(*ticket, now.text);
  c->key = c->attempt.proposal_id;
  c->ticket = std::move(*ticket);
  c->incumbent_text = now.text;
  c->lane_turn = [this, sequence = c->sequence] { return lane_turn(sequence); };
  if (c->ticket.decided) {
    c->refused_before_compile = "decided by the proposer side";
  }
  return c;
}

// 1b. Before the compile gateway (a TBB thread, candidates in parallel): the guards that read the
// patched source, then the build request.
std::optional<std::string> proposal_journey::before_compile(candidate_state& c) {
  auto& p = as_proposal(c);
  guard_subject subject{journey_, p.incumbent_text, p.ticket.proposal.diff};
  if (p.ticket.knob) {
    subject.knob_macros = &p.ticket.knob_macros;
  }
  if (auto refusal = run_guards(guard_input::patched_source, subject)) {
    take_refusal(p.attempt, *refusal);
    return std::string(to_string(refusal->finding));
  }
  p.patched = std::move(subject.patched_text);
  c.compile_request = journey_.compile_request(p.patched);
  p.compile_started = journey_clock::now();
  ++building_;
  // The candidate owns its lane job; the job must not own the candidate (a cycle).
  proposal_candidate* self = &p;
  c.lane_job = [this, self](workers::lane_backend& lane) { return lane_room(*self, lane); };
  return std::nullopt;
}

// 2. The compile room's reply (on the compile service's thread): the artifact on disk.
void proposal_journey::on_compiled(candidate_state& c, const messages::compile_reply& reply) {
  auto& p = as_proposal(c);
  p.attempt.compile_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(journey_clock::now() - p.compile_started)
          .count();
  c.compile = reply;
  c.compile.artifact.clear();
  c.compile.artifact.shrink_to_fit();
  // One line per build, with the builds still running beside it: a batch builds in parallel.
  spdlog::info("{}: built [{}] in {:.2f} s on {}: {} ({} other builds running)",
               journey_.target().kernel, p.attempt.title,
               static_cast<double>(p.attempt.compile_ns) / 1e9,
               reply.worker_id.empty() ? "an unnamed worker" : reply.worker_id,
               messages::to_string(reply.status), --building_);
  if (reply.status != messages::compile_status::ok || !reply.has_artifact) {
    return;
  }
  if (c.stored_by_service) {
    c.artifact_hash = c.stored_by_service->hash;
    c.artifact_path = c.stored_by_service->path;
  } else {
    const auto stored = artifacts_.put(
        std::string_view(reply.artifact.data(), reply.artifact.size()), std::to_string(p.sequence));
    if (!stored.error.empty()) {
      c.compile.status = messages::compile_status::internal_error;
      c.compile.error = stored.error;
      return;
    }
    c.artifact_hash = stored.hash;
    c.artifact_path = stored.path;
  }
  p.bytes.resize(reply.artifact.size());
  std::memcpy(p.bytes.data(), reply.artifact.data(), p.bytes.size());
}

std::string proposal_journey::build_failure(const candidate_state& c) const {
  return std::string(messages::to_string(c.compile.status)) +
         (c.compile.error.empty() ? "" : ": " + c.compile.error);
}

// 3. The screen room: the guards that read the code object.
std::optional<std::string> proposal_journey::screen(candidate_state& c) {
  auto& p = as_proposal(c);
  const std::string incumbent_text; // not read after the planner room
  guard_subject subject{journey_, incumbent_text, p.ticket.proposal.diff};
  subject.reply = &c.compile;
  subject.bytes = &p.bytes;
  subject.artifact = c.artifact_path;
  if (auto refusal = run_guards(guard_input::code_object, subject)) {
    take_refusal(p.attempt, *refusal);
    return std::string(to_string(refusal->finding)) + ": " + refusal->detail;
  }
  return std::nullopt;
}

bool proposal_journey::lane_turn(std::uint64_t sequence) const {
  return next_turn_.load() >= sequence || journey_.out_of_time();
}

void proposal_journey::pass_turn(std::uint64_t sequence) {
  const std::lock_guard lock(turn_mutex_);
  judged_.insert(sequence);
  std::uint64_t next = next_turn_.load();
  while (judged_.erase(next) > 0) {
    ++next;
  }
  next_turn_ = next;
}

// 4. The lane room (the lane's thread): the guards that run the candidate, then its time.
messages::measure_result proposal_journey::lane_room(proposal_candidate& p,
                                                     workers::lane_backend& lane) {
  if (journey_.out_of_time()) {
    p.superseded = true; // stopping: dropped, as the graph drops what waits for a lane
    return lane_outcome(messages::measure_status::not_run, "the run is stopping");
  }
  const auto now = current();
  {
    const std::lock_guard lock(incumbent_mutex_);
    p.superseded = p.made_for != generation_;
  }
  if (p.superseded) {
    return lane_outcome(messages::measure_status::not_run,
                        "superseded: made for a source that has changed since");
  }
  guard_subject subject{journey_, now.text, p.ticket.proposal.diff};
  subject.lane = &lane;
  subject.artifact = p.artifact_path;
  const auto refusal = run_guards(guard_input::lane_outputs, subject);
  p.attempt.validation = subject.validation.dump();
  if (refusal) {
    take_refusal(p.attempt, *refusal);
    return lane_outcome(messages::measure_status::nonzero_exit, refusal->detail);
  }
  if (p.ticket.knob) {
    time_alone(p, lane);
    return lane_outcome(messages::measure_status::ok, {});
  }
  nlohmann::json measurement;
  p.paired = journey_.compare(lane, now.artifact, p.artifact_path, journey_.settings().rounds,
                              measurement);
  p.attempt.measurement = measurement.dump();
  const auto found = parse_finding(measurement.value("finding", std::string()));
  if (found && *found != attempt_finding::none) {
    // A spot check in the timed launches: it behaves differently when not checked.
    take_refusal(p.attempt, guard_refusal{attempt_stage::measurement, *found,
                                          clip_detail(measurement.value("finding_detail", ""))});
    p.paired.reset();
    return lane_outcome(messages::measure_status::ok, {});
  }
  if (p.paired->outcome == stages::optimize::paired_outcome::faster) {
    before_acceptance(p, subject);
  }
  return lane_outcome(messages::measure_status::ok, {});
}

// 4b. Still in the lane room: a candidate measured faster meets the guards only those pay for
// (the sanitizer pass); a refusal replaces the verdict the pair would have given.
void proposal_journey::before_acceptance(proposal_candidate& p, guard_subject& subject) {
  const auto refusal = run_guards(guard_input::pre_acceptance, subject);
  p.attempt.validation = subject.validation.dump();
  if (!refusal) {
    return;
  }
  if (p.paired->candidate_median_ns > 0.0) {
    p.attempt.speedup = p.paired->incumbent_median_ns / p.paired->candidate_median_ns;
  }
  take_refusal(p.attempt, *refusal);
  p.paired.reset(); // decided here: the verdict room leaves it as it is
}

void proposal_journey::time_alone(proposal_candidate& p, workers::lane_backend& lane) {
  std::string error;
  const auto launch =
      journey_.replay() ? std::nullopt : journey_.resolve(journey_.target().launch, error);
  const auto timed = lane.measure(
      journey_.lane_request(p.artifact_path, launch, journey_.settings().runs_per_round * 3, 1));
  attempt_record& a = p.attempt;
  a.stage = attempt_stage::tuning;
  if (timed.status != messages::measure_status::ok || timed.samples_ns.empty()) {
    a.verdict = attempt_verdict::failed;
    a.guard = attempt_finding::measurement;
    a.detail = clip_detail(std::string(messages::to_string(timed.status)) + ": " + timed.reason);
    return;
  }
  const double median = round_median(timed.samples_ns);
  a.verdict = attempt_verdict::measured;
  a.measurement = nlohmann::json{{"median_ns", median}, {"samples_ns", timed.samples_ns}}.dump();
  a.detail = "median " + std::to_string(median / 1000.0) + " us alone";
}

// 5. The verdict room (serial): the paired comparison decides; faster takes the incumbent's place.
void proposal_journey::judge(candidate_state& c) {
  auto& p = as_proposal(c);
  judge_one(p);
  // Its verdict is in: the lane may take the next proposal (proposal order, lane_turn).
  pass_turn(p.sequence);
}

void proposal_journey::judge_one(proposal_candidate& p) {
  if (p.paired) {
    decide_pair(p);
    return;
  }
  if (p.ticket.decided || p.superseded || p.attempt.verdict != attempt_verdict::none) {
    return; // decided earlier on its way (or dropped)
  }
  if (p.compile.status != messages::compile_status::ok || p.artifact_path.empty()) {
    p.attempt.stage = attempt_stage::compile;
    p.attempt.verdict = attempt_verdict::failed;
    p.attempt.guard = attempt_finding::compile;
    p.attempt.detail =
        clip_detail(build_failure(p) + (p.compile.output.empty() ? "" : "\n" + p.compile.output));
    return;
  }
  // Neither refused nor measured: a lane that failed or gave up on it (a stopping run).
  p.superseded = true;
}

void proposal_journey::decide_pair(proposal_candidate& p) {
  const auto& verdict = *p.paired;
  attempt_record& a = p.attempt;
  a.stage = attempt_stage::measurement;
  a.detail = verdict.summary;
  if (verdict.candidate_median_ns > 0.0) {
    a.speedup = verdict.incumbent_median_ns / verdict.candidate_median_ns;
  }
  switch (verdict.outcome) {
  case stages::optimize::paired_outcome::faster: {
    const std::lock_guard lock(incumbent_mutex_);
    if (p.made_for != generation_) {
      p.superseded = true; // cannot happen while the lane waits for verdicts; kept safe
      return;
    }
    a.stage = attempt_stage::accepted;
    a.verdict = attempt_verdict::accepted;
    incumbent_ = {p.patched, p.artifact_path};
    ++generation_;
    break;
  }
  case stages::optimize::paired_outcome::within_noise:
    a.verdict = attempt_verdict::within_noise;
    break;
  case stages::optimize::paired_outcome::slower: a.verdict = attempt_verdict::slower; break;
  case stages::optimize::paired_outcome::not_measured:
    a.verdict = attempt_verdict::failed;
    a.guard = attempt_finding::measurement;
    break;
  }
}

// 6. The planner room again: the proposers learn each verdict in the order they handed them out.
void proposal_journey::observe(const candidate_state& c) {
  const auto& p = as_proposal(c);
  --in_flight_;
  finished_[p.sequence] = finished_attempt{p.ticket, p.attempt, p.made_for, p.superseded};
  release_in_order();
}

void proposal_journey::release_in_order() {
  while (!finished_.empty() && finished_.begin()->first == next_release_) {
    auto f = std::move(finished_.begin()->second);
    finished_.erase(finished_.begin());
    ++next_release_;
    release(f);
  }
}

void proposal_journey::release(finished_attempt& f) {
  // Made for a source an earlier proposal's acceptance replaced: the rest of that batch, dropped
  // as the proposers would not have seen it.
  if (f.superseded || f.made_for < released_generation_) {
    return;
  }
  if (f.attempt.verdict == attempt_verdict::accepted) {
    released_generation_ = f.made_for + 1;
  }
  f.attempt.sequence = ++attempt_sequence_;
  feed_.learn(f.ticket, f.attempt);
  if (!f.ticket.knob) {
    const auto& a = f.attempt;
    spdlog::info("{}: #{} {} [{}] {}: {}{}", a.kernel, a.sequence, a.proposer, a.title,
                 to_string(a.stage), to_string(a.verdict),
                 a.guard == attempt_finding::none ? ""
                                                  : " (" + std::string(to_string(a.guard)) + ")");
  }
  {
    const std::lock_guard lock(result_mutex_);
    result_.attempts.push_back(f.attempt);
  }
  const std::lock_guard lock(journal_mutex_);
  to_journal_.push_back(std::move(f.attempt));
}

// 7. The store room: what the planner released is journaled.
void proposal_journey::record(candidate_state& c) {
  (void)c;
  std::vector<attempt_record> ready;
  {
    const std::lock_guard lock(journal_mutex_);
    ready.swap(to_journal_);
  }
  for (const auto& a : ready) {
    journal_.record(a);
  }
}

void proposal_journey::finish() {
  // Candidates a stop dropped leave gaps: what finished after them is released in order anyway.
  while (!finished_.empty()) {
    next_release_ = finished_.begin()->first;
    release_in_order();
  }
  candidate_state none;
  record(none);
  {
    const std::lock_guard lock(result_mutex_);
    result_.proposals_seen = feed_.proposals_seen();
  }
}

} // namespace rpl::engine
