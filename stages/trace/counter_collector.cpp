#include "stages/trace/counter_collector.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <iterator>
#include <limits>
#include <optional>
#include <utility>

#include "stages/sqlite/sqlite_statement.hpp"
#include "stages/sqlite/table_pages.hpp"

namespace rpl::stages::rocpd {

namespace {

/// Ranges per pmc table at most (rowids far apart make sparse ranges).
constexpr std::uint64_t max_ranges = 256;

/// A dispatch of a counter pass, as add() keeps it for finish().
struct kept_dispatch {
  std::int64_t event = 0;
  std::int64_t agent = 0;
  double duration_ns = 0;
  std::uint32_t name = 0; ///< index into state::names
};

/// One database and uuid suffix: its counter names and its dispatches.
struct pass_info {
  std::size_t database = 0;
  std::string table;                 ///< its rocpd_pmc_event table
  std::vector<std::int64_t> pmc_ids; ///< sorted: a counter's slot is its index here
  std::vector<std::string> names;    ///< by slot
  std::int64_t dense_base = 0;
  std::vector<std::uint32_t> dense; ///< pmc id - dense_base -> slot + 1 (0: none), ids span small
  std::vector<kept_dispatch> dispatches;
  /// The table read from the file's pages, where it can be (nullopt: through SQL), with the
  /// indices of its event_id, pmc_id and value columns.
  std::optional<sqlite::table_pages> pages;
  std::array<int, 3> columns{};

  /// The slot of counter `id`, or -1 when rocpd_info_pmc has no such row (the join drops it).
  std::int64_t slot_of(std::int64_t id) const {
    const std::uint64_t at =
        static_cast<std::uint64_t>(id) - static_cast<std::uint64_t>(dense_base);
    if (at < dense.size())
      return static_cast<std::int64_t>(dense[at]) - 1;
    const auto it = std::lower_bound(pmc_ids.begin(), pmc_ids.end(), id);
    return it != pmc_ids.end() && *it == id ? it - pmc_ids.begin() : -1;
  }
};

/// The values of one event: per counter slot (ascending), the sum over its instances.
struct event_run {
  std::int64_t event = 0;
  std::size_t first_value = 0; ///< into its range's values
  std::uint32_t signature = 0; ///< its slots: index into its range's signatures
};

/// A rowid range of one pass's pmc table, and what reading it gave.
struct row_range {
  std::size_t pass = 0;
  std::int64_t first = 0, last = -1; ///< rowids; last < first: the whole table, unsplit
  std::size_t first_leaf = 0;        ///< where pass_info::pages holds the table: its first leaf
  std::size_t leaf_count = 0;        ///< and how many leaves start in the range
  std::vector<event_run> runs;
  std::vector<double> values;
  std::vector<std::vector<std::uint32_t>> signatures; ///< slot lists, ascending
};

/// Sums the rows of each event as they come: an event's rows are one run when they are adjacent
/// in the table (as rocprofv3 writes them, a dispatch's values together).
class run_builder {
public:
  explicit run_builder(row_range& out) : out_(out) {}

  void add(std::int64_t event, std::uint32_t slot, double value) {
    if (!open_ || event != event_) {
      close();
      event_ = event;
      open_ = true;
    }
    if (slot >= position_.size())
      position_.resize(std::size_t{slot} + 1, absent);
    std::uint32_t& at = position_[slot];
    if (at != absent) {
      sums_[at] += value; // the next instance of a counter
      return;
    }
    at = static_cast<std::uint32_t>(slots_.size());
    slots_.push_back(slot);
    sums_.push_back(value);
  }

