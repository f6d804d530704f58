#include "stages/trace/rocpd_timeline.hpp"

#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

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
  };
  const auto it = names.find(name);
  if (it == names.end())
    return std::nullopt;
  return it->second;
}

class interner {
public:
  explicit interner(std::vector<std::string>& names) : names_(names) {}
  std::int32_t operator()(std::string_view name) {
    auto it = index_.find(std::string(name));
    if (it == index_.end()) {
      it = index_.emplace(std::string(name), static_cast<std::int32_t>(names_.size())).first;
      names_.emplace_back(name);
    }
    return it->second;
  }

private:
  std::vector<std::string>& names_;
  std::unordered_map<std::string, std::int32_t> index_;
};

} // namespace

timeline read_timeline(const reader& files) {
  timeline out;
  interner intern(out.names);
  std::map<std::pair<std::size_t, std::int64_t>, std::string> device_name, stream_name;
  for (const auto& agent : files.agents())
    device_name[{agent.database, agent.id}] =
        agent.type == "GPU" ? "GPU " + std::to_string(agent.logical_index) + " (" + agent.name + ")"
                            : agent.type + " " + std::to_string(agent.logical_index);
  for (const auto& stream : files.streams())
    stream_name[{stream.database, stream.id}] = stream.name;
  std::map<std::tuple<std::size_t, std::int64_t, std::int64_t, std::int64_t>, std::int32_t> tracks;
  auto track_of = [&](std::size_t database, std::int64_t pid, std::int64_t agent,
                      std::int64_t stream) {
    const auto key = std::make_tuple(database, pid, agent, stream);
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
    return it->second;
  };

  out.ops.reserve(files.dispatch_count());
  files.for_each_dispatch(
      [&](const dispatch_row& row) {
        out.ops.push_back({row.start_ns, row.end_ns, intern(row.kernel_name),
                           track_of(row.database, row.pid, row.agent_id, row.stream_id), false});
      },
      dispatch_fields::accounting);

  for (std::size_t database = 0; database < files.databases().size(); ++database) {
    const database_info& info = files.databases()[database];
    try {
      sqlite::connection db(info.path, SQLITE_OPEN_READONLY);
      for (const auto& sfx : info.uuids) {
        // Copies: on the destination GPU's track (the source's for device-to-host copies).
        sqlite::statement copies(
            db, "SELECT M.pid, M.start, M.\"end\", S.string, M.src_agent_id, M.dst_agent_id, "
                "COALESCE(M.stream_id, 0), A.type FROM rocpd_memory_copy" +
                    sfx + " M JOIN rocpd_string" + sfx +
                    " S ON S.id = M.name_id LEFT JOIN rocpd_info_agent" + sfx +
                    " A ON A.id = M.dst_agent_id");
        while (copies.step()) {
          const bool to_gpu = copies.column_text(7) == "GPU";
          const std::int64_t agent = to_gpu ? copies.column_int64(5) : copies.column_int64(4);
          out.ops.push_back(
              {copies.column_int64(1), copies.column_int64(2), intern(copies.column_text(3)),
               track_of(database, copies.column_int64(0), agent, copies.column_int64(6)), true});
        }
        sqlite::statement regions(
            db, "SELECT R.pid, R.start, R.\"end\", S.string, E.extdata FROM rocpd_region" + sfx +
                    " R JOIN rocpd_string" + sfx + " S ON S.id = R.name_id LEFT JOIN rocpd_event" +
                    sfx +
                    " E ON E.id = R.event_id WHERE S.string LIKE '%Synchronize' OR S.string "
                    "LIKE '%WaitEvent'");
        while (regions.step()) {
          const auto kind = kind_of(std::string(regions.column_text(3)));
          if (!kind)
            continue;
          sync_row sync;
          sync.kind = *kind;
          sync.pid = regions.column_int64(0);
          sync.start_ns = regions.column_int64(1);
          sync.end_ns = regions.column_int64(2);
          sync.database = database;
          const auto extdata =
              nlohmann::json::parse(regions.column_text(4), nullptr, /*allow_exceptions=*/false);
          if (extdata.is_object() && extdata.contains("stream_id") &&
              extdata["stream_id"].is_number_integer()) {
            sync.stream_id = extdata["stream_id"].get<std::int64_t>();
            sync.from_tracer_record = true;
          }
          out.syncs.push_back(sync);
        }
      }
    } catch (const sqlite::sqlite_error& error) {
      throw rocpd_error(info.path.string() + ": cannot read its copies or synchronization (" +
                        error.what() + "); fix: check that the file is a complete rocpd database");
    }
  }
  return out;
}

} // namespace rpl::stages::rocpd
