#include "stages/analysis/timeline_dag.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>

namespace rpl::stages::analysis {

namespace {

using rocpd::sync_kind;
using rocpd::timeline;
constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

/// The DAG in arrays: ops in start order, each with at most one stream predecessor and any number
/// of wait predecessors, and its segment.
struct dag {
  std::vector<std::uint32_t> order;       ///< op indices by (start, end, index)
  std::vector<std::uint32_t> stream_pred; ///< per op; none for the first of its stream/segment
  std::vector<std::uint32_t> stream_next; ///< per op
  std::vector<std::vector<std::uint32_t>> wait_pred; ///< per op (few have any)
  std::vector<std::vector<std::uint32_t>> wait_next;
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
  std::map<std::pair<process_key, std::size_t>, std::uint32_t> segment_ids;
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    const auto& track = t.tracks[static_cast<std::size_t>(t.ops[i].track)];
    const process_key p{track.database, track.pid};
    const auto c = cuts.find(p);
    const std::size_t k =
        c == cuts.end()
            ? 0
            : static_cast<std::size_t>(
                  std::upper_bound(c->second.begin(), c->second.end(), t.ops[i].start_ns) -
                  c->second.begin());
    const auto [it, added] =
        segment_ids.emplace(std::make_pair(p, k), static_cast<std::uint32_t>(segment_ids.size()));
    g.segment[i] = it->second;
  }
  g.segments = segment_ids.size();
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

/// Stream waits: the waiting stream's first op after the call depends on the last op that the
/// recording stream of the event had finished when the event was recorded; without the record,
/// on the op of another stream of the process that ended last before the waiter started.
void link_stream_waits(const timeline& t, dag& g, link_counts& counts) {
  using stream_key = std::tuple<std::size_t, std::int64_t, std::int64_t>; // database, pid, stream
  std::map<stream_key, std::vector<std::uint32_t>> by_stream;             // ops in start order
  std::map<stream_key, std::vector<std::uint32_t>> stream_by_end;
  std::map<process_key, std::vector<std::uint32_t>> by_end; // per process, by end
  for (const std::uint32_t i : g.order) {
    const auto& track = t.tracks[static_cast<std::size_t>(t.ops[i].track)];
    by_stream[{track.database, track.pid, track.stream_id}].push_back(i);
    stream_by_end[{track.database, track.pid, track.stream_id}].push_back(i);
    by_end[{track.database, track.pid}].push_back(i);
  }
  const auto by_end_time = [&](std::uint32_t a, std::uint32_t b) {
    return std::tie(t.ops[a].end_ns, a) < std::tie(t.ops[b].end_ns, b);
  };
  for (auto& [key, ops] : by_end)
    std::sort(ops.begin(), ops.end(), by_end_time);
  for (auto& [key, ops] : stream_by_end)
    std::sort(ops.begin(), ops.end(), by_end_time);

  // Event records with their stream: by record instance, and per event in call order.
  using event_key = std::tuple<std::size_t, std::int64_t, std::string>; // database, pid, event
  std::map<std::tuple<std::size_t, std::int64_t, std::int64_t>, const rocpd::sync_row*> by_sync_id;
  std::map<event_key, std::vector<const rocpd::sync_row*>> records;
  for (const auto& s : t.syncs) {
    if (s.kind != sync_kind::event_record || s.stream_id < 0)
      continue;
    if (s.event_sync_id >= 0)
      by_sync_id[{s.database, s.pid, s.event_sync_id}] = &s;
    if (!s.event.empty())
      records[{s.database, s.pid, s.event}].push_back(&s);
  }
  for (auto& [key, list] : records)
    std::stable_sort(list.begin(), list.end(),
                     [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
  const auto record_of = [&](const rocpd::sync_row& wait) -> const rocpd::sync_row* {
    if (wait.event_sync_id >= 0) {
      const auto it = by_sync_id.find({wait.database, wait.pid, wait.event_sync_id});
      if (it != by_sync_id.end())
        return it->second;
    }
    if (wait.event.empty())
      return nullptr;
    const auto it = records.find({wait.database, wait.pid, wait.event});
    if (it == records.end())
      return nullptr;
    // The last record of the event called before the wait.
    const auto& list = it->second;
    auto r = std::upper_bound(list.begin(), list.end(), wait.start_ns,
                              [](std::int64_t v, const auto* rec) { return v < rec->start_ns; });
    return r == list.begin() ? nullptr : *std::prev(r);
  };

  for (const auto& s : t.syncs) {
    if (s.kind != sync_kind::stream_wait_event || s.stream_id < 0)
      continue;
    ++counts.waits;
    const auto stream = by_stream.find({s.database, s.pid, s.stream_id});
    if (stream == by_stream.end())
      continue;
    const auto& ops = stream->second;
    std::uint32_t waiter = none;
    if (s.ordered) {
      // The first op enqueued on the stream after the wait (what the wait holds back).
      if (s.op < 0)
        continue;
      waiter = static_cast<std::uint32_t>(s.op);
    } else {
      // Without the enqueue order: the first op that started after the call.
      const auto waiter_it =
          std::lower_bound(ops.begin(), ops.end(), s.start_ns,
                           [&](std::uint32_t i, std::int64_t v) { return t.ops[i].start_ns < v; });
      if (waiter_it == ops.end())
        continue;
      waiter = *waiter_it;
    }
    ++counts.placed_waits;
    std::uint32_t source = none;
    bool from_record = false;
    if (const rocpd::sync_row* record = record_of(s); record != nullptr && record->ordered) {
      // The last op enqueued on the recording stream before the record: what the event marks.
      // In an earlier segment, a host synchronization already ordered it: no edge.
      from_record = true;
      ++counts.by_order;
      if (record->op < 0 || static_cast<std::uint32_t>(record->op) == waiter) {
        ++counts.record_without_op;
        continue;
      }
      if (g.segment[static_cast<std::size_t>(record->op)] != g.segment[waiter]) {
        ++counts.record_across_cut;
        continue;
      }
      source = static_cast<std::uint32_t>(record->op);
    } else if (record != nullptr) {
      // The recording stream's last op that ended by the time the waiter started (and by the time
      // the GPU reached the record, when the tracer timed it).
      from_record = true;
      std::int64_t limit = t.ops[waiter].start_ns;
      if (record->device_ns >= 0)
        limit = std::min(limit, record->device_ns);
      const auto rec = stream_by_end.find({record->database, record->pid, record->stream_id});
      if (rec != stream_by_end.end()) {
        const auto& ends = rec->second;
        auto it = std::upper_bound(ends.begin(), ends.end(), limit,
                                   [&](std::int64_t v, auto i) { return v < t.ops[i].end_ns; });
        if (it != ends.begin() && g.segment[*std::prev(it)] == g.segment[waiter] &&
            *std::prev(it) != waiter)
          source = *std::prev(it);
      }
      if (source == none) {
        ++counts.record_without_op; // nothing recorded before it in this segment: no dependency
        continue;
      }
    } else {
      const auto& ends = by_end[{s.database, s.pid}];
      // The last op (of another stream, same segment) that ended at or before the waiter started.
      auto it =
          std::upper_bound(ends.begin(), ends.end(), t.ops[waiter].start_ns,
                           [&](std::int64_t v, std::uint32_t i) { return v < t.ops[i].end_ns; });
      while (it != ends.begin()) {
        --it;
        const std::uint32_t c = *it;
        if (t.ops[c].track != t.ops[waiter].track && g.segment[c] == g.segment[waiter]) {
          source = c;
          break;
        }
        if (g.segment[c] != g.segment[waiter] && t.ops[c].end_ns < t.ops[waiter].start_ns)
          break; // earlier segments cannot release it
      }
    }
    if (source == none || t.ops[source].track == t.ops[waiter].track ||
        std::find(g.wait_pred[waiter].begin(), g.wait_pred[waiter].end(), source) !=
            g.wait_pred[waiter].end())
      continue;
    g.wait_pred[waiter].push_back(source);
    g.wait_next[source].push_back(waiter);
    g.cross_edges.push_back({source, waiter, dag_edge_kind::stream_wait, from_record});
    ++counts.used;
    counts.by_record += from_record;
  }
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
  g.order.resize(n);
  std::iota(g.order.begin(), g.order.end(), 0u);
  std::sort(g.order.begin(), g.order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return std::tie(t.ops[a].start_ns, t.ops[a].end_ns, a) <
           std::tie(t.ops[b].start_ns, t.ops[b].end_ns, b);
  });
  g.stream_pred.assign(n, none);
  g.stream_next.assign(n, none);
  g.wait_pred.resize(n);
  g.wait_next.resize(n);
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

/// Replays the segments with `scaled` durations and returns the summed segment spans. An op waits
/// for the predecessor that released it (the one that ended last) plus the gap it left then (a
/// launch that came late stays late), and for every other predecessor's end.
double replay_span(const timeline& t, const dag& g, const std::vector<double>& scaled) {
  const std::size_t n = t.ops.size();
  std::vector<double> new_end(n, 0);
  std::vector<double> first(g.segments, std::numeric_limits<double>::max());
  std::vector<double> last(g.segments, std::numeric_limits<double>::lowest());
  for (const std::uint32_t i : g.order) {
    const double start = static_cast<double>(t.ops[i].start_ns);
    std::uint32_t release = g.stream_pred[i];
    for (const std::uint32_t p : g.wait_pred[i])
      if (release == none ||
          std::tie(t.ops[p].end_ns, p) > std::tie(t.ops[release].end_ns, release))
        release = p;
    double new_start = start;
    if (release != none) {
      new_start =
          new_end[release] + std::max(0.0, start - static_cast<double>(t.ops[release].end_ns));
      if (g.stream_pred[i] != none)
        new_start = std::max(new_start, new_end[g.stream_pred[i]]);
      for (const std::uint32_t p : g.wait_pred[i])
        new_start = std::max(new_start, new_end[p]);
    }
    new_end[i] = new_start + scaled[i];
    first[g.segment[i]] = std::min(first[g.segment[i]], new_start);
    last[g.segment[i]] = std::max(last[g.segment[i]], new_end[i]);
  }
  double span = 0;
  for (std::size_t s = 0; s < g.segments; ++s)
    if (last[s] >= first[s])
      span += last[s] - first[s];
  return span;
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
      for (const std::uint32_t p : g.wait_pred[i])
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
    for (const std::uint32_t next : g.wait_next[i])
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
    std::vector<double> original(n), scaled(n);
    for (std::uint32_t i = 0; i < n; ++i)
      original[i] = duration(t, i);
    const double before = replay_span(t, g, original);
    for (std::size_t k = 0; k < r.kernels.size() && k < what_if_top; ++k) {
      if (r.kernels[k].critical_path_ns <= 0)
        break;
      const auto target = static_cast<std::int32_t>(
          std::find(t.names.begin(), t.names.end(), r.kernels[k].name) - t.names.begin());
      for (const double pct : percents) {
        for (std::uint32_t i = 0; i < n; ++i)
          scaled[i] = t.ops[i].name == target ? original[i] * (1.0 - pct / 100.0) : original[i];
        r.kernels[k].what_if.emplace_back(pct, before - replay_span(t, g, scaled));
      }
    }
  }
  return r;
}

std::vector<std::vector<double>> what_if_savings(const timeline& t,
                                                 const std::vector<std::string>& names,
                                                 const std::vector<double>& percents) {
  const dag g = build(t);
  std::vector<double> original(t.ops.size());
  for (std::uint32_t i = 0; i < t.ops.size(); ++i)
    original[i] = duration(t, i);
  const double before = replay_span(t, g, original);
  std::vector<std::vector<double>> out;
  std::vector<double> scaled(t.ops.size());
  for (const auto& name : names) {
    const auto target = static_cast<std::int32_t>(std::find(t.names.begin(), t.names.end(), name) -
                                                  t.names.begin());
    out.emplace_back();
    for (const double pct : percents) {
      for (std::uint32_t i = 0; i < t.ops.size(); ++i)
        scaled[i] = t.ops[i].name == target ? original[i] * (1.0 - pct / 100.0) : original[i];
      out.back().push_back(before - replay_span(t, g, scaled));
    }
  }
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
