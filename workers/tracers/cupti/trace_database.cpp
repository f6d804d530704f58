#include "workers/tracers/cupti/trace_database.hpp"

#include <stdexcept>
#include <string>
#include <system_error>

#include "stages/trace/rocpd_writer.hpp"
#include "workers/tracers/cupti/host_facts.hpp"

namespace rpl::workers::cupti_tracer {

namespace cupti = rpl::stages::cupti;

std::filesystem::path write_database(cupti::cupti_trace& trace,
                                     const std::filesystem::path& out_dir) {
  trace.host = read_host_facts(trace.host.pid, cupti::thread_ids(trace));
  for (const std::uint32_t device : cupti::devices_used(trace)) {
    trace.driver_devices[device] = read_driver_device(device);
  }
  const std::filesystem::path dir = out_dir / trace.host.hostname;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw std::runtime_error("cannot create " + dir.string() + ": " + ec.message());
  }
  const std::filesystem::path path = dir / (std::to_string(trace.host.pid) + "_results.db");
  rpl::stages::rocpd::writer writer(path);
  cupti::writer_sink sink(writer);
  cupti::map_trace(trace, sink);
  writer.commit();
  return path;
}

} // namespace rpl::workers::cupti_tracer
