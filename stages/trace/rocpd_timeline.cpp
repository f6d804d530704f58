#include "stages/trace/rocpd_timeline.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

#include "stages/sqlite/sqlite_statement.hpp"

namespace rpl::stages::rocpd {

namespace {

/// The synchronization calls by name, CUDA runtime and driver, and HIP.
std::optional<sync_kind> kind_of(const std::string& name) {
  static const std::map<std::string, sync_kind> names = {
      {"cudaStreamWaitEvent", sync_kind::stream_wait_event},
      {"cuStreamWaitEvent", sync_kind::stream_wait_event},
      {"hipStreamWaitEvent", sync_kind::stream_wait_event},
      {"cudaStreamSynchronize", sync_kind::stream_synchronize},
      {"cuStreamSynchronize", sync_kind::stream_synchronize},
      {"hipStreamSynchronize", sync_kind::stream_synchronize},
      {"cudaDeviceSynchronize", sync_kind::device_synchronize},
      {"cudaThreadSynchronize", sync_kind::device_synchronize},
      {"cuCtxSynchronize", sync_kind::device_synchronize},
      {"hipDeviceSynchronize", sync_kind::device_synchronize},
      {"cudaEventSynchronize", sync_kind::event_synchronize},
      {"cuEventSynchronize", sync_kind::event_synchronize},
      {"hipEventSynchronize", sync_kind::event_synchronize},
      {"cudaEventRecord", sync_kind::event_record},
      {"cudaEventRecordWithFlags", sync_kind::event_record},
      {"cuEventRecord", sync_kind::event_record},
      {"cuEventRecordWithFlags", sync_kind::event_record},
      {"hipEventRecord", sync_kind::event_record},
      {"hipEventRecordWithFlags", sync_kind::event_record},
  };
  const auto it = names.find(name);
  if (it == names.end())
    return std::nullopt;
  return it->second;
}

/// Names to indices. Consecutive rows mostly repeat a few names, handed out from the same storage
/// (the reader's symbol table), so a slot chosen by the text's address finds the index without
/// hashing or copying it; the text is still compared, so a slot that now holds another name is
/// only a miss.
class interner {
public:
  explicit interner(std::vector<std::string>& names) : names_(names) {}
  std::int32_t operator()(std::string_view name) {
    // Fibonacci hashing of the address: names allocated side by side land in different slots.
    const auto address = reinterpret_cast<std::uintptr_t>(name.data());
    slot& s = slots_[(address * 0x9E3779B97F4A7C15ull) >> 56];
    if (s.data == name.data() && s.index >= 0 && names_[static_cast<std::size_t>(s.index)] == name)
      return s.index;
    auto it = index_.find(name);
    if (it == index_.end()) {
      it = index_.emplace(std::string(name), static_cast<std::int32_t>(names_.size())).first;
      names_.emplace_back(name);
    }
    s = {name.data(), it->second};
    return it->second;
  }

private:
  struct text_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const {
      return std::hash<std::string_view>{}(text);
    }
  };
  struct slot {
    const char* data = nullptr;
    std::int32_t index = -1;
  };
  std::vector<std::string>& names_;
  std::unordered_map<std::string, std::int32_t, text_hash, std::equal_to<>> index_;
  std::array<slot, 256> slots_{};
};

std::optional<std::int64_t> integer_field(const nlohmann::json& object, const char* key) {
  if (object.is_object() && object.contains(key) && object[key].is_number_integer())
    return object[key].get<std::int64_t>();
  return std::nullopt;
}

/// The `stream` and `event` arguments of one API call (rocpd_arg, values as text, as rocprofv3
/// writes them for HIP).
struct call_arguments {
  std::string stream; ///< the handle as text
  std::optional<std::int64_t> stream_id;
  std::string event;
};

/// The arguments of API calls by their event id, without an index on rocpd_arg.event_id (AMD's
/// schema has none unless rocpd_indexes.sql was applied) and without reading the whole table
/// (several rows per HIP call: millions in a large trace). rocprofv3 writes a call's arguments
/// right after its event, so rocpd_arg's ids grow with event_id: a binary search over the row ids
/// finds a call's rows. Only rows whose event_id matches are taken, so a table in another order
/// cannot give wrong arguments; a call found without rows falls back to one filtered scan.
class argument_lookup {
public:
  argument_lookup(sqlite::connection& db, const std::string& sfx)
      : at_(db, "SELECT id, event_id FROM rocpd_arg" + sfx + " WHERE id >= ? ORDER BY id LIMIT 1"),
        rows_(db,
              "SELECT event_id, name, value, extdata, id FROM rocpd_arg" + sfx +
                  " WHERE id >= ? ORDER BY id LIMIT 32"),
        db_(db), sfx_(sfx) {
    // One aggregate per query: SQLite answers a lone MIN or MAX of the rowid from the b-tree's
    // ends, but reads the whole table for the pair.
    sqlite::statement bounds(db, "SELECT (SELECT MIN(id) FROM rocpd_arg" + sfx +
                                     "), (SELECT MAX(id) FROM rocpd_arg" + sfx + ")");
    if (bounds.step() && !bounds.column_is_null(0)) {
      first_ = bounds.column_int64(0);
      last_ = bounds.column_int64(1);
    }
  }