  /// Ends the open run: its sums in slot order, under the signature of its slots.
  void close() {
    if (!open_)
      return;
    open_ = false;
    if (slots_ != last_slots_) {
      // A new order of counters: sort once, then reuse while the events keep it.
      last_slots_ = slots_;
      order_.resize(slots_.size());
      for (std::size_t i = 0; i < order_.size(); ++i)
        order_[i] = static_cast<std::uint32_t>(i);
      std::sort(order_.begin(), order_.end(),
                [&](std::uint32_t a, std::uint32_t b) { return slots_[a] < slots_[b]; });
      std::vector<std::uint32_t> sorted;
      for (const std::uint32_t i : order_)
        sorted.push_back(slots_[i]);
      const auto found = std::find(out_.signatures.begin(), out_.signatures.end(), sorted);
      signature_ = static_cast<std::uint32_t>(found - out_.signatures.begin());
      if (found == out_.signatures.end())
        out_.signatures.push_back(std::move(sorted));
    }
    out_.runs.push_back({event_, out_.values.size(), signature_});
    for (const std::uint32_t i : order_)
      out_.values.push_back(sums_[i]); // appended: no zero-fill (read_counter_rows reserves)
    for (const std::uint32_t slot : slots_)
      position_[slot] = absent;
    slots_.clear();
    sums_.clear();
  }

private:
  row_range& out_;
  bool open_ = false;
  std::int64_t event_ = 0;
  static constexpr std::uint32_t absent = ~std::uint32_t{0};
  std::vector<std::uint32_t> slots_; ///< the open event's counters, in the order first seen
  std::vector<double> sums_;
  std::vector<std::uint32_t> position_; ///< by slot: its index in slots_, or absent
  std::vector<std::uint32_t> last_slots_, order_;
  std::uint32_t signature_ = 0;
};

/// The raw event id of the row just before rowid `first` (nullopt: none, or NULL): the event whose
/// rows the range before reads on past its end, so this range skips them.
std::optional<std::int64_t>
event_before(sqlite::connection& db, const std::string& table, std::int64_t first) {
  sqlite::statement before(db, "SELECT event_id FROM " + table +
                                   " WHERE rowid < ?1 ORDER BY rowid DESC LIMIT 1");
  before.bind_int64(1, first);
  if (!before.step() || before.column_is_null(0))
    return std::nullopt;
  return before.column_int64(0);
}

/// The rows of a pmc table from a rowid on, through SQL (a search on the rowid, no sort).
class sql_rows {
public:
  sql_rows(sqlite::connection& db, const std::string& table, std::int64_t first, bool whole)
      : rows_(db,
              std::string(whole ? "SELECT 0" : "SELECT rowid") + ", event_id, pmc_id, value FROM " +
                  table + (whole ? "" : " WHERE rowid >= ?1")) {
    if (!whole)
      rows_.bind_int64(1, first);
  }
  bool step() { return rows_.step(); }
  std::int64_t rowid() const { return rows_.column_int64(0); }
  /// The event id, nullopt for NULL (which joins no dispatch).
  std::optional<std::int64_t> event() const {
    const std::int64_t event = rows_.column_int64(1);
    if (event == 0 && rows_.column_is_null(1)) // NULL reads as 0
      return std::nullopt;
    return event;
  }
  std::int64_t pmc() const { return rows_.column_int64(2); }
  /// NULL reads as 0: SQL's SUM passes it over, the same total (all NULL: SUM is NULL, read 0).
  double value() const { return rows_.column_double(3); }

private:
  sqlite::statement rows_;
};

/// The same rows from the file's pages (sqlite::table_pages): what SQL would give them, or
/// table_pages::unreadable where only SQL gives it right (a real event or counter id, ...).
class page_rows {
public:
  page_rows(const sqlite::table_pages& pages,
            std::size_t leaf,
            const std::array<int, 3>& columns,
            std::vector<std::uint8_t>& buffer)
      : rows_(pages, leaf, {columns[0], columns[1], columns[2]}, std::move(buffer)),
        buffer_(buffer) {}
  page_rows(const page_rows&) = delete;
  page_rows& operator=(const page_rows&) = delete;
  /// Gives the read buffer back, for the next range's rows.
  ~page_rows() { buffer_ = rows_.take_buffer(); }
  bool step() { return rows_.next(); }
  std::int64_t rowid() const { return rows_.rowid(); }
  std::optional<std::int64_t> event() const {
    const auto& v = rows_.column(0);
    if (v.kind == sqlite::table_pages::value::type::real)
      throw sqlite::table_pages::unreadable{};
    if (v.kind == sqlite::table_pages::value::type::null)
      return std::nullopt;
    return v.integer;
  }
  std::int64_t pmc() const {
    const auto& v = rows_.column(1);
    if (v.kind != sqlite::table_pages::value::type::integer)
      throw sqlite::table_pages::unreadable{};
    return v.integer;
  }
  double value() const {
    const auto& v = rows_.column(2);
    return v.kind == sqlite::table_pages::value::type::real      ? v.real
           : v.kind == sqlite::table_pages::value::type::integer ? static_cast<double>(v.integer)
                                                                 : 0.0;
  }

private:
  sqlite::table_pages::cursor rows_;
  std::vector<std::uint8_t>& buffer_;
};

/// Reads one range from `rows` (positioned at its first rowid): its rows, and past its last rowid
/// the rows of the event it ended in (so that no event's adjacent rows are split between two
/// ranges); the leading rows of `skip`, the event the range before ended in, are that range's.
template <class Rows>
void read_range(Rows& rows,
                const pass_info& pass,
                row_range& range,
                std::optional<std::int64_t> skip) {
  const bool whole = range.last < range.first;
  run_builder runs(range);
  std::optional<std::int64_t> last_event; // of the last row read within the range
  std::int64_t last_pmc = 0, last_slot = -1;
  bool skipping = skip.has_value();
  while (rows.step()) {
    const std::optional<std::int64_t> event = rows.event();
    if (skipping) {
      if (event && *event == *skip)
        continue;
      skipping = false;
    }
    if (!whole && rows.rowid() > range.last) {
      if (!event || !last_event || *event != *last_event)
        break;
    } else {
      last_event = event;
    }
    if (!event)
      continue; // joins no dispatch
    const std::int64_t pmc = rows.pmc();
    if (pmc != last_pmc || last_slot < 0) {
      last_pmc = pmc;
      last_slot = pass.slot_of(pmc);
    }
    if (last_slot < 0)
      continue; // no rocpd_info_pmc row: the join drops it
    runs.add(*event, static_cast<std::uint32_t>(last_slot), rows.value());
  }
  runs.close();
}

/// An event's values, wherever they are kept.
struct event_values {
  std::int64_t event = 0;
  const std::vector<std::uint32_t>* slots = nullptr;
  const double* values = nullptr;
};

/// Finds an event's values: by a direct index where the event ids are dense (rocprofv3 numbers
/// events from 1), by bisection otherwise. The dispatch table is in dispatch id order, its events
/// in completion order: neither order walks the other.
class event_index {
public:
  explicit event_index(std::vector<event_values> events) : events_(std::move(events)) {
    if (events_.empty())
      return;
    const auto span = static_cast<std::uint64_t>(events_.back().event) -
                      static_cast<std::uint64_t>(events_.front().event);
    if (span < 4 * static_cast<std::uint64_t>(events_.size()) + 1024) {
      base_ = events_.front().event;
      dense_.assign(static_cast<std::size_t>(span) + 1, 0);
      for (std::size_t i = 0; i < events_.size(); ++i)
        dense_[static_cast<std::size_t>(events_[i].event - base_)] =
            static_cast<std::uint32_t>(i + 1);
    }
  }

