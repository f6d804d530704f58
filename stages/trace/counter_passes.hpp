#pragma once
/// Which rocpd databases are counter passes and which hold the application's timeline. A counter
/// pass (our ncu pass, marked `rpl_counter_pass`; any file with rocpd_pmc_event rows, as
/// `rocprofv3 --pmc` writes) was recorded with the profiler serializing or replaying launches, so
/// its timestamps are not the application's: analyses read its counters per kernel name and take
/// the runtime, the timeline and the critical path from the other files. When every file is a
/// counter pass, they are the timeline too (and `timeline_from_counter_passes` says so).

#include <filesystem>
#include <vector>

namespace rpl::stages::rocpd {

struct database_roles {
  std::vector<std::filesystem::path> timeline; ///< the files the runtime and the DAG come from
  std::vector<std::filesystem::path> counters; ///< the files with counters
  bool timeline_from_counter_passes = false;   ///< no other file: the passes are the timeline too
};

/// Opens `paths` (directories expand, as reader::open does; rocpd_error for anything it refuses)
/// and sorts the files into their roles.
database_roles split_counter_passes(const std::vector<std::filesystem::path>& paths);

} // namespace rpl::stages::rocpd