  bool empty() const { return last_ < first_; }

  /// The `stream` and `event` arguments of the call whose event is `event_id`; nullopt when the
  /// search found no rows of that event. Calls asked for in event order (as the regions are read)
  /// are found by galloping forward from the previous call's rows, which touches a few pages
  /// near them; any other call by bisecting the whole table.
  std::optional<call_arguments> find(std::int64_t event_id) {
    if (empty())
      return std::nullopt;
    // [lo, hi): the first row whose event_id is >= event_id lies in it, assuming the order.
    std::int64_t lo = first_, hi = last_ + 1;
    if (hint_ && hint_->second < event_id) {
      lo = hint_->first + 1;
      for (std::int64_t step = 1; lo < hi; step *= 2) {
        const auto row = row_at(std::min(lo + step, last_));
        if (!row || row->second >= event_id) {
          hi = row ? row->first : hi;
          break;
        }
        lo = row->first + 1;
        if (row->first == last_)
          break;
      }
    }
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      const auto row = row_at(mid);
      if (!row || row->second >= event_id) {
        hi = mid;
      } else {
        lo = row->first + 1;
      }
    }
    std::optional<call_arguments> out;
    rows_.reset();
    rows_.bind_int64(1, lo);
    while (rows_.step() && rows_.column_int64(0) == event_id) {
      if (!out)
        out.emplace();
      hint_.emplace(rows_.column_int64(4), event_id);
      add(*out, rows_.column_text(1), rows_.column_text(2), rows_.column_text(3));
    }
    return out;
  }

  /// The arguments of `events` by one scan of the table (the fallback).
  std::unordered_map<std::int64_t, call_arguments>
  scan(const std::unordered_set<std::int64_t>& events) {
    std::unordered_map<std::int64_t, call_arguments> out;
    if (events.empty() || empty())
      return out;
    sqlite::statement all(db_, "SELECT event_id, name, value, extdata FROM rocpd_arg" + sfx_ +
                                   " WHERE name IN ('stream', 'event')");
    while (all.step())
      if (events.count(all.column_int64(0)) != 0)
        add(out[all.column_int64(0)], all.column_text(1), all.column_text(2), all.column_text(3));
    return out;
  }

private:
  /// (id, event_id) of the first row with id >= `id`.
  std::optional<std::pair<std::int64_t, std::int64_t>> row_at(std::int64_t id) {
    at_.reset();
    at_.bind_int64(1, id);
    if (!at_.step())
      return std::nullopt;
    return std::make_pair(at_.column_int64(0), at_.column_int64(1));
  }