  const event_values* find(std::int64_t event) const {
    if (!dense_.empty()) {
      const std::uint64_t at =
          static_cast<std::uint64_t>(event) - static_cast<std::uint64_t>(base_);
      return at < dense_.size() && dense_[at] != 0 ? &events_[dense_[at] - 1] : nullptr;
    }
    const auto it =
        std::lower_bound(events_.begin(), events_.end(), event,
                         [](const event_values& e, std::int64_t v) { return e.event < v; });
    return it != events_.end() && it->event == event ? &*it : nullptr;
  }

private:
  std::vector<event_values> events_; ///< sorted by event, each once
  std::int64_t base_ = 0;
  std::vector<std::uint32_t> dense_; ///< event - base_ -> index + 1 (0: none)
};

/// Writes an event's values into a dispatch's map by counter name in the names' order, each
/// insertion hinted by the one before (a million dispatches' maps: the name comparisons of
/// unhinted insertions were much of finish()). The order is found once per list of slots.
class name_ordered_writer {
public:
  void write(const std::vector<std::uint32_t>& slots,
             const double* values,
             const std::vector<std::string>& names,
             std::map<std::string, double>& into) {
    if (&slots != slots_ || &names != names_) {
      slots_ = &slots;
      names_ = &names;
      order_.resize(slots.size());
      for (std::size_t i = 0; i < order_.size(); ++i)
        order_[i] = static_cast<std::uint32_t>(i);
      // Stable: of two counters of one name, the later slot's value stays (as before).
      std::stable_sort(order_.begin(), order_.end(), [&](std::uint32_t a, std::uint32_t b) {
        return names[slots[a]] < names[slots[b]];
      });
    }
    auto hint = into.begin();
    for (const std::uint32_t v : order_)
      hint = std::next(into.insert_or_assign(hint, names[slots[v]], values[v]));
  }

private:
  const std::vector<std::uint32_t>* slots_ = nullptr;
  const std::vector<std::string>* names_ = nullptr;
  std::vector<std::uint32_t> order_;
};

} // namespace

struct counter_collector::state {
  const reader& files;
  std::size_t max_dispatches;
  /// Rowids per range of a pmc table: by default about a million rows (50,000 dispatches of 21
  /// values), so that two threads share a table's scan in even parts.
  std::uint64_t range_rowids;
  std::vector<pass_info> passes;
  std::vector<std::ptrdiff_t> first_pass; ///< by database: its first pass, or -1 when not read
  std::vector<row_range> ranges;
  std::atomic<std::size_t> next_range{0};
  std::vector<std::string> names; ///< kernel names as add() met them
  std::map<std::string, std::uint32_t, std::less<>> name_index;
  /// The name's storage as the reader hands it out, to skip the map for the same kernel's rows.
  std::array<std::pair<const char*, std::uint32_t>, 256> name_slots{};

