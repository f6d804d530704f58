#include "stages/analysis/timeline_dag.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <span>
#include <tuple>
#include <unordered_set>
#include <utility>

namespace rpl::stages::analysis {

namespace {

using rocpd::sync_kind;
using rocpd::timeline;
constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

/// Edges into (or out of) each op, as one list with per-op offsets: few ops have any, so a vector
/// per op would cost more than the edges.
struct adjacency {
  std::vector<std::uint32_t> begin; ///< n + 1 offsets into list; empty: no op has an edge
  std::vector<std::uint32_t> list;
  std::span<const std::uint32_t> of(std::uint32_t i) const {
    if (begin.empty())
      return {};
    return {list.data() + begin[i], list.data() + begin[i + 1]};
  }
};

/// `edges` (from, to) as adjacency lists of `to` (by_to) or of `from`, in the edges' order.
adjacency adjacency_of(std::size_t n,
                       const std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges,
                       bool by_to) {
  adjacency a;
  if (edges.empty())
    return a;
  a.begin.assign(n + 1, 0);
  for (const auto& [from, to] : edges)
    ++a.begin[(by_to ? to : from) + 1];
  for (std::size_t i = 0; i < n; ++i)
    a.begin[i + 1] += a.begin[i];
  a.list.resize(edges.size());
  std::vector<std::uint32_t> fill(a.begin.begin(), a.begin.end() - 1);
  for (const auto& [from, to] : edges)
    a.list[fill[by_to ? to : from]++] = by_to ? from : to;
  return a;
}

/// The DAG in arrays: ops in start order, each with at most one stream predecessor and any number
/// of wait predecessors, and its segment.
struct dag {
  std::vector<std::uint32_t> order;       ///< op indices by (start, end, index)
  std::vector<std::uint32_t> stream_pred; ///< per op; none for the first of its stream/segment
  std::vector<std::uint32_t> stream_next; ///< per op
  adjacency wait_pred;                    ///< per op (few have any)
  adjacency wait_next;
  std::vector<std::uint32_t> segment; ///< per op
  std::size_t segments = 0;
  std::vector<dag_edge> cross_edges;
  std::vector<std::string> notes;
};

/// What the stream waits and the host synchronizations came to, for the notes.
struct link_counts {
  std::size_t waits = 0;                ///< stream waits recorded with their stream
  std::size_t waits_without_stream = 0; ///< API calls only
  std::size_t blocking = 0;             ///< host synchronizations (segment cuts)
  std::size_t placed_waits = 0;         ///< waits that hold back a later op of their stream
  std::size_t used = 0;                 ///< waits that became edges
  std::size_t by_record = 0;            ///< of which from the event record
  std::size_t by_order = 0;             ///< records placed by the API calls' enqueue order
  std::size_t record_without_op = 0;
  std::size_t record_across_cut = 0;
};

using process_key = std::pair<std::size_t, std::int64_t>;

/// Segments: per process, cut at the end of each host-blocking synchronization.
void cut_segments(const timeline& t, dag& g, link_counts& counts) {
  std::map<process_key, std::vector<std::int64_t>> cuts;
  for (const auto& s : t.syncs) {
    if (s.kind == sync_kind::stream_wait_event) {
      // CUDA traces carry the API call and the tracer's record of the same wait: count the
      // records where there are any.
      counts.waits_without_stream += s.stream_id < 0 && !s.from_tracer_record;
      continue;
    }
    if (s.kind == sync_kind::event_record)
      continue; // GPU side: it cuts nothing
    if (s.from_tracer_record)
      continue; // the API region of the same call is there too
    cuts[{s.database, s.pid}].push_back(s.end_ns);
    ++counts.blocking;
  }
  for (auto& [key, times] : cuts) {
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
  }
  // Segment ids in the order ops first reach them (by index), as a map from (process, cut count)
  // would number them; per track its process's cuts and ids, so an op costs one bisection.
  std::map<process_key, std::size_t> process_index;
  std::vector<const std::vector<std::int64_t>*> cuts_of;
  std::vector<std::vector<std::uint32_t>> ids_of;
  std::vector<std::size_t> process_of_track(t.tracks.size());
  static const std::vector<std::int64_t> no_cuts;
  for (std::size_t k = 0; k < t.tracks.size(); ++k) {
    const process_key p{t.tracks[k].database, t.tracks[k].pid};
    const auto [it, added] = process_index.try_emplace(p, cuts_of.size());
    if (added) {
      const auto c = cuts.find(p);
      cuts_of.push_back(c == cuts.end() ? &no_cuts : &c->second);
      ids_of.emplace_back(cuts_of.back()->size() + 1, none);
    }
    process_of_track[k] = it->second;
  }
  std::uint32_t next_id = 0;
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    const std::size_t p = process_of_track[static_cast<std::size_t>(t.ops[i].track)];
    const std::vector<std::int64_t>& c = *cuts_of[p];
    const auto k = static_cast<std::size_t>(
        std::upper_bound(c.begin(), c.end(), t.ops[i].start_ns) - c.begin());
    std::uint32_t& id = ids_of[p][k];
    if (id == none)
      id = next_id++;
    g.segment[i] = id;
  }
  g.segments = next_id;
}

/// Stream order within a segment.
void link_stream_order(const timeline& t, dag& g) {
  std::vector<std::uint32_t> last_on_track(t.tracks.size(), none);
  for (const std::uint32_t i : g.order) {
    const auto track = static_cast<std::size_t>(t.ops[i].track);
    const std::uint32_t prev = last_on_track[track];
    if (prev != none && g.segment[prev] == g.segment[i]) {
      g.stream_pred[i] = prev;
      g.stream_next[prev] = i;
    }
    last_on_track[track] = i;
  }
}

using stream_key = std::tuple<std::size_t, std::int64_t, std::int64_t>; // database, pid, stream

/// The ops of each stream in start order and by end, and of each process by end, for the stream
/// waits to search. Each track is one stream of one process. A list is built when a wait first
/// needs it (waits placed by the enqueue order and their event records need none).
class stream_op_lists {
public:
  stream_op_lists(const timeline& t, const std::vector<std::uint32_t>& order)
      : t_(t), order_(order), stream_of_track_(t.tracks.size()),
        process_of_track_(t.tracks.size()) {
    for (std::size_t k = 0; k < t.tracks.size(); ++k) {
      const auto& track = t.tracks[k];
      stream_of_track_[k] =
          stream_index_
              .try_emplace({track.database, track.pid, track.stream_id}, stream_index_.size())
              .first->second;
      process_of_track_[k] =
          process_index_.try_emplace({track.database, track.pid}, process_index_.size())
              .first->second;
    }
    stream_has_ops_.assign(stream_index_.size(), 0);
    for (const auto& op : t.ops)
      stream_has_ops_[stream_of_track_[static_cast<std::size_t>(op.track)]] = 1;
  }