  static void
  add(call_arguments& a, const std::string& name, std::string value, const std::string& extdata) {
    if (name == "event") {
      a.event = std::move(value);
    } else if (name == "stream") {
      a.stream = std::move(value);
      a.stream_id = integer_field(
          nlohmann::json::parse(extdata, nullptr, /*allow_exceptions=*/false), "stream_id");
    }
  }

  sqlite::statement at_, rows_;
  sqlite::connection& db_;
  std::string sfx_;
  std::int64_t first_ = 1, last_ = 0;
  std::optional<std::pair<std::int64_t, std::int64_t>> hint_; ///< (row id, event id) last found
};

/// `table` (rocpd_kernel_dispatch or rocpd_memory_copy) as O, joined to the API call that enqueued
/// each op as R: an op's event shares the internal correlation id (stack_id) of its call, which is
/// the call's region id.
std::string ops_with_their_calls(const char* table, const std::string& sfx) {
  return std::string(table) + sfx + " O JOIN rocpd_event" + sfx +
         " E ON E.id = O.event_id JOIN rocpd_region" + sfx + " R ON R.id = E.stack_id";
}

/// Stream handles (as the `stream` arguments print them) to rocpd stream ids: the dispatches
/// (then copies) in order, and for the first op of each stream, the API call that launched it (a
/// dispatch's event shares the internal correlation id, stack_id, of its call, which is the
/// call's region id) and that call's `stream` argument. Stops once every handle in `wanted` is
/// known, so a trace reads a few rows per stream; a stream without ops is not looked for.
std::unordered_map<std::string, std::int64_t>
stream_handles(sqlite::connection& db,
               const std::string& sfx,
               argument_lookup& args,
               const std::unordered_set<std::string>& wanted) {
  std::unordered_map<std::string, std::int64_t> out;
  std::unordered_map<std::int64_t, int> tries; // per stream; 4 ops without arguments give up
  std::size_t resolved = 0;
  for (const char* table : {"rocpd_kernel_dispatch", "rocpd_memory_copy"}) {
    sqlite::statement ops(db, "SELECT O.stream_id, R.event_id FROM " +
                                  ops_with_their_calls(table, sfx) + " ORDER BY O.id");
    while (resolved < wanted.size() && ops.step()) {
      const std::int64_t stream = ops.column_int64(0);
      int& tried = tries[stream];
      if (tried >= 4)
        continue;
      const auto a = args.find(ops.column_int64(1));
      if (!a || a->stream.empty()) {
        ++tried; // the next op of this stream may have its arguments
        continue;
      }
      tried = 4;
      if (out.emplace(a->stream, stream).second && wanted.count(a->stream) != 0)
        ++resolved;
    }
  }
  return out;
}

