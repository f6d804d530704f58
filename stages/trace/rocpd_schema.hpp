#pragma once
/// The rocpd SQLite schema 3.0.0, as rocprofv3 (ROCm 7.x) creates it, for writing databases that
/// rocprofv3's own tools (`rocpd convert`, `rocpd summary`, Optiq) and our reader accept.

#include <array>
#include <stdexcept>
#include <string>
#include <string_view>

namespace rpl::stages::rocpd {

/// Bad rocpd input (a missing, foreign or unsupported file) or a failed write; the message names
/// the file, the problem and a fix.
class rocpd_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The schema_version this code writes and the major version it reads.
inline constexpr std::string_view schema_version = "3";

/// The 20 tables of schema 3.0.0, without their uuid suffix; each also has a same-named view.
inline constexpr std::array<std::string_view, 20> table_names = {"rocpd_metadata",
                                                                 "rocpd_string",
                                                                 "rocpd_info_node",
                                                                 "rocpd_info_process",
                                                                 "rocpd_info_thread",
                                                                 "rocpd_info_agent",
                                                                 "rocpd_info_queue",
                                                                 "rocpd_info_stream",
                                                                 "rocpd_info_pmc",
                                                                 "rocpd_info_code_object",
                                                                 "rocpd_info_kernel_symbol",
                                                                 "rocpd_track",
                                                                 "rocpd_event",
                                                                 "rocpd_arg",
                                                                 "rocpd_pmc_event",
                                                                 "rocpd_region",
                                                                 "rocpd_sample",
                                                                 "rocpd_kernel_dispatch",
                                                                 "rocpd_memory_copy",
                                                                 "rocpd_memory_allocate"};

/// The analysis views `rocpd_schema_sql` creates on top of the unsuffixed views (ROCm 7.0's
/// data_views.sql and summary_views.sql, the ones our tools and rocprofv3's tests query).
inline constexpr std::array<std::string_view, 23> analysis_view_names = {
    "code_objects",
    "kernel_symbols",
    "processes",
    "threads",
    "regions",
    "region_args",
    "samples",
    "sample_regions",
    "regions_and_samples",
    "kernels",
    "pmc_info",
    "pmc_events",
    "memory_copies",
    "memory_allocations",
    "scratch_memory",
    "counters_collection",
    "top_kernels",
    "busy",
    "top",
    "kernel_summary",
    "kernel_summary_region",
    "memory_copy_summary",
    "memory_allocation_summary"};

/// The whole DDL of schema 3.0.0 with its metadata rows, in rocprofv3's load order: the suffixed
/// tables, the unsuffixed pass-through views, the data views, the summary views, then the metadata
/// insert (schema_version "3", uuid = `uuid_suffix` with its leading underscore, guid dashed).
/// `uuid_suffix` is the table-name suffix (e.g. "_0197abcd_1234_7abc_8def_0123456789ab", or empty
/// for unsuffixed tables); `guid` is the dashed form, the DEFAULT of every guid column.
/// Unlike upstream, string literals are single-quoted so the SQL also runs where SQLite's
/// double-quoted-string quirk is disabled; no PRAGMA and no index is emitted (7.0 creates none).
std::string rocpd_schema_sql(std::string_view uuid_suffix, std::string_view guid);

/// Only the 20 tables of `rocpd_schema_sql` (no views, no metadata rows): for tests and tools that
/// build schema variants.
std::string rocpd_tables_sql(std::string_view uuid_suffix, std::string_view guid);

/// Only the views (pass-through, data and summary) of `rocpd_schema_sql`. With an empty suffix the
/// tables already carry the plain names, so no pass-through view is emitted.
std::string rocpd_views_sql(std::string_view uuid_suffix);

} // namespace rpl::stages::rocpd