  bool from_pages;
  /// Per pass: its ranges not read yet; the thread that reads the last one indexes the pass's
  /// events (beside the dispatch scan, where another thread still scans).
  std::unique_ptr<std::atomic<std::size_t>[]> ranges_left;
  std::vector<std::optional<event_index>> indexes;
  std::vector<std::vector<row_range>> merged_runs; ///< what index_events merged, per pass
  /// One connection per file read, in a read transaction from the start to the end: no writer
  /// commits while its pages are read (rollback-journal mode; table_pages refuses the others).
  std::vector<sqlite::connection> held;

  state(const reader& f, std::size_t max, std::uint64_t rowids, bool pages)
      : files(f), max_dispatches(max), range_rowids(std::max<std::uint64_t>(rowids, 1)),
        from_pages(pages) {}

  std::uint32_t name_of(std::string_view name) {
    const auto address = reinterpret_cast<std::uintptr_t>(name.data());
    auto& slot = name_slots[(address * 0x9E3779B97F4A7C15ull) >> 56];
    if (slot.first != nullptr && slot.first == name.data() && names[slot.second] == name)
      return slot.second;
    auto it = name_index.find(name);
    if (it == name_index.end()) {
      it = name_index.emplace(std::string(name), static_cast<std::uint32_t>(names.size())).first;
      names.emplace_back(name);
    }
    slot = {name.data(), it->second};
    return it->second;
  }