/// The synchronization regions of one database (one uuid suffix), with their stream and event
/// from the tracer's extdata or the call's arguments.
void read_synchronization(sqlite::connection& db,
                          const std::string& sfx,
                          std::size_t database,
                          std::vector<sync_row>& syncs) {
  // The names of the synchronization calls: a few rows of the string table, so that the region
  // table (one row per API call, no index on name_id) is read once with an integer filter rather
  // than joined row by row to its name.
  std::unordered_map<std::int64_t, sync_kind> kinds;
  std::string ids;
  {
    sqlite::statement names(db, "SELECT id, string FROM rocpd_string" + sfx +
                                    " WHERE string LIKE '%Synchronize' OR string LIKE "
                                    "'%WaitEvent' OR string LIKE '%EventRecord%'");
    while (names.step()) {
      const auto kind = kind_of(std::string(names.column_text_view(1)));
      if (!kind || !kinds.emplace(names.column_int64(0), *kind).second)
        continue;
      ids += (ids.empty() ? "" : ", ") + std::to_string(names.column_int64(0));
    }
  }
  if (kinds.empty())
    return;
  sqlite::statement regions(db, "SELECT R.pid, R.start, R.\"end\", R.name_id, E.extdata, "
                                "R.event_id FROM rocpd_region" +
                                    sfx + " R LEFT JOIN rocpd_event" + sfx +
                                    " E ON E.id = R.event_id WHERE R.name_id IN (" + ids + ")");
  std::vector<std::pair<std::size_t, std::int64_t>> need_args; // (sync index, event id)
  while (regions.step()) {
    const auto kind = kinds.find(regions.column_int64(3));
    if (kind == kinds.end())
      continue;
    sync_row sync;
    sync.kind = kind->second;
    sync.pid = regions.column_int64(0);
    sync.start_ns = regions.column_int64(1);
    sync.end_ns = regions.column_int64(2);
    sync.database = database;
    const auto extdata =
        nlohmann::json::parse(regions.column_text(4), nullptr, /*allow_exceptions=*/false);
    if (const auto stream = integer_field(extdata, "stream_id")) {
      // The CUPTI tracer's record of the call (cupti_mapping.hpp).
      sync.stream_id = *stream;
      sync.from_tracer_record = true;
      if (const auto event = integer_field(extdata, "event_id"))
        sync.event = "cuda:" + std::to_string(*event);
      sync.event_sync_id = integer_field(extdata, "event_sync_id").value_or(-1);
      sync.device_ns = integer_field(extdata, "device_timestamp").value_or(-1);
    } else if (sync.kind == sync_kind::stream_wait_event || sync.kind == sync_kind::event_record) {
      need_args.emplace_back(syncs.size(), regions.column_int64(5));
    }
    syncs.push_back(std::move(sync));
  }
  if (need_args.empty())
    return;
  // The HIP calls' arguments (rocpd_arg).
  argument_lookup args(db, sfx);
  if (args.empty())
    return;
  std::vector<std::optional<call_arguments>> found(need_args.size());
  std::unordered_set<std::int64_t> missing;
  for (std::size_t i = 0; i < need_args.size(); ++i) {
    found[i] = args.find(need_args[i].second);
    if (!found[i])
      missing.insert(need_args[i].second);
  }
  if (!missing.empty()) {
    auto scanned = args.scan(missing);
    for (std::size_t i = 0; i < need_args.size(); ++i)
      if (!found[i])
        if (auto it = scanned.find(need_args[i].second); it != scanned.end())
          found[i] = std::move(it->second);
  }
  std::unordered_set<std::string> wanted; // handles to resolve to stream ids
  for (std::size_t i = 0; i < need_args.size(); ++i) {
    if (!found[i])
      continue;
    sync_row& sync = syncs[need_args[i].first];
    sync.event = found[i]->event;
    if (found[i]->stream_id) {
      sync.stream_id = *found[i]->stream_id;
    } else if (!found[i]->stream.empty()) {
      wanted.insert(found[i]->stream);
    }
  }
  if (wanted.empty())
    return;
  const auto handles = stream_handles(db, sfx, args, wanted);
  for (std::size_t i = 0; i < need_args.size(); ++i)
    if (found[i] && !found[i]->stream_id)
      if (const auto h = handles.find(found[i]->stream); h != handles.end())
        syncs[need_args[i].first].stream_id = h->second;
}

