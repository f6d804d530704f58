#include "stages/trace/counter_passes.hpp"

#include "stages/sqlite/sqlite_statement.hpp"
#include "stages/trace/rocpd_reader.hpp"

namespace rpl::stages::rocpd {

namespace {

/// Whether any suffix's rocpd_pmc_event table of the file has a row.
bool has_counter_rows(const database_info& info) {
  sqlite::connection db(info.path, SQLITE_OPEN_READONLY);
  for (const auto& suffix : info.uuids) {
    try {
      sqlite::statement query(db, "SELECT EXISTS (SELECT 1 FROM rocpd_pmc_event" + suffix + ")");
      if (query.step() && query.column_int64(0) != 0)
        return true;
    } catch (const sqlite::sqlite_error&) {
      // No pmc table under this suffix (an older or trimmed file): no counters there.
    }
  }
  return false;
}

} // namespace

database_roles split_counter_passes(const std::vector<std::filesystem::path>& paths) {
  const reader files = reader::open(paths);
  database_roles roles;
  for (const auto& info : files.databases()) {
    const bool marked = info.metadata.count("rpl_counter_pass") > 0;
    if (marked || has_counter_rows(info))
      roles.counters.push_back(info.path);
    else
      roles.timeline.push_back(info.path);
  }
  if (roles.timeline.empty()) {
    roles.timeline = roles.counters;
    roles.timeline_from_counter_passes = !roles.counters.empty();
  }
  return roles;
}

} // namespace rpl::stages::rocpd
