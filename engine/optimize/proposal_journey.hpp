#pragma once
/// The journey of one proposal, on the tuning graph (engine/graph/tuning_graph.hpp) that autotune
/// runs too: optimize is a tuning_policy whose strategy is the proposers. In the order a proposal
/// meets them, one room each:
///
///   1. planner    the proposers (proposal_feed) hand out a proposal, made for the incumbent of
///                 the moment.
///   1b. checks    before the compile gateway, several candidates at once: the guards that read
///                 the patched source (proposal_guard.hpp: the diff applies, only the target
///                 function changed). A refusal skips the compile and the lane.
///   2. compile    the user's build template on the compile workers, through the artifact cache
///                 (a batch's builds in parallel; a build done before is not done again).
///   3. screen     the guards that read the code object (same symbols and parameter layout, no
///                 new globals; the static screen).
///   4. lane       the guards that run it (validation against the original kernel's outputs),
///                 then the paired rounds against the incumbent (or, for a configuration of a
///                 tunable proposal, its time alone). The lane takes the candidates in the
///                 order they were proposed, each once every one before it has its verdict
///                 (candidate_state::lane_turn), so each is compared with the incumbent as those
///                 left it. One measured faster then meets the pre-acceptance guards (the
///                 sanitizer pass) there too.
///   5. verdict    faster beyond the noise: it becomes the incumbent; else within the noise,
///                 slower, or failed.
///   6. planner    the proposers learn the verdict, in the order the proposals were handed out (an
///                 accepted change drops the rest of its batch, which was made for the old source).
///   7. store      the journal (optimize.sqlite, attempts.jsonl).
///
/// The guards are one ordered list (guards/guard_list.cpp); the stages, verdicts and findings are
/// enums (attempt_outcome.hpp).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/graph/tuning_policy.hpp"
#include "engine/optimize/journey_context.hpp"
#include "engine/optimize/proposal_candidate.hpp"
#include "engine/optimize/proposal_feed.hpp"
#include "engine/store/artifact_store.hpp"

namespace rpl::engine {

class optimize_journal;
struct guard_subject;

class proposal_journey final : public tuning_policy {
public:
  /// The incumbent to start from (the original, or the accepted chain a --resume rebuilt).
  struct incumbent {
    std::string text;
    std::filesystem::path artifact;
  };
  proposal_journey(const journey_context& journey,
                   optimize_journal& journal,
                   const artifact_store& artifacts,
                   target_result& result,
                   incumbent start,
                   std::map<std::string, attempt_record> earlier,
                   std::set<std::string> seen);

  candidate_ptr next_candidate() override;                                             // 1. planner
  std::optional<std::string> before_compile(candidate_state& c) override;              // 1b. checks
  void on_compiled(candidate_state& c, const messages::compile_reply& reply) override; // 2.
  std::string build_failure(const candidate_state& c) const override;
  std::optional<std::string> screen(candidate_state& c) override; // 3. screen
  void judge(candidate_state& c) override;                        // 5. verdict
  void observe(const candidate_state& c) override;                // 6. planner
  void record(candidate_state& c) override;                       // 7. store
  bool stopping() const override { return journey_.out_of_time(); }
  bool refills() const override { return true; }

  /// After the graph: the attempts still held for their turn are released and written.
  void finish();
  /// The incumbent now (after the graph: the best accepted chain).
  incumbent current() const;

private:
  messages::measure_result lane_room(proposal_candidate& p, workers::lane_backend& lane); // 4.
  /// Every candidate handed out before `sequence` has its verdict (or the run stops).
  bool lane_turn(std::uint64_t sequence) const;
  /// `sequence` has its verdict: the next candidate's turn may come.
  void pass_turn(std::uint64_t sequence);
  void time_alone(proposal_candidate& p, workers::lane_backend& lane);
  void before_acceptance(proposal_candidate& p, guard_subject& subject); // 4b.
  void judge_one(proposal_candidate& p);
  void decide_pair(proposal_candidate& p);
  attempt_record attempt_of(const proposal_ticket& t, const std::string& incumbent_text) const;
  /// Releases finished candidates in the order they were handed out (the proposers' order).
  struct finished_attempt {
    proposal_ticket ticket;
    attempt_record attempt;
    std::uint64_t made_for = 0;
    bool superseded = false;
  };
  void release_in_order();
  void release(finished_attempt& f);

  const journey_context& journey_;
  optimize_journal& journal_;
  const artifact_store& artifacts_;
  target_result& result_;
  proposal_feed feed_;

  mutable std::mutex incumbent_mutex_;
  incumbent incumbent_;          // guarded by incumbent_mutex_
  std::uint64_t generation_ = 0; // guarded by incumbent_mutex_: +1 per accepted change

  std::mutex turn_mutex_;
  std::set<std::uint64_t> judged_;          // guarded by turn_mutex_: verdicts after a gap
  std::atomic<std::uint64_t> next_turn_{1}; // the earliest candidate without a verdict

  // The planner room's (serial).
  std::size_t in_flight_ = 0;
  std::uint64_t handed_out_ = 0;
  std::uint64_t next_release_ = 1;
  std::uint64_t released_generation_ = 0;
  std::uint32_t attempt_sequence_ = 0;
  std::map<std::uint64_t, finished_attempt> finished_; ///< by candidate sequence

  std::atomic<int> building_{0}; ///< compiles submitted and not answered yet
  std::mutex result_mutex_;      // result_ is written by the planner and the store rooms
  std::mutex journal_mutex_;
  std::vector<attempt_record> to_journal_; // guarded by journal_mutex_
};

} // namespace rpl::engine