/// Sets sync_row::op (and ordered) for the event records and stream waits of one table suffix in
/// [first_sync, last_sync): each stream's ops, in start order (its enqueue order; `by_start` is
/// ops_by_start of `out`), are bisected by the start of the API call that enqueued them, looked up
/// per probe and cached.
void place_in_stream_order(sqlite::connection& db,
                           const std::string& sfx,
                           std::size_t database,
                           std::uint16_t source,
                           timeline& out,
                           std::size_t first_sync,
                           std::size_t last_sync,
                           const std::vector<std::uint32_t>& by_start) {
  using stream_key = std::pair<std::int64_t, std::int64_t>; // pid, stream
  std::map<stream_key, std::vector<std::uint32_t>> streams;
  for (std::size_t i = first_sync; i < last_sync; ++i) {
    const sync_row& s = out.syncs[i];
    if ((s.kind == sync_kind::event_record || s.kind == sync_kind::stream_wait_event) &&
        s.stream_id >= 0)
      streams.try_emplace({s.pid, s.stream_id});
  }
  if (streams.empty())
    return;
  // Each track is one stream of one file: its list, or none.
  std::vector<std::vector<std::uint32_t>*> list_of(out.tracks.size(), nullptr);
  for (std::size_t k = 0; k < out.tracks.size(); ++k)
    if (const timeline_track& track = out.tracks[k]; track.database == database)
      if (const auto it = streams.find({track.pid, track.stream_id}); it != streams.end())
        list_of[k] = &it->second;
  for (const std::uint32_t i : by_start) {
    const timeline_row& op = out.ops[i];
    if (auto* list = list_of[static_cast<std::size_t>(op.track)]; list && op.source == source)
      list->push_back(i);
  }
  auto call_query = [&](const char* table) {
    return sqlite::statement(db, "SELECT R.start FROM " + ops_with_their_calls(table, sfx) +
                                     " WHERE O.id = ?");
  };
  sqlite::statement dispatch_call = call_query("rocpd_kernel_dispatch");
  sqlite::statement copy_call = call_query("rocpd_memory_copy");
  std::unordered_map<std::uint32_t, std::int64_t> calls; // op -> call start; -1: not linked
  auto call_of = [&](std::uint32_t op) {
    const auto [it, added] = calls.try_emplace(op, -1);
    if (added) {
      sqlite::statement& q = out.ops[op].copy ? copy_call : dispatch_call;
      q.reset();
      q.bind_int64(1, out.ops[op].row_id);
      if (q.step())
        it->second = q.column_int64(0);
    }
    return it->second;
  };
  for (std::size_t i = first_sync; i < last_sync; ++i) {
    sync_row& s = out.syncs[i];
    if ((s.kind != sync_kind::event_record && s.kind != sync_kind::stream_wait_event) ||
        s.stream_id < 0)
      continue;
    const auto& ops = streams[{s.pid, s.stream_id}];
    // The first op enqueued after the call.
    std::size_t lo = 0, hi = ops.size();
    bool linked = true;
    while (lo < hi && linked) {
      const std::size_t mid = lo + (hi - lo) / 2;
      const std::int64_t call = call_of(ops[mid]);
      if (call < 0)
        linked = false;
      else if (call > s.start_ns)
        hi = mid;
      else
        lo = mid + 1;
    }
    if (!linked)
      continue;
    s.ordered = true;
    if (s.kind == sync_kind::event_record)
      s.op = lo > 0 ? static_cast<std::int64_t>(ops[lo - 1]) : -1;
    else
      s.op = lo < ops.size() ? static_cast<std::int64_t>(ops[lo]) : -1;
  }
}

} // namespace

/// What a timeline reads beside the dispatches: every file's copies (names not yet interned) and
/// synchronization, with the connections that read them.
struct side_tables {
  struct copy {
    std::size_t database = 0;
    std::uint16_t source = 0;
    std::int64_t pid = 0, start_ns = 0, end_ns = 0;
    std::string name;
    std::int64_t agent_id = 0, stream_id = 0, row_id = 0;
  };
  /// The syncs of one file and suffix, [first_sync, last_sync): placed in stream order once
  /// every op is in.
  struct sync_range {
    std::size_t database = 0;
    std::uint16_t source = 0;
    std::size_t first_sync = 0, last_sync = 0;
  };
  bool read = false;
  std::vector<sqlite::connection> connections; ///< per file
  std::vector<copy> copies;                    ///< by file, suffix, then table order
  std::vector<sync_row> syncs;
  std::vector<sync_range> ranges;
};