  bool has_ops(const stream_key& key) const {
    const auto it = stream_index_.find(key);
    return it != stream_index_.end() && stream_has_ops_[it->second];
  }

  const std::vector<std::uint32_t>& stream_by_start(const stream_key& key) {
    const auto it = stream_index_.find(key);
    if (it == stream_index_.end())
      return no_ops_;
    if (!by_stream_)
      by_stream_ = grouped(stream_of_track_, stream_index_.size(), false);
    return (*by_stream_)[it->second];
  }

  /// nullptr for a stream without ops.
  const std::vector<std::uint32_t>* stream_by_end(const stream_key& key) {
    const auto it = stream_index_.find(key);
    if (it == stream_index_.end() || !stream_has_ops_[it->second])
      return nullptr;
    if (!stream_by_end_)
      stream_by_end_ = grouped(stream_of_track_, stream_index_.size(), true);
    return &(*stream_by_end_)[it->second];
  }

  const std::vector<std::uint32_t>& process_by_end(const process_key& key) {
    const auto it = process_index_.find(key);
    if (it == process_index_.end())
      return no_ops_;
    if (!process_by_end_)
      process_by_end_ = grouped(process_of_track_, process_index_.size(), true);
    return (*process_by_end_)[it->second];
  }

private:
  using lists = std::vector<std::vector<std::uint32_t>>;

