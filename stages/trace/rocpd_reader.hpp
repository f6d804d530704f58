#pragma once
/// Reads rocpd databases (schema 3.0.x, what rocprofv3 writes in ROCm 7.x): validates each file,
/// then streams kernel dispatches row by row and returns the small info tables (agents, kernel
/// symbols, queues, streams, processes). Several files (one per profiled process) read as one.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "stages/trace/rocpd_schema.hpp"

namespace rpl::stages::rocpd {

/// One kernel dispatch. `kernel_name` points into the reader's current row: copy it to keep it.
struct dispatch_row {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::string_view kernel_name; ///< display name (kernel name when it has none); stable for the
                                ///< callback's duration
  std::int64_t kernel_id = 0;
  std::int64_t agent_id = 0;
  std::int64_t queue_id = 0;
  std::int64_t stream_id = 0;
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  std::int64_t dispatch_id = 0;
  std::uint32_t grid[3] = {0, 0, 0};      ///< work-items
  std::uint32_t workgroup[3] = {0, 0, 0}; ///< work-items per workgroup
  std::size_t database = 0;               ///< index into reader::paths()
  std::size_t source = 0;                 ///< index into the database's uuids (table suffixes)
  std::int64_t row_id = 0;                ///< the row's id in rocpd_kernel_dispatch
  std::int64_t group_segment_size =
      0; ///< LDS (shared memory) per workgroup, static + dynamic; 0 if absent
  std::int64_t private_segment_size = 0; ///< scratch (local memory) per work-item; 0 if absent
  /// The rocpd_event row the dispatch's counter values (rocpd_pmc_event) hang off; valid when
  /// `has_event` (the column is NULL or absent otherwise).
  std::int64_t event_id = 0;
  bool has_event = false;
  /// The kernel's symbol row was found (false: `kernel_name` is "<unknown kernel N>").
  bool symbol_found = false;
};

/// Which dispatch_row fields a reader fills.
enum class dispatch_fields {
  all,
  /// What runtime accounting reads: start_ns, end_ns, kernel_name, kernel_id, agent_id, queue_id,
  /// stream_id, pid, database, source and row_id.
  accounting,
  /// What a profile report reads: the accounting fields, grid, workgroup, group_segment_size and
  /// the event (event_id, has_event: for the counter values of the same pass).
  report,
};

struct agent_row {
  std::size_t database = 0;
  std::int64_t id = 0;
  std::string type; ///< "GPU" or "CPU"
  std::string name; ///< "gfx90a", "sm_90"
  std::string model_name;
  std::string product_name;
  std::int64_t absolute_index = 0;
  std::int64_t logical_index = 0;
  std::int64_t type_index = 0;
  nlohmann::json
      extdata; ///< the agent's properties (cu_count, wave_front_size, ...); {} if unreadable
};

struct kernel_symbol_row {
  std::size_t database = 0;
  std::int64_t id = 0;
  std::int64_t pid = 0;
  std::int64_t code_object_id = 0;
  std::string kernel_name;
  std::string display_name;
  std::int64_t sgpr_count = 0;
  std::int64_t arch_vgpr_count = 0;
  std::int64_t accum_vgpr_count = 0;
  std::int64_t group_segment_size = 0;
  std::int64_t private_segment_size = 0;
  std::int64_t kernarg_segment_size = 0;
};

struct queue_row {
  std::size_t database = 0;
  std::int64_t id = 0;
  std::int64_t pid = 0;
  std::string name; ///< "Default Queue", "Queue 1"
};

struct stream_row {
  std::size_t database = 0;
  std::int64_t id = 0;
  std::int64_t pid = 0;
  std::string name; ///< "Default Stream", "Stream 1"
};

struct process_row {
  std::size_t database = 0;
  std::int64_t pid = 0;
  std::int64_t ppid = 0;
  std::string command;
  std::string hostname;
};

/// What one opened file holds.
struct database_info {
  std::filesystem::path path;
  std::string schema_version;     ///< "3", or "3.0.x" from later rocprofv3 releases
  std::vector<std::string> uuids; ///< the table suffixes ("_0197..."), usually one per file
  /// The rocpd_metadata rows of the first suffix, by tag: schema_version, uuid, guid, and what a
  /// producer adds (our CUPTI tracer says whether the trace is complete: trace_completeness.hpp).
  std::map<std::string, std::string> metadata;
};

/// A validated set of rocpd files, read-only. Rows come from every file, and inside a file from
/// every uuid suffix its tables carry (as when per-process databases were merged into one file);
/// rows are joined only with rows of the same suffix and guid. Columns are selected by name, so the
/// 3.0.x variants (columns added, reordered) read the same. Zero dispatches is not an error here:
/// whether an empty trace is a failure is for the caller (the accounting) to decide.
class reader {
public:
  /// Opens and validates `paths`. A directory means every *.db file inside it, recursively
  /// (rocprofv3 writes <dir>/<hostname>/<pid>_results.db). Throws rocpd_error, naming the file and
  /// a fix, for: no paths, a missing path, a directory without *.db files, a file that is not
  /// SQLite, a legacy RPD database, an SQLite file that is not rocpd, a schema_version other than
  /// 3 (or 3.0.x), or a rocpd file that lacks the tables read here.
  static reader open(const std::vector<std::filesystem::path>& paths);

  reader(reader&&) noexcept;
  reader& operator=(reader&&) noexcept;
  ~reader();

  /// Calls `visit` for every dispatch, one file and suffix after another, in table order (no sort,
  /// so memory stays flat for any number of rows). Throws rocpd_error if a file fails midway.
  void for_each_dispatch(const std::function<void(const dispatch_row&)>& visit) const {
    for_each_dispatch(visit, dispatch_fields::all);
  }
  /// The same rows, with only `fields` read from the file (the others stay 0): fewer columns to
  /// fetch per row. The files are validated as for all fields.
  void for_each_dispatch(const std::function<void(const dispatch_row&)>& visit,
                         dispatch_fields fields) const;

  std::vector<agent_row> agents() const;
  std::vector<kernel_symbol_row> kernel_symbols() const;
  std::vector<queue_row> queues() const;
  std::vector<stream_row> streams() const;
  std::vector<process_row> processes() const;
  /// COUNT(*) of the dispatch tables of all files.
  std::size_t dispatch_count() const;

  /// The files read, directories expanded, in the order `database` indices refer to.
  const std::vector<std::filesystem::path>& paths() const;
  const std::vector<database_info>& databases() const;

private:
  reader();
  struct database;
  std::vector<std::filesystem::path> paths_;
  std::vector<database_info> infos_;
  std::vector<std::unique_ptr<database>> databases_;
};

} // namespace rpl::stages::rocpd