struct timeline_builder::state {
  explicit state(const reader& f) : files(f), intern(out.names) {}

  const reader& files;
  timeline out;
  interner intern;
  side_tables side; ///< read_side_tables' only state: add() never touches it
  std::map<std::pair<std::size_t, std::int64_t>, std::string> device_name, stream_name;
  using track_key = std::tuple<std::size_t, std::int64_t, std::int64_t, std::int64_t>;
  std::map<track_key, std::int32_t> tracks;
  /// The last tracks found: consecutive dispatches cycle through a few streams.
  std::array<std::pair<track_key, std::int32_t>, 8> recent{};
  std::size_t recent_used = 0, next_victim = 0;

  std::int32_t
  track_of(std::size_t database, std::int64_t pid, std::int64_t agent, std::int64_t stream) {
    const track_key key{database, pid, agent, stream};
    for (std::size_t i = 0; i < recent_used; ++i)
      if (recent[i].first == key)
        return recent[i].second;
    auto it = tracks.find(key);
    if (it == tracks.end()) {
      timeline_track t{database, pid, agent, stream, ""};
      const auto d = device_name.find({database, agent});
      const auto s = stream_name.find({database, stream});
      t.name = (d != device_name.end() ? d->second : "agent " + std::to_string(agent)) + " / " +
               (s != stream_name.end() ? s->second : "stream " + std::to_string(stream));
      if (files.paths().size() > 1)
        t.name = files.paths()[database].filename().string() + ": " + t.name;
      it = tracks.emplace(key, static_cast<std::int32_t>(out.tracks.size())).first;
      out.tracks.push_back(std::move(t));
    }
    const std::size_t slot = recent_used < recent.size() ? recent_used++ : next_victim++ % 8;
    recent[slot] = {key, it->second};
    return it->second;
  }
};

timeline_builder::timeline_builder(const reader& files) : state_(std::make_unique<state>(files)) {
  for (const auto& agent : files.agents())
    state_->device_name[{agent.database, agent.id}] =
        agent.type == "GPU" ? "GPU " + std::to_string(agent.logical_index) + " (" + agent.name + ")"
                            : agent.type + " " + std::to_string(agent.logical_index);
  for (const auto& stream : files.streams())
    state_->stream_name[{stream.database, stream.id}] = stream.name;
}
timeline_builder::timeline_builder(timeline_builder&&) noexcept = default;
timeline_builder& timeline_builder::operator=(timeline_builder&&) noexcept = default;
timeline_builder::~timeline_builder() = default;

void timeline_builder::add(const dispatch_row& row) {
  state& st = *state_;
  st.out.ops.push_back({row.start_ns, row.end_ns, st.intern(row.kernel_name),
                        st.track_of(row.database, row.pid, row.agent_id, row.stream_id), false,
                        static_cast<std::uint16_t>(row.source), row.row_id});
}

void timeline_builder::read_side_tables() {
  state& st = *state_;
  side_tables& side = st.side;
  if (side.read)
    return;
  side = side_tables{};
  const reader& files = st.files;
  for (std::size_t database = 0; database < files.databases().size(); ++database) {
    const database_info& info = files.databases()[database];
    try {
      // One thread at a time uses these: the side thread, then finish() after it is joined.
      side.connections.emplace_back(info.path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX);
      sqlite::connection& db = side.connections.back();
      for (std::size_t u = 0; u < info.uuids.size(); ++u) {
        const std::string& sfx = info.uuids[u];
        const auto source = static_cast<std::uint16_t>(u);
        // Copies: on the destination GPU's track (the source's for device-to-host copies).
        sqlite::statement copies(
            db, "SELECT M.pid, M.start, M.\"end\", S.string, M.src_agent_id, M.dst_agent_id, "
                "COALESCE(M.stream_id, 0), A.type, M.id FROM rocpd_memory_copy" +
                    sfx + " M JOIN rocpd_string" + sfx +
                    " S ON S.id = M.name_id LEFT JOIN rocpd_info_agent" + sfx +
                    " A ON A.id = M.dst_agent_id");
        while (copies.step()) {
          const bool to_gpu = copies.column_text_view(7) == "GPU";
          side.copies.push_back({database, source, copies.column_int64(0), copies.column_int64(1),
                                 copies.column_int64(2), copies.column_text(3),
                                 to_gpu ? copies.column_int64(5) : copies.column_int64(4),
                                 copies.column_int64(6), copies.column_int64(8)});
        }
        const std::size_t first_sync = side.syncs.size();
        read_synchronization(db, sfx, database, side.syncs);
        side.ranges.push_back({database, source, first_sync, side.syncs.size()});
      }
    } catch (const sqlite::sqlite_error& error) {
      throw rocpd_error(info.path.string() + ": cannot read its copies or synchronization (" +
                        error.what() + "); fix: check that the file is a complete rocpd database");
    }
  }
  side.read = true;
}

