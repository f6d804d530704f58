#pragma once
/// Writing the one rocpd database of a traced process: <out_dir>/<hostname>/<pid>_results.db, as
/// rocprofv3 names it. The rows come from stages/trace/cupti_mapping; this file adds the host and
/// driver facts the mapping needs and does the file I/O.

#include <filesystem>

#include "stages/trace/cupti_mapping.hpp"

namespace rpl::workers::cupti_tracer {

/// Fills `trace.host` and `trace.driver_devices`, writes the database under `out_dir` and returns
/// its path. Throws (std::runtime_error, rocpd_error) when the folder or the file cannot be
/// written.
std::filesystem::path write_database(rpl::stages::cupti::cupti_trace& trace,
                                     const std::filesystem::path& out_dir);

} // namespace rpl::workers::cupti_tracer
