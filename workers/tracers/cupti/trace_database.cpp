#include "workers/tracers/cupti/trace_database.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

#include "stages/trace/rocpd_writer.hpp"
#include "workers/tracers/cupti/host_facts.hpp"

namespace rpl::workers::cupti_tracer {

namespace cupti = rpl::stages::cupti;
namespace rocpd = rpl::stages::rocpd;

void refresh_facts(cupti::cupti_trace& trace,
                   std::map<std::uint32_t, cupti::driver_device>& driver_cache) {
  for (auto& [tid, name] : read_thread_names(cupti::thread_ids(trace))) {
    trace.host.thread_names[tid] = std::move(name);
  }
  for (const std::uint32_t device : cupti::devices_used(trace)) {
    auto cached = driver_cache.find(device);
    if (cached == driver_cache.end() || !cached->second.available) {
      cached = driver_cache.insert_or_assign(device, read_driver_device(device)).first;
    }
    trace.driver_devices[device] = cached->second;
  }
}

std::filesystem::path write_database(const cupti::cupti_trace& trace,
                                     const std::filesystem::path& out_dir,
                                     const std::string& uuid,
                                     const rocpd::trace_completeness& completeness) {
  const std::filesystem::path dir = out_dir / trace.host.hostname;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw std::runtime_error("cannot create " + dir.string() + ": " + ec.message());
  }
  const std::filesystem::path path = dir / (std::to_string(trace.host.pid) + "_results.db");
  std::filesystem::path temporary = path;
  temporary += ".tmp";
  {
    rocpd::writer writer(temporary, uuid);
    for (const auto& [tag, value] : rocpd::completeness_metadata(completeness)) {
      writer.add_metadata(tag, value);
    }
    cupti::writer_sink sink(writer);
    cupti::map_trace(trace, sink);
    writer.commit();
  } // closed before the rename: the file is whole on disk
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::filesystem::remove(temporary, ec);
    throw std::runtime_error("cannot rename " + temporary.string() + " to " + path.string() + ": " +
                             why);
  }
  return path;
}

} // namespace rpl::workers::cupti_tracer