  /// Reads the counter names and cuts the pmc table of `suffix` into ranges.
  void open_pass(sqlite::connection& db,
                 const std::filesystem::path& path,
                 std::size_t database,
                 const std::string& suffix);
  /// Ranges of the table's leaf pages, when it reads from its pages (false: through SQL).
  bool page_ranges(sqlite::connection& db,
                   const std::filesystem::path& path,
                   const std::string& table,
                   pass_info& pass,
                   std::size_t index);
  /// The pass's events with their values, sorted by event, each event once.
  std::vector<event_values> index_events(std::size_t pass, std::vector<row_range>& merged) const;
};

bool counter_collector::state::page_ranges(sqlite::connection& db,
                                           const std::filesystem::path& path,
                                           const std::string& table,
                                           pass_info& pass,
                                           std::size_t index) {
  std::map<std::string, int> column;
  sqlite::statement info(db, "PRAGMA table_info(\"" + table + "\")");
  while (info.step())
    column[info.column_text(1)] = static_cast<int>(info.column_int64(0));
  for (const char* name : {"event_id", "pmc_id", "value"})
    if (column.count(name) == 0)
      return false;
  auto pages = sqlite::table_pages::open(db, path, table);
  if (!pages)
    return false;
  // Ranges of whole leaves, about range_rowids rows each (a 4 KiB leaf holds about 60 rows).
  const std::size_t leaves_per_range =
      static_cast<std::size_t>(std::max<std::uint64_t>(range_rowids / 64, 1));
  std::vector<row_range> made;
  try {
    for (std::size_t leaf = 0; leaf < pages->leaves(); leaf += leaves_per_range) {
      row_range range;
      range.pass = index;
      range.first_leaf = leaf;
      range.leaf_count = std::min(leaves_per_range, pages->leaves() - leaf);
      range.first = pages->first_rowid(leaf);
      if (!made.empty()) {
        if (range.first <= made.back().first)
          return false; // not in rowid order: a damaged tree
        made.back().last = range.first - 1;
      }
      made.push_back(std::move(range));
    }
  } catch (const sqlite::table_pages::unreadable&) {
    return false;
  }
  if (made.empty())
    return false;
  made.back().last = std::numeric_limits<std::int64_t>::max();
  pass.columns = {column["event_id"], column["pmc_id"], column["value"]};
  pass.pages = std::move(pages);
  for (row_range& range : made)
    ranges.push_back(std::move(range));
  return true;
}

void counter_collector::state::open_pass(sqlite::connection& db,
                                         const std::filesystem::path& path,
                                         std::size_t database,
                                         const std::string& suffix) {
  pass_info pass;
  pass.database = database;
  pass.table = "\"rocpd_pmc_event" + suffix + "\"";
  std::vector<std::pair<std::int64_t, std::string>> counters;
  sqlite::statement info(db, "SELECT id, name FROM \"rocpd_info_pmc" + suffix + "\"");
  while (info.step())
    counters.emplace_back(info.column_int64(0), info.column_text(1));
  std::sort(counters.begin(), counters.end());
  for (auto& [id, name] : counters) {
    pass.pmc_ids.push_back(id);
    pass.names.push_back(std::move(name));
  }
  if (!pass.pmc_ids.empty() && static_cast<std::uint64_t>(pass.pmc_ids.back()) -
                                       static_cast<std::uint64_t>(pass.pmc_ids.front()) <
                                   65536) {
    pass.dense_base = pass.pmc_ids.front();
    pass.dense.assign(static_cast<std::size_t>(pass.pmc_ids.back() - pass.pmc_ids.front()) + 1, 0);
    for (std::size_t i = 0; i < pass.pmc_ids.size(); ++i)
      pass.dense[static_cast<std::size_t>(pass.pmc_ids[i] - pass.dense_base)] =
          static_cast<std::uint32_t>(i + 1);
  }
  const std::size_t index = passes.size();
  if (from_pages && page_ranges(db, path, "rocpd_pmc_event" + suffix, pass, index)) {
    passes.push_back(std::move(pass));
    return;
  }
  // The rowid span, from the table's B-tree ends; a table without rowids is read whole.
  std::optional<std::pair<std::int64_t, std::int64_t>> span;
  try {
    // One subquery each: SQLite reads MIN and MAX from the B-tree's ends only one per SELECT.
    sqlite::statement ends(db, "SELECT (SELECT MIN(rowid) FROM " + pass.table +
                                   "), (SELECT MAX(rowid) FROM " + pass.table + ")");
    if (ends.step() && !ends.column_is_null(0))
      span = std::pair{ends.column_int64(0), ends.column_int64(1)};
    else
      span = std::pair{std::int64_t{0}, std::int64_t{-1}}; // empty: nothing to read
  } catch (const sqlite::sqlite_error&) {
    row_range whole;
    whole.pass = index;
    ranges.push_back(std::move(whole));
  }
  if (span && span->first <= span->second) {
    // About range_rowids each, at most max_ranges: never a range past the last rowid.
    const std::uint64_t rowids =
        static_cast<std::uint64_t>(span->second) - static_cast<std::uint64_t>(span->first);
    const std::uint64_t step = std::max<std::uint64_t>(range_rowids, rowids / max_ranges + 1);
    for (std::uint64_t offset = 0;; offset += step) {
      row_range range;
      range.pass = index;
      range.first = static_cast<std::int64_t>(static_cast<std::uint64_t>(span->first) + offset);
      const bool is_last = rowids - offset < step;
      range.last =
          is_last ? span->second
                  : static_cast<std::int64_t>(static_cast<std::uint64_t>(range.first) + step - 1);
      ranges.push_back(std::move(range));
      if (is_last)
        break;
    }
  }
  passes.push_back(std::move(pass));
}

counter_collector::counter_collector(const reader& files,
                                     const std::vector<std::size_t>& databases,
                                     std::size_t max_dispatches,
                                     std::uint64_t rowids_per_range,
                                     bool from_pages)
    : state_(std::make_unique<state>(files, max_dispatches, rowids_per_range, from_pages)) {
  state& st = *state_;
  st.first_pass.assign(files.databases().size(), -1);
  for (const std::size_t database : databases) {
    const database_info& info = files.databases()[database];
    try {
      sqlite::connection db(info.path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX);
      db.exec("BEGIN"); // its first read takes the shared lock, held until the collector ends
      st.first_pass[database] = static_cast<std::ptrdiff_t>(st.passes.size());
      for (const std::string& suffix : info.uuids)
        st.open_pass(db, info.path, database, suffix);
      st.held.push_back(std::move(db));
    } catch (const sqlite::sqlite_error& error) {
      throw rocpd_error(info.path.string() + ": cannot read its counters (" + error.what() +
                        "); fix: check that the file is a complete rocpd database");
    }
  }
  st.ranges_left = std::make_unique<std::atomic<std::size_t>[]>(st.passes.size());
  for (const row_range& range : st.ranges)
    ++st.ranges_left[range.pass];
  st.indexes.resize(st.passes.size());
  st.merged_runs.resize(st.passes.size());
}

counter_collector::counter_collector(counter_collector&&) noexcept = default;
counter_collector& counter_collector::operator=(counter_collector&&) noexcept = default;
counter_collector::~counter_collector() = default;

void counter_collector::add(const dispatch_row& row) {
  state& st = *state_;
  const std::ptrdiff_t first = st.first_pass[row.database];
  // Only a dispatch the old join kept: with an event to match and a symbol row.
  if (first < 0 || !row.has_event || !row.symbol_found)
    return;
  st.passes[static_cast<std::size_t>(first) + row.source].dispatches.push_back(
      {row.event_id, row.agent_id, static_cast<double>(row.end_ns - row.start_ns),
       st.name_of(row.kernel_name)});
}

void counter_collector::read_counter_rows() {
  state& st = *state_;
  // Connections of this call's own, one per file it reads.
  std::vector<std::optional<sqlite::connection>> connections(st.files.databases().size());
  std::vector<std::uint8_t> buffer; // the pages read, reused range after range
  for (std::size_t i = st.next_range++; i < st.ranges.size(); i = st.next_range++) {
    row_range& range = st.ranges[i];
    const pass_info& pass = st.passes[range.pass];
    const database_info& info = st.files.databases()[pass.database];
    try {
      auto& db = connections[pass.database];
      if (!db)
        db.emplace(info.path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX);
      const bool whole = range.last < range.first;
      const std::optional<std::int64_t> skip =
          whole ? std::nullopt : event_before(*db, pass.table, range.first);
      bool read = false;
      if (pass.pages) {
        try {
          // At most a row per 40 bytes of a leaf (a pmc row takes more): no regrowth.
          range.values.reserve(range.leaf_count * pass.pages->page_bytes() / 40);
          range.runs.reserve(range.values.capacity() / 8);
          page_rows rows(*pass.pages, range.first_leaf, pass.columns, buffer);
          read_range(rows, pass, range, skip);
          read = true;
        } catch (const sqlite::table_pages::unreadable&) {
          // A row only SQL reads right: the whole range again, through SQL.
          range.runs.clear();
          range.values.clear();
          range.signatures.clear();
        }
      }
      if (!read) {
        sql_rows rows(*db, pass.table, range.first, whole);
        read_range(rows, pass, range, skip);
      }
      if (--st.ranges_left[range.pass] == 0)
        st.indexes[range.pass].emplace(st.index_events(range.pass, st.merged_runs[range.pass]));
    } catch (const sqlite::sqlite_error& error) {
      throw rocpd_error(info.path.string() + ": cannot read its counters (" + error.what() +
                        "); fix: check that the file is a complete rocpd database");
    }
  }
}

std::vector<event_values>
counter_collector::state::index_events(std::size_t pass, std::vector<row_range>& merged) const {
  std::vector<event_values> events;
  std::size_t runs = 0;
  for (const row_range& range : ranges)
    runs += range.pass == pass ? range.runs.size() : 0;
  events.reserve(runs);
  for (const row_range& range : ranges) {
    if (range.pass != pass)
      continue;
    for (const event_run& run : range.runs)
      events.push_back(
          {run.event, &range.signatures[run.signature], range.values.data() + run.first_value});
  }
  const auto by_event = [](const event_values& a, const event_values& b) {
    return a.event < b.event;
  };
  if (std::is_sorted(events.begin(), events.end(), by_event) &&
      std::adjacent_find(events.begin(), events.end(), [](const auto& a, const auto& b) {
        return a.event == b.event;
      }) == events.end())
    return events;
  // An event whose rows are not adjacent in the table: its runs summed per counter, in table order.
  std::stable_sort(events.begin(), events.end(), by_event);
  merged.emplace_back();
  row_range& out = merged.back();
  std::vector<std::pair<std::size_t, std::size_t>> joined; // (first, end) in events
  for (std::size_t i = 0; i < events.size();) {
    std::size_t end = i + 1;
    while (end < events.size() && events[end].event == events[i].event)
      ++end;
    if (end - i > 1) {
      run_builder sums(out);
      for (std::size_t r = i; r < end; ++r)
        for (std::size_t v = 0; v < events[r].slots->size(); ++v)
          sums.add(events[i].event, (*events[r].slots)[v], events[r].values[v]);
      sums.close();
      joined.emplace_back(i, end);
    }
    i = end;
  }
  std::vector<event_values> unique;
  std::size_t next_joined = 0, run = 0;
  for (std::size_t i = 0; i < events.size();) {
    if (next_joined < joined.size() && joined[next_joined].first == i) {
      const event_run& r = out.runs[run++];
      unique.push_back({r.event, &out.signatures[r.signature], out.values.data() + r.first_value});
      i = joined[next_joined++].second;
    } else {
      unique.push_back(events[i++]);
    }
  }
  return unique;
}

std::map<std::string, kernel_counters> counter_collector::finish() {
  read_counter_rows();
  state& st = *state_;
  std::map<std::pair<std::size_t, std::int64_t>, std::pair<std::string, std::string>> agents;
  for (const auto& agent : st.files.agents())
    agents[{agent.database, agent.id}] = {agent.name, agent.product_name};
  std::map<std::string, kernel_counters> out;
  // Per kernel key: its entry, the ordinal of its next dispatch in the pass and its counters'
  // totals by the pass's slots (found once per pass, not per value).
  struct kernel_entry {
    kernel_counters* counters = nullptr;
    std::size_t pass = SIZE_MAX;
    std::size_t ordinal = 0;
    std::vector<counter_total*> totals;
  };
  std::map<std::string, kernel_entry> entries;
  std::vector<kernel_entry*> entry_of_name(st.names.size(), nullptr);
  name_ordered_writer by_name;
  for (std::size_t p = 0; p < st.passes.size(); ++p) {
    const pass_info& pass = st.passes[p];
    if (!st.indexes[p]) // a pass without ranges
      st.indexes[p].emplace(st.index_events(p, st.merged_runs[p]));
    const event_index& events = *st.indexes[p];
    for (const kept_dispatch& d : pass.dispatches) {
      const event_values* found = events.find(d.event);
      if (found == nullptr)
        continue; // no counter values: not a dispatch the join returned
      const event_values& values = *found;
      kernel_entry*& entry = entry_of_name[d.name];
      if (entry == nullptr) {
        const std::string key = kernel_key(st.names[d.name]);
        entry = &entries[key];
        entry->counters = &out[key];
      }
      kernel_counters& k = *entry->counters;
      if (k.name.empty()) {
        k.name = st.names[d.name];
        const auto agent = agents.find({pass.database, d.agent});
        if (agent != agents.end()) {
          k.target = agent->second.first;
          k.product = agent->second.second;
        }
      }
      if (entry->pass != p) {
        entry->pass = p;
        entry->ordinal = 0;
        entry->totals.assign(pass.names.size(), nullptr);
      }
      ++k.dispatches;
      k.duration_sum_ns += d.duration_ns;
      const std::size_t n = entry->ordinal++;
      kernel_counters::dispatch* current = nullptr;
      if (n < st.max_dispatches) {
        if (k.dispatches_by_ordinal.size() <= n)
          k.dispatches_by_ordinal.resize(n + 1);
        current = &k.dispatches_by_ordinal[n];
        current->duration_ns = d.duration_ns;
      }
      for (std::size_t v = 0; v < values.slots->size(); ++v) {
        const std::uint32_t slot = (*values.slots)[v];
        counter_total*& total = entry->totals[slot];
        if (total == nullptr)
          total = &k.counters[pass.names[slot]];
        total->sum += values.values[v];
        ++total->dispatches;
      }
      if (current != nullptr)
        by_name.write(*values.slots, values.values, pass.names, current->counters);
    }
  }
  return out;
}

} // namespace rpl::stages::rocpd