  lists
  grouped(const std::vector<std::size_t>& group_of_track, std::size_t groups, bool by_end) const {
    lists out(groups);
    for (const std::uint32_t i : order_)
      out[group_of_track[static_cast<std::size_t>(t_.ops[i].track)]].push_back(i);
    if (by_end)
      for (auto& ops : out)
        std::sort(ops.begin(), ops.end(), [this](std::uint32_t a, std::uint32_t b) {
          return std::tie(t_.ops[a].end_ns, a) < std::tie(t_.ops[b].end_ns, b);
        });
    return out;
  }

  static inline const std::vector<std::uint32_t> no_ops_;
  const timeline& t_;
  const std::vector<std::uint32_t>& order_;
  std::map<stream_key, std::size_t> stream_index_;
  std::map<process_key, std::size_t> process_index_;
  std::vector<std::size_t> stream_of_track_, process_of_track_;
  std::vector<std::uint8_t> stream_has_ops_;
  std::optional<lists> by_stream_, stream_by_end_, process_by_end_;
};

/// The event records with their stream: by record instance, and per event in call order.
class event_record_index {
public:
  explicit event_record_index(const timeline& t) {
    for (const auto& s : t.syncs) {
      if (s.kind != sync_kind::event_record || s.stream_id < 0)
        continue;
      if (s.event_sync_id >= 0)
        by_sync_id_[{s.database, s.pid, s.event_sync_id}] = &s;
      if (!s.event.empty())
        records_[{s.database, s.pid, s.event}].push_back(&s);
    }
    for (auto& [key, list] : records_)
      std::stable_sort(list.begin(), list.end(),
                       [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
  }

  /// The record `wait` waits for: its record instance where the trace names it, else the last
  /// record of the event called before the wait; nullptr when there is none.
  const rocpd::sync_row* record_of(const rocpd::sync_row& wait) const {
    if (wait.event_sync_id >= 0) {
      const auto it = by_sync_id_.find({wait.database, wait.pid, wait.event_sync_id});
      if (it != by_sync_id_.end())
        return it->second;
    }
    if (wait.event.empty())
      return nullptr;
    const auto it = records_.find({wait.database, wait.pid, wait.event});
    if (it == records_.end())
      return nullptr;
    const auto& list = it->second;
    auto r = std::upper_bound(list.begin(), list.end(), wait.start_ns,
                              [](std::int64_t v, const auto* rec) { return v < rec->start_ns; });
    return r == list.begin() ? nullptr : *std::prev(r);
  }

private:
  using event_key = std::tuple<std::size_t, std::int64_t, std::string>; // database, pid, event
  std::map<std::tuple<std::size_t, std::int64_t, std::int64_t>, const rocpd::sync_row*> by_sync_id_;
  std::map<event_key, std::vector<const rocpd::sync_row*>> records_;
};

/// The op a stream wait holds back: the first op enqueued on the stream after the wait, or,
/// without the enqueue order, the first op that started after the call.
std::optional<std::uint32_t>
waiter_of(const timeline& t, const rocpd::sync_row& wait, stream_op_lists& ops) {
  if (wait.ordered) {
    if (wait.op < 0)
      return std::nullopt;
    return static_cast<std::uint32_t>(wait.op);
  }
  const auto& on_stream = ops.stream_by_start({wait.database, wait.pid, wait.stream_id});
  const auto it =
      std::lower_bound(on_stream.begin(), on_stream.end(), wait.start_ns,
                       [&](std::uint32_t i, std::int64_t v) { return t.ops[i].start_ns < v; });
  if (it == on_stream.end())
    return std::nullopt;
  return *it;
}

/// The last op enqueued on the recording stream before the record: what the event marks. In an
/// earlier segment, a host synchronization already ordered it: no edge (none).
std::uint32_t source_by_enqueue_order(const rocpd::sync_row& record,
                                      std::uint32_t waiter,
                                      const dag& g,
                                      link_counts& counts) {
  ++counts.by_order;
  if (record.op < 0 || static_cast<std::uint32_t>(record.op) == waiter) {
    ++counts.record_without_op;
    return none;
  }
  if (g.segment[static_cast<std::size_t>(record.op)] != g.segment[waiter]) {
    ++counts.record_across_cut;
    return none;
  }
  return static_cast<std::uint32_t>(record.op);
}

/// The recording stream's last op that ended by the time the waiter started (and by the time the
/// GPU reached the record, when the tracer timed it); none when nothing was recorded before it in
/// this segment.
std::uint32_t source_by_record_time(const timeline& t,
                                    const dag& g,
                                    const rocpd::sync_row& record,
                                    std::uint32_t waiter,
                                    stream_op_lists& ops,
                                    link_counts& counts) {
  std::uint32_t source = none;
  std::int64_t limit = t.ops[waiter].start_ns;
  if (record.device_ns >= 0)
    limit = std::min(limit, record.device_ns);
  if (const auto* rec = ops.stream_by_end({record.database, record.pid, record.stream_id})) {
    const auto& ends = *rec;
    auto it = std::upper_bound(ends.begin(), ends.end(), limit,
                               [&](std::int64_t v, auto i) { return v < t.ops[i].end_ns; });
    if (it != ends.begin() && g.segment[*std::prev(it)] == g.segment[waiter] &&
        *std::prev(it) != waiter)
      source = *std::prev(it);
  }
  if (source == none)
    ++counts.record_without_op; // no dependency
  return source;
}

/// Without the event's record: the last op of another stream of the process, in the same
/// segment, that ended at or before the waiter started; none when there is none.
std::uint32_t source_by_end_time(const timeline& t,
                                 const dag& g,
                                 const rocpd::sync_row& wait,
                                 std::uint32_t waiter,
                                 stream_op_lists& ops) {
  const auto& ends = ops.process_by_end({wait.database, wait.pid});
  auto it = std::upper_bound(ends.begin(), ends.end(), t.ops[waiter].start_ns,
                             [&](std::int64_t v, std::uint32_t i) { return v < t.ops[i].end_ns; });
  while (it != ends.begin()) {
    --it;
    const std::uint32_t c = *it;
    if (t.ops[c].track != t.ops[waiter].track && g.segment[c] == g.segment[waiter])
      return c;
    if (g.segment[c] != g.segment[waiter] && t.ops[c].end_ns < t.ops[waiter].start_ns)
      break; // earlier segments cannot release it
  }
  return none;
}

/// Stream waits: the waiting stream's first op after the call depends on the last op that the
/// recording stream of the event had finished when the event was recorded; without the record,
/// on the op of another stream of the process that ended last before the waiter started.
void link_stream_waits(const timeline& t, dag& g, link_counts& counts) {
  stream_op_lists ops(t, g.order);
  const event_record_index records(t);
  std::unordered_set<std::uint64_t> linked; // (source, waiter)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (const auto& s : t.syncs) {
    if (s.kind != sync_kind::stream_wait_event || s.stream_id < 0)
      continue;
    ++counts.waits;
    if (!ops.has_ops({s.database, s.pid, s.stream_id}))
      continue;
    const std::optional<std::uint32_t> placed = waiter_of(t, s, ops);
    if (!placed)
      continue;
    const std::uint32_t waiter = *placed;
    ++counts.placed_waits;
    const rocpd::sync_row* record = records.record_of(s);
    const bool from_record = record != nullptr;
    std::uint32_t source = none;
    if (record != nullptr && record->ordered)
      source = source_by_enqueue_order(*record, waiter, g, counts);
    else if (record != nullptr)
      source = source_by_record_time(t, g, *record, waiter, ops, counts);
    else
      source = source_by_end_time(t, g, s, waiter, ops);
    if (source == none || t.ops[source].track == t.ops[waiter].track ||
        !linked.insert(std::uint64_t{source} << 32 | waiter).second)
      continue;
    edges.emplace_back(source, waiter);
    g.cross_edges.push_back({source, waiter, dag_edge_kind::stream_wait, from_record});
    ++counts.used;
    counts.by_record += from_record;
  }
  g.wait_pred = adjacency_of(t.ops.size(), edges, true);
  g.wait_next = adjacency_of(t.ops.size(), edges, false);
}

/// What the edges came from and what was left out.
void describe_links(const link_counts& counts, dag& g) {
  if (counts.waits == 0) {
    g.notes.push_back(
        "no stream-wait records with their stream: the streams of a process are taken as "
        "independent between host synchronizations, so the critical path follows the stream whose "
        "work ends last (the CUPTI tracer records waits with their stream: profile --backend "
        "cuda; rocprofv3 --hip-trace records the calls' arguments)");
  } else {
    std::string note =
        std::to_string(counts.used) + " of " + std::to_string(counts.waits) +
        " recorded stream waits became cross-stream edges: " + std::to_string(counts.by_record) +
        " from the event record they wait for (the recording stream's last op "
        "before the record" +
        (counts.by_order > 0 ? ", " + std::to_string(counts.by_order) +
                                   " of the waits placed by the order the "
                                   "API calls enqueued the ops"
                             : std::string()) +
        "), " + std::to_string(counts.used - counts.by_record) +
        " by timing (no record of the event: the op of another stream that ended "
        "last before the waiter started)";
    if (counts.record_without_op > 0)
      note += "; " + std::to_string(counts.record_without_op) +
              " waited for events recorded before any op of their stream in the segment (no "
              "dependency)";
    if (counts.record_across_cut > 0)
      note += "; " + std::to_string(counts.record_across_cut) +
              " waited for ops before a host synchronization, which already orders them (no "
              "edge)";
    if (counts.waits > counts.placed_waits)
      note += "; " + std::to_string(counts.waits - counts.placed_waits) +
              " held back no later op of their stream (none enqueued or started after them)";
    g.notes.push_back(note);
  }
  // With the tracer's records, the API calls of the same waits add nothing: say nothing of them.
  if (counts.waits_without_stream > 0 && counts.waits == 0)
    g.notes.push_back(std::to_string(counts.waits_without_stream) +
                      " stream waits were recorded without their stream (API calls only) and "
                      "were not used");
  if (counts.blocking > 0)
    g.notes.push_back(std::to_string(counts.blocking) +
                      " host synchronizations cut the timeline into " + std::to_string(g.segments) +
                      " segments; the critical path is the sum of their paths");
}

dag build(const timeline& t) {
  dag g;
  const std::size_t n = t.ops.size();
  // By (start, index) in O(N), then runs of equal starts by (end, index).
  g.order = rocpd::ops_by_start(t);
  for (std::size_t lo = 0; lo < n;) {
    std::size_t hi = lo + 1;
    while (hi < n && t.ops[g.order[hi]].start_ns == t.ops[g.order[lo]].start_ns)
      ++hi;
    if (hi - lo > 1)
      std::sort(g.order.begin() + static_cast<std::ptrdiff_t>(lo),
                g.order.begin() + static_cast<std::ptrdiff_t>(hi),
                [&](std::uint32_t a, std::uint32_t b) {
                  return std::tie(t.ops[a].end_ns, a) < std::tie(t.ops[b].end_ns, b);
                });
    lo = hi;
  }
  g.stream_pred.assign(n, none);
  g.stream_next.assign(n, none);
  g.segment.assign(n, 0);

  link_counts counts;
  cut_segments(t, g, counts);
  link_stream_order(t, g);
  link_stream_waits(t, g, counts);
  describe_links(counts, g);
  return g;
}

double duration(const timeline& t, std::uint32_t i) {
  return static_cast<double>(std::max<std::int64_t>(0, t.ops[i].end_ns - t.ops[i].start_ns));
}

/// The DAG laid out for replays, by position in start order: what releases each op (the
/// predecessor that ended last), the gap it left then, and the other predecessors, so that each
/// what-if question is one sequential pass.
struct replay_plan {
  std::vector<std::uint32_t> release;     ///< position of the releasing predecessor; none
  std::vector<double> start_or_gap;       ///< the op's start without one, else the gap after it
  std::vector<std::uint32_t> stream_pred; ///< position; none
  adjacency wait_pred;                    ///< positions
  std::vector<std::uint32_t> segment;
  std::size_t segments = 0;
};

replay_plan plan_replay(const timeline& t, const dag& g) {
  const std::size_t n = t.ops.size();
  std::vector<std::uint32_t> position(n);
  for (std::uint32_t p = 0; p < n; ++p)
    position[g.order[p]] = p;
  replay_plan plan;
  plan.release.assign(n, none);
  plan.start_or_gap.resize(n);
  plan.stream_pred.assign(n, none);
  plan.segment.resize(n);
  plan.segments = g.segments;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> waits;
  for (std::uint32_t p = 0; p < n; ++p) {
    const std::uint32_t i = g.order[p];
    const double start = static_cast<double>(t.ops[i].start_ns);
    std::uint32_t release = g.stream_pred[i];
    for (const std::uint32_t w : g.wait_pred.of(i)) {
      if (release == none ||
          std::tie(t.ops[w].end_ns, w) > std::tie(t.ops[release].end_ns, release))
        release = w;
      waits.emplace_back(position[w], p);
    }
    plan.start_or_gap[p] =
        release == none ? start : std::max(0.0, start - static_cast<double>(t.ops[release].end_ns));
    if (release != none)
      plan.release[p] = position[release];
    if (g.stream_pred[i] != none)
      plan.stream_pred[p] = position[g.stream_pred[i]];
    plan.segment[p] = g.segment[i];
  }
  plan.wait_pred = adjacency_of(n, waits, true);
  return plan;
}

/// Replays the segments with each op's duration (by position in start order) scaled by `factor`
/// where its name is `target` (-1: none), and returns the summed segment spans. An op waits for
/// the predecessor that released it (the one that ended last) plus the gap it left then (a launch
/// that came late stays late), and for every other predecessor's end. `new_end` is scratch.
double replay_span(const replay_plan& plan,
                   const std::vector<double>& duration_ns,
                   const std::vector<std::int32_t>& name,
                   std::int32_t target,
                   double factor,
                   std::vector<double>& new_end) {
  const std::size_t n = duration_ns.size();
  new_end.assign(n, 0);
  std::vector<double> first(plan.segments, std::numeric_limits<double>::max());
  std::vector<double> last(plan.segments, std::numeric_limits<double>::lowest());
  for (std::uint32_t p = 0; p < n; ++p) {
    double new_start = plan.start_or_gap[p];
    if (const std::uint32_t release = plan.release[p]; release != none) {
      new_start += new_end[release];
      if (plan.stream_pred[p] != none)
        new_start = std::max(new_start, new_end[plan.stream_pred[p]]);
      for (const std::uint32_t w : plan.wait_pred.of(p))
        new_start = std::max(new_start, new_end[w]);
    }
    new_end[p] = new_start + (name[p] == target ? duration_ns[p] * factor : duration_ns[p]);
    first[plan.segment[p]] = std::min(first[plan.segment[p]], new_start);
    last[plan.segment[p]] = std::max(last[plan.segment[p]], new_end[p]);
  }
  double span = 0;
  for (std::size_t s = 0; s < plan.segments; ++s)
    if (last[s] >= first[s])
      span += last[s] - first[s];
  return span;
}

/// The replay's plan and inputs in start order (durations, name indices) and the span replayed
/// unchanged, which every what-if question compares against.
struct replay_inputs {
  replay_plan plan;
  std::vector<double> duration_ns;
  std::vector<std::int32_t> name;
  std::vector<double> new_end; ///< scratch
  double before_ns = 0;
};

replay_inputs prepare_replay(const timeline& t, const dag& g) {
  replay_inputs in{plan_replay(t, g), {}, {}, {}, 0};
  const std::size_t n = t.ops.size();
  in.duration_ns.resize(n);
  in.name.resize(n);
  for (std::uint32_t p = 0; p < n; ++p) {
    in.duration_ns[p] = duration(t, g.order[p]);
    in.name[p] = t.ops[g.order[p]].name;
  }
  in.before_ns = replay_span(in.plan, in.duration_ns, in.name, -1, 1.0, in.new_end);
  return in;
}

/// The saving if every op named `target` (an index into t.names) were `pct` % shorter.
double saving(replay_inputs& in, std::int32_t target, double pct) {
  return in.before_ns -
         replay_span(in.plan, in.duration_ns, in.name, target, 1.0 - pct / 100.0, in.new_end);
}

/// result[k][p]: the saving if every op named targets[k] (an index into t.names) were
/// percents[p] % shorter.
std::vector<std::vector<double>> savings(const timeline& t,
                                         const dag& g,
                                         const std::vector<std::int32_t>& targets,
                                         const std::vector<double>& percents) {
  replay_inputs in = prepare_replay(t, g);
  std::vector<std::vector<double>> out;
  for (const std::int32_t target : targets) {
    out.emplace_back();
    for (const double pct : percents)
      out.back().push_back(saving(in, target, pct));
  }
  return out;
}

std::int32_t name_index(const timeline& t, const std::string& name) {
  return static_cast<std::int32_t>(std::find(t.names.begin(), t.names.end(), name) -
                                   t.names.begin());
}

} // namespace

critical_path_result
critical_path(const timeline& t, std::size_t what_if_top, const std::vector<double>& percents) {
  critical_path_result r;
  const dag g = build(t);
  const std::size_t n = t.ops.size();
  r.segments = g.segments;
  r.notes = g.notes;
  r.cross_edges = g.cross_edges;
  r.on_path.assign(n, 0);
  r.slack_ns.assign(n, 0);
  if (n == 0)
    return r;

  std::int64_t first_start = std::numeric_limits<std::int64_t>::max(), last_end = 0;
  std::vector<std::uint32_t> segment_last(g.segments, none);
  for (std::uint32_t i = 0; i < n; ++i) {
    first_start = std::min(first_start, t.ops[i].start_ns);
    last_end = std::max(last_end, t.ops[i].end_ns);
    std::uint32_t& l = segment_last[g.segment[i]];
    if (l == none || std::tie(t.ops[i].end_ns, i) > std::tie(t.ops[l].end_ns, l))
      l = i;
  }
  r.makespan_ns = static_cast<double>(last_end - first_start);

  // The path: from each segment's last-ending op, back through the predecessor that ended last.
  for (std::size_t s = 0; s < g.segments; ++s) {
    std::uint32_t i = segment_last[s];
    if (i == none)
      continue;
    const std::int64_t end = t.ops[i].end_ns;
    std::int64_t start = t.ops[i].start_ns;
    while (i != none) {
      r.on_path[i] = 1;
      r.busy_ns += duration(t, i);
      start = t.ops[i].start_ns;
      std::uint32_t best = g.stream_pred[i];
      for (const std::uint32_t p : g.wait_pred.of(i))
        if (best == none || std::tie(t.ops[p].end_ns, p) > std::tie(t.ops[best].end_ns, best))
          best = p;
      i = best;
    }
    r.path_ns += static_cast<double>(end - start);
  }

  // Slack: backward over start order, successors may start as soon as an op ends.
  std::vector<double> latest_finish(n);
  std::vector<double> deadline(g.segments, 0);
  for (std::size_t s = 0; s < g.segments; ++s)
    if (segment_last[s] != none)
      deadline[s] = static_cast<double>(t.ops[segment_last[s]].end_ns);
  for (auto it = g.order.rbegin(); it != g.order.rend(); ++it) {
    const std::uint32_t i = *it;
    double lf = deadline[g.segment[i]];
    auto bound = [&](std::uint32_t next) {
      lf = std::min(lf, latest_finish[next] - duration(t, next));
    };
    if (g.stream_next[i] != none)
      bound(g.stream_next[i]);
    for (const std::uint32_t next : g.wait_next.of(i))
      bound(next);
    latest_finish[i] = lf;
    r.slack_ns[i] = std::max(0.0, lf - static_cast<double>(t.ops[i].end_ns));
  }

  std::vector<kernel_path_time> per_name(t.names.size());
  std::vector<std::uint8_t> seen(t.names.size(), 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(t.ops[i].name);
    kernel_path_time& p = per_name[k];
    p.total_ns += duration(t, i);
    p.min_slack_ns = seen[k] ? std::min(p.min_slack_ns, r.slack_ns[i]) : r.slack_ns[i];
    seen[k] = 1;
    if (r.on_path[i]) {
      p.critical_path_ns += duration(t, i);
      ++p.on_path;
    }
  }
  for (std::size_t k = 0; k < per_name.size(); ++k) {
    if (!seen[k])
      continue;
    per_name[k].name = t.names[k];
    r.kernels.push_back(std::move(per_name[k]));
  }
  std::stable_sort(
      r.kernels.begin(), r.kernels.end(), [](const kernel_path_time& a, const kernel_path_time& b) {
        return std::tie(a.critical_path_ns, a.total_ns) > std::tie(b.critical_path_ns, b.total_ns);
      });
  if (what_if_top > 0 && !percents.empty()) {
    std::vector<std::int32_t> targets;
    for (std::size_t k = 0; k < r.kernels.size() && k < what_if_top; ++k) {
      if (r.kernels[k].critical_path_ns <= 0)
        break;
      targets.push_back(name_index(t, r.kernels[k].name));
    }
    if (!targets.empty()) {
      const auto saved = savings(t, g, targets, percents);
      for (std::size_t k = 0; k < targets.size(); ++k)
        for (std::size_t p = 0; p < percents.size(); ++p)
          r.kernels[k].what_if.emplace_back(percents[p], saved[k][p]);
    }
  }
  return r;
}

std::vector<std::vector<double>> what_if_savings(const timeline& t,
                                                 const std::vector<std::string>& names,
                                                 const std::vector<double>& percents) {
  const dag g = build(t);
  std::vector<std::int32_t> targets;
  for (const auto& name : names)
    targets.push_back(name_index(t, name));
  return savings(t, g, targets, percents);
}

std::vector<double> what_if_each(const timeline& t,
                                 const std::vector<std::string>& names,
                                 const std::vector<double>& percents) {
  if (names.empty() || t.ops.empty())
    return std::vector<double>(names.size(), 0.0);
  const dag g = build(t);
  replay_inputs in = prepare_replay(t, g);
  std::vector<double> out;
  for (std::size_t k = 0; k < names.size() && k < percents.size(); ++k)
    out.push_back(saving(in, name_index(t, names[k]), percents[k]));
  return out;
}

double what_if_saving(const timeline& t, const std::string& name, double faster_pct) {
  return what_if_savings(t, {name}, {faster_pct}).front().front();
}

nlohmann::json to_json(const timeline& t, const critical_path_result& r, std::size_t max_ops) {
  using nlohmann::json;
  json tracks = json::array();
  for (const auto& track : t.tracks)
    tracks.push_back({{"name", track.name}, {"pid", track.pid}, {"stream_id", track.stream_id}});
  json kernels = json::array();
  for (const auto& k : r.kernels)
    kernels.push_back({{"name", k.name},
                       {"critical_path_ns", k.critical_path_ns},
                       {"critical_path_share", r.path_ns > 0 ? k.critical_path_ns / r.path_ns : 0},
                       {"total_ns", k.total_ns},
                       {"ops_on_path", k.on_path},
                       {"min_slack_ns", k.min_slack_ns}});
  json edges = json::array();
  for (const auto& e : r.cross_edges)
    edges.push_back({{"kind", "stream_wait"},
                     {"matched_by", e.from_event_record ? "event_record" : "timing"},
                     {"from",
                      {{"name", t.names[static_cast<std::size_t>(t.ops[e.from].name)]},
                       {"track", t.ops[e.from].track},
                       {"end_ns", t.ops[e.from].end_ns}}},
                     {"to",
                      {{"name", t.names[static_cast<std::size_t>(t.ops[e.to].name)]},
                       {"track", t.ops[e.to].track},
                       {"start_ns", t.ops[e.to].start_ns}}}});
  std::vector<std::uint32_t> critical;
  for (std::uint32_t i = 0; i < t.ops.size(); ++i)
    if (r.on_path[i])
      critical.push_back(i);
  std::sort(critical.begin(), critical.end(), [&](std::uint32_t a, std::uint32_t b) {
    return std::tie(t.ops[a].start_ns, a) < std::tie(t.ops[b].start_ns, b);
  });
  json ops = json::array();
  for (std::size_t n = 0; n < critical.size() && n < max_ops; ++n) {
    const auto& op = t.ops[critical[n]];
    ops.push_back({{"name", t.names[static_cast<std::size_t>(op.name)]},
                   {"track", op.track},
                   {"start_ns", op.start_ns},
                   {"end_ns", op.end_ns}});
  }
  return {{"schema_version", "1.0"},
          {"notes", r.notes},
          {"path_ns", r.path_ns},
          {"busy_ns", r.busy_ns},
          {"makespan_ns", r.makespan_ns},
          {"segments", r.segments},
          {"tracks", tracks},
          {"kernels", kernels},
          {"edges", edges},
          {"critical_ops", ops},
          {"critical_ops_total", critical.size()}};
}

} // namespace rpl::stages::analysis
