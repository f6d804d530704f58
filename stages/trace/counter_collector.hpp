#pragma once
/// The per-kernel counters of counter-pass files (counter_values.hpp's kernel_counters), read
/// without a join or a sort: the dispatches come from a dispatch scan that also serves something
/// else (the profile report's), the counter values from plain scans of each rocpd_pmc_event table
/// in rowid ranges (any number of threads; the rows from the file's pages where SQLite's file
/// format allows, through SQL otherwise), and finish() joins them in memory by event id. The result
/// is read_kernel_counters' to the value: per dispatch event and counter id the instances summed
/// (SQL's SUM(value) ... GROUP BY event_id, pmc_id), the dispatches of each pass in table order
/// (the dispatch id's), a dispatch without a symbol row or without counter values not counted.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stages/trace/counter_values.hpp"
#include "stages/trace/rocpd_reader.hpp"

namespace rpl::stages::rocpd {

class counter_collector {
public:
  /// Gathers the counters of the files of `files` at `databases` (indices into files.databases(),
  /// each at most once, in increasing order), at most `max_dispatches` per kernel by ordinal.
  /// `files` must outlive the collector. Reads the small tables (the counter names, each pmc
  /// table's rowid range) here; throws rocpd_error naming the file for one without the counter
  /// tables. `rowids_per_range`: how the pmc tables are cut for the threads (tests cut small).
  /// `from_pages`: read the pmc tables from the files' B-tree pages (sqlite::table_pages: SQLite's
  /// per-row cost was most of the time, 21 rows per dispatch), through SQL where a file or row
  /// needs SQLite; false: through SQL only (tests compare the two).
  counter_collector(const reader& files,
                    const std::vector<std::size_t>& databases,
                    std::size_t max_dispatches = 1000,
                    std::uint64_t rowids_per_range = std::uint64_t{1} << 20,
                    bool from_pages = true);
  counter_collector(counter_collector&&) noexcept;
  counter_collector& operator=(counter_collector&&) noexcept;
  ~counter_collector();

  /// One dispatch, read with dispatch_fields::report or all, in the reader's order; rows of other
  /// databases are passed over. One thread at a time.
  void add(const dispatch_row& row);
  /// Takes the next unread rowid range of the pmc tables and reads it, until none is left. Threads
  /// may call it at once (a range is read by one of them) and beside add(). Throws rocpd_error
  /// naming the file for a read error.
  void read_counter_rows();
  /// After every add() and every read_counter_rows() has returned: the per-kernel counters, keyed
  /// by kernel_key(name). Runs read_counter_rows() first if no thread did. The collector is spent.
  std::map<std::string, kernel_counters> finish();

private:
  struct state;
  std::unique_ptr<state> state_;
};

} // namespace rpl::stages::rocpd
