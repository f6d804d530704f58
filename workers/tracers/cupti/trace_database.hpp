#pragma once
/// Writing the one rocpd database of a traced process: <out_dir>/<hostname>/<pid>_results.db, as
/// rocprofv3 names it. The rows come from stages/trace/cupti_mapping; this file adds the facts the
/// mapping needs that change while the process runs, says in rocpd_metadata how complete the file
/// is (stages/trace/trace_completeness.hpp), and does the file I/O. The database is rewritten
/// whole at every checkpoint, always through a temporary file renamed over it, so a reader (or a
/// process killed midway) only ever sees a complete database: the previous one or the new one.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "stages/trace/cupti_mapping.hpp"
#include "stages/trace/trace_completeness.hpp"

namespace rpl::workers::cupti_tracer {

/// Fills in what changes while the process runs: the names of the threads that made API calls
/// (a name, once read, is kept after its thread ends) and the driver's facts of every device used,
/// read once per device into `driver_cache`.
void refresh_facts(rpl::stages::cupti::cupti_trace& trace,
                   std::map<std::uint32_t, rpl::stages::cupti::driver_device>& driver_cache);

/// Writes `trace` to <out_dir>/<hostname>/<pid>_results.db with rocpd uuid `uuid` and the
/// metadata rows of `completeness`: into <name>.tmp first (not a *.db file, so readers never pick
/// it up), then renamed over the database. Returns the database's path. Throws
/// (std::runtime_error, rocpd_error) when the folder or the file cannot be written; the previous
/// database, if any, is then left as it was.
std::filesystem::path write_database(const rpl::stages::cupti::cupti_trace& trace,
                                     const std::filesystem::path& out_dir,
                                     const std::string& uuid,
                                     const rpl::stages::rocpd::trace_completeness& completeness);

} // namespace rpl::workers::cupti_tracer
