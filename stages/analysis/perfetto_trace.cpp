#include "stages/analysis/perfetto_trace.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

namespace rpl::stages::analysis {

namespace {

using nlohmann::json;

/// Microseconds from `origin`, rounded to whole nanoseconds (the format's unit is the microsecond;
/// three decimals keep the nanosecond the traces record).
double microseconds(std::int64_t ns, std::int64_t origin) {
  return std::round(static_cast<double>(ns - origin)) / 1000.0;
}

/// The tid of a device's critical-path track: after every stream's.
constexpr int critical_track = 0;

} // namespace

json perfetto_trace(const std::vector<timeline_op>& ops, const std::vector<timeline_flow>& flows) {
  std::int64_t origin = std::numeric_limits<std::int64_t>::max();
  for (const auto& op : ops)
    origin = std::min(origin, op.start_ns);
  if (ops.empty())
    origin = 0;

  // Dense ids in first-seen order, so the same input gives the same document: pid per device, tid
  // per stream within it (tid 0 is the device's critical-path track).
  std::map<std::string, int> pids;
  std::vector<std::string> device_order;
  std::map<std::pair<int, std::string>, int> tids;
  std::vector<std::pair<int, std::string>> stream_order;
  std::vector<std::pair<int, int>> where(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    auto [pid_it, new_device] = pids.emplace(ops[i].device, static_cast<int>(pids.size()) + 1);
    if (new_device)
      device_order.push_back(ops[i].device);
    const int pid = pid_it->second;
    const auto key = std::make_pair(pid, ops[i].stream);
    auto [tid_it, new_stream] = tids.emplace(key, 0);
    if (new_stream) {
      tid_it->second =
          static_cast<int>(std::count_if(stream_order.begin(), stream_order.end(),
                                         [pid](const auto& s) { return s.first == pid; })) +
          1;
      stream_order.push_back(key);
    }
    where[i] = {pid, tid_it->second};
  }

  json events = json::array();
  std::map<int, bool> has_critical;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].critical)
      has_critical[where[i].first] = true;
  for (const auto& device : device_order) {
    const int pid = pids.at(device);
    events.push_back(
        {{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", device}}}});
    events.push_back({{"ph", "M"},
                      {"name", "process_sort_index"},
                      {"pid", pid},
                      {"args", {{"sort_index", pid}}}});
    if (has_critical.count(pid)) {
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", pid},
                        {"tid", critical_track},
                        {"args", {{"name", "critical path"}}}});
      events.push_back({{"ph", "M"},
                        {"name", "thread_sort_index"},
                        {"pid", pid},
                        {"tid", critical_track},
                        {"args", {{"sort_index", 0}}}});
    }
  }
  for (const auto& key : stream_order) {
    const int tid = tids.at(key);
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", key.first},
                      {"tid", tid},
                      {"args", {{"name", key.second}}}});
    events.push_back({{"ph", "M"},
                      {"name", "thread_sort_index"},
                      {"pid", key.first},
                      {"tid", tid},
                      {"args", {{"sort_index", tid}}}});
  }

  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    json args = op.args.is_object() ? op.args : json::object();
    args["critical"] = op.critical ? 1 : 0;
    if (op.slack_ns)
      args["slack_us"] = static_cast<double>(*op.slack_ns) / 1000.0;
    json slice = {{"ph", "X"},
                  {"name", op.name},
                  {"cat", op.critical ? op.category + ",critical_path" : op.category},
                  {"pid", where[i].first},
                  {"tid", where[i].second},
                  {"ts", microseconds(op.start_ns, origin)},
                  {"dur", microseconds(std::max(op.end_ns, op.start_ns), op.start_ns)},
                  {"args", args}};
    events.push_back(slice);
    if (op.critical) {
      slice["tid"] = critical_track;
      slice["args"]["stream"] = op.stream;
      events.push_back(std::move(slice));
    }
  }

  // Flow arrows: "s" inside the end of the op waited for, "f" (binding to the enclosing slice)
  // at the start of the op that waited.
  int flow_id = 0;
  std::size_t skipped = 0;
  for (const auto& flow : flows) {
    // A wait that ends before what it waited for (clock skew, a wrong edge) has no arrow a viewer
    // can draw: counted, not written.
    if (flow.from >= ops.size() || flow.to >= ops.size() || flow.from == flow.to ||
        std::max(ops[flow.from].start_ns, ops[flow.from].end_ns - 1) > ops[flow.to].end_ns) {
      ++skipped;
      continue;
    }
    const auto& from = ops[flow.from];
    const auto& to = ops[flow.to];
    ++flow_id;
    const std::int64_t out_ns = std::max(from.start_ns, from.end_ns - 1);
    const std::int64_t in_ns = std::max(to.start_ns, out_ns);
    events.push_back({{"ph", "s"},
                      {"name", flow.kind},
                      {"cat", "sync"},
                      {"id", flow_id},
                      {"pid", where[flow.from].first},
                      {"tid", where[flow.from].second},
                      {"ts", microseconds(out_ns, origin)}});
    events.push_back({{"ph", "f"},
                      {"bp", "e"},
                      {"name", flow.kind},
                      {"cat", "sync"},
                      {"id", flow_id},
                      {"pid", where[flow.to].first},
                      {"tid", where[flow.to].second},
                      {"ts", microseconds(in_ns, origin)}});
  }

  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ns"},
          {"otherData",
           {{"producer", "rocm-perf"}, {"origin_ns", origin}, {"skipped_flows", skipped}}}};
}

} // namespace rpl::stages::analysis
