#pragma once
/// What the tuning graph asks of the job it runs. The graph (tuning_graph.hpp) is structure only:
/// nodes, edges, concurrency and back-pressure; every decision about a candidate comes from here.
/// Each call names the node (and so the thread discipline) it is made from.

#include <optional>
#include <string>

#include "engine/graph/candidate_state.hpp"
#include "messages/wire.hpp"

namespace rpl::engine {

class tuning_policy {
public:
  virtual ~tuning_policy() = default;

  /// The next candidate to build, with its compile and measure requests (the only place they are
  /// built), or nullptr when the search is done (or stopping). Called before the graph starts (the
  /// seeds) and then only from the planner node, one call at a time.
  virtual candidate_ptr next_candidate() = 0;
  /// The checks a candidate must pass before it is built (optimize's source guards), in the
  /// compile room before the compile is submitted, on a TBB thread: several candidates' checks
  /// run at once. A refusal skips the compile and the lanes (`not_run`, the reason) like
  /// candidate_state::refused_before_compile; nullopt lets it through. May fill in the
  /// candidate's compile request. Must not throw.
  virtual std::optional<std::string> before_compile(candidate_state& c) {
    (void)c;
    return std::nullopt;
  }
  /// Takes the compile reply into the candidate: stores the artifact unless the compile service
  /// did (`c.stored_by_service`), and points the measure request's `{BIN}` at it. Called on the
  /// compile service's thread (screen room), once per candidate; must not throw.
  virtual void on_compiled(candidate_state& c, const messages::compile_reply& reply) = 0;
  /// The reason a candidate whose build failed never reaches a lane.
  virtual std::string build_failure(const candidate_state& c) const = 0;
  /// The static screen, after a successful build and before any lane: the reason the device would
  /// refuse to launch the candidate ("static screen: ..."), which then skips the lanes like a
  /// failed build (measurement `not_run`, verdict invalid); nullopt lets it through. May record
  /// what it found in `c`. Called on the compile service's thread, once per candidate; must not
  /// throw.
  virtual std::optional<std::string> screen(candidate_state& c) {
    (void)c;
    return std::nullopt;
  }
  /// Decides the verdict against the incumbent (verdict node: serial).
  virtual void judge(candidate_state& c) = 0;
  /// Writes the finished candidate and reports progress (store node: serial). The planner node
  /// has already given it to observe() and asked for the next candidate, so this may run beside
  /// the planner node's next call (for another candidate).
  virtual void record(candidate_state& c) = 0;
  /// Gives the candidate's result to the search strategy (planner node: serial).
  virtual void observe(const candidate_state& c) = 0;
  /// True once the job stops (a signal, a failure): the graph then drops the candidates waiting
  /// for a compile or for a lane (they are not recorded), gives the measurements already running
  /// a grace period, and starts nothing new. Polled from any thread; must be cheap.
  virtual bool stopping() const { return false; }
  /// True for a policy that may have nothing to start for a while and then several candidates at
  /// once (optimize: a batch of proposals once the last batch's verdicts are in). After each
  /// finished candidate the planner then asks next_candidate() again until the graph holds
  /// `max_in_flight` or it returns nullptr, instead of starting one replacement only.
  virtual bool refills() const { return false; }
};

} // namespace rpl::engine