timeline timeline_builder::finish() {
  read_side_tables();
  state& st = *state_;
  timeline& out = st.out;
  side_tables& side = st.side;
  for (const auto& c : side.copies)
    out.ops.push_back({c.start_ns, c.end_ns, st.intern(c.name),
                       st.track_of(c.database, c.pid, c.agent_id, c.stream_id), true, c.source,
                       c.row_id});
  out.syncs = std::move(side.syncs);
  out.by_start = ops_by_start(out);
  for (const auto& p : side.ranges) {
    const database_info& info = st.files.databases()[p.database];
    try {
      place_in_stream_order(side.connections[p.database], info.uuids[p.source], p.database,
                            p.source, out, p.first_sync, p.last_sync, out.by_start);
    } catch (const sqlite::sqlite_error& error) {
      throw rocpd_error(info.path.string() + ": cannot read its copies or synchronization (" +
                        error.what() + "); fix: check that the file is a complete rocpd database");
    }
  }
  return std::move(out);
}

timeline read_timeline(const reader& files) {
  timeline_builder builder(files);
  // No reserve from COUNT(*): that is one more pass over the dispatch table.
  files.for_each_dispatch([&](const dispatch_row& row) { builder.add(row); },
                          dispatch_fields::accounting);
  return builder.finish();
}

std::vector<std::uint32_t> ops_by_start(const timeline& t) {
  const std::size_t n = t.ops.size();
  if (t.by_start.size() == n && n > 0)
    return t.by_start;
  std::vector<std::uint32_t> order(n), spare(n);
  if (n == 0)
    return order;
  // Keys relative to the earliest start (the sign bit flipped, so negative times order too): a
  // trace spans seconds, so three or four 11-bit digits cover it.
  std::vector<std::uint64_t> keys(n), spare_keys(n);
  std::uint64_t lo = UINT64_MAX, hi = 0;
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = static_cast<std::uint64_t>(t.ops[i].start_ns) ^ (std::uint64_t{1} << 63);
    lo = std::min(lo, keys[i]);
    hi = std::max(hi, keys[i]);
    order[i] = static_cast<std::uint32_t>(i);
  }
  for (auto& key : keys)
    key -= lo;
  constexpr int digit_bits = 11;
  constexpr std::size_t buckets = std::size_t{1} << digit_bits;
  for (int shift = 0; shift < 64 && ((hi - lo) >> shift) != 0; shift += digit_bits) {
    std::array<std::size_t, buckets> offset{};
    for (const std::uint64_t key : keys)
      ++offset[(key >> shift) & (buckets - 1)];
    std::size_t sum = 0;
    for (auto& o : offset)
      sum += std::exchange(o, sum);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t to = offset[(keys[i] >> shift) & (buckets - 1)]++;
      spare[to] = order[i];
      spare_keys[to] = keys[i];
    }
    order.swap(spare);
    keys.swap(spare_keys);
  }
  return order;
}

} // namespace rpl::stages::rocpd
