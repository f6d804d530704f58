#include "stages/trace/rocpd_reader.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "stages/sqlite/sqlite_statement.hpp"

namespace rpl::stages::rocpd {
namespace {

constexpr std::string_view record_fix =
    "fix: record with rocprofv3 --output-format rocpd (ROCm 7.x) and pass its results.db file or "
    "output directory";

std::string quote_identifier(std::string_view name) {
  std::string out = "\"";
  for (const char c : name) {
    out += c;
    if (c == '"') {
      out += '"';
    }
  }
  return out + "\"";
}

std::uint32_t column_u32(const sqlite::statement& stmt, int column) {
  const std::int64_t value = stmt.column_int64(column);
  return value < 0 ? 0u : static_cast<std::uint32_t>(std::min<std::int64_t>(value, UINT32_MAX));
}

/// Whether `column` holds a value `S.id = column` can match with an integer id: an integer, or a
/// real with an integral value (affinity leaves 3.0 real in a REAL column).
bool integral(const sqlite::statement& stmt, int column) {
  switch (sqlite3_column_type(stmt.handle(), column)) {
  case SQLITE_INTEGER: return true;
  case SQLITE_FLOAT: {
    const double value = stmt.column_double(column);
    return value > -9.0e18 && value < 9.0e18 &&
           value == static_cast<double>(stmt.column_int64(column));
  }
  default: return false;
  }
}

/// One uuid suffix of a file: the tables `rocpd_X<suffix>`, or the unsuffixed views when the file
/// has exactly one suffix and its views exist (the way rocprofv3's own views read the file).
struct source {
  std::string suffix;
  bool use_views = false;
  std::string table(std::string_view base) const {
    return quote_identifier(use_views ? std::string(base) : std::string(base) + suffix);
  }
};

/// The names of a file's tables and views.
struct schema_names {
  std::set<std::string> tables;
  std::set<std::string> views;
  bool has(const std::string& name) const { return tables.count(name) + views.count(name) != 0; }
};

/// The kernel names of one source's symbol table, read once so that the dispatch scan selects plain
/// integer columns instead of joining every row to a text table (the join and the per-row name text
/// were most of the read time). Only where that gives exactly the join's rows: every symbol id an
/// integer, every guid of the table one text value (as rocprofv3 writes it), no id twice. Otherwise
/// `usable` is false and the scan joins in SQL as before.
struct symbol_names {
  bool usable = false;
  std::optional<std::string> guid; ///< the guid every symbol row has; nullopt: no row matches any
  std::vector<std::int64_t> ids;   ///< sorted
  std::vector<std::optional<std::string>> names; ///< parallel to ids; nullopt: the name is NULL
  std::int64_t dense_base = 0;
  std::vector<std::uint32_t> dense; ///< id - dense_base -> index + 1 (0: none), when ids are dense

  /// The entry of `id`, or nullptr.
  const std::optional<std::string>* find(std::int64_t id) const {
    if (!dense.empty()) {
      const std::uint64_t slot =
          static_cast<std::uint64_t>(id) - static_cast<std::uint64_t>(dense_base);
      if (slot >= dense.size() || dense[slot] == 0) {
        return nullptr;
      }
      return &names[dense[slot] - 1];
    }
    const auto it = std::lower_bound(ids.begin(), ids.end(), id);
    if (it == ids.end() || *it != id) {
      return nullptr;
    }
    return &names[static_cast<std::size_t>(it - ids.begin())];
  }
};

} // namespace

struct reader::database {
  std::string file;
  sqlite::connection db;
  std::vector<source> sources;

  [[noreturn]] void fail(const std::string& problem, std::string_view fix) const {
    throw rocpd_error(file + ": " + problem + "; " + std::string(fix));
  }

  sqlite::statement prepare(const std::string& sql) const {
    try {
      return sqlite::statement(db, sql);
    } catch (const sqlite::sqlite_error& error) {
      fail("cannot query the rocpd tables (" + error.sqlite_message() + ")",
           "fix: the file may be damaged or from an unsupported rocpd version; re-record it with "
           "rocprofv3 from ROCm 7.x");
    }
  }

  /// The next row of `stmt`: false at the end.
  bool step(sqlite::statement& stmt) const {
    try {
      return stmt.step();
    } catch (const sqlite::sqlite_error& error) {
      fail("reading failed (" + error.sqlite_message() + ")",
           "fix: the file may be damaged or still being written; re-record it");
    }
  }

  /// Steps `stmt` to the end, calling `row` on each row.
  template <typename Row> void each(sqlite::statement& stmt, Row&& row) const {
    while (step(stmt)) {
      row(stmt);
    }
  }

  std::set<std::string> columns(const std::string& table) const {
    std::set<std::string> names;
    sqlite::statement stmt = prepare("PRAGMA table_info(" + table + ")");
    each(stmt, [&](const sqlite::statement& s) { names.insert(s.column_text(1)); });
    return names;
  }

  /// The listed columns of `base` as SQL, NULL where this schema variant lacks an optional one.
  std::string select_list(const source& src,
                          std::string_view base,
                          std::string_view alias,
                          const std::vector<std::string_view>& required,
                          const std::vector<std::string_view>& optional) const {
    const std::set<std::string> present = columns(src.table(base));
    std::string out;
    for (const std::string_view name : required) {
      if (present.count(std::string(name)) == 0) {
        fail("table " + std::string(base) + src.suffix + " has no column '" + std::string(name) +
                 "'",
             "fix: the file is not a complete rocpd schema 3 database; re-record it with rocprofv3 "
             "from ROCm 7.x");
      }
      out += (out.empty() ? "" : ", ") + std::string(alias) + "." + quote_identifier(name);
    }
    for (const std::string_view name : optional) {
      out += out.empty() ? "" : ", ";
      out += present.count(std::string(name)) != 0
                 ? std::string(alias) + "." + quote_identifier(name)
                 : std::string("NULL");
    }
    return out;
  }

  /// Opens `path` read-only and lists its tables and views; the first read of the schema is where
  /// SQLite notices a file that is not a database.
  schema_names open(const std::filesystem::path& path) {
    file = path.string();
    try {
      db = sqlite::connection(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX);
    } catch (const sqlite::sqlite_error& error) {
      fail("cannot open (" + error.sqlite_message() + ")", "fix: check that the file is readable");
    }
    schema_names names;
    try {
      sqlite::statement stmt(
          db, "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view')");
      while (stmt.step()) {
        (stmt.column_text_view(0) == "table" ? names.tables : names.views)
            .insert(stmt.column_text(1));
      }
    } catch (const sqlite::sqlite_error& error) {
      fail("not an SQLite database (" + error.sqlite_message() + ")", record_fix);
    }
    return names;
  }

  /// The kernel names of `src`'s symbol table, or `usable` false where only the SQL join reads them
  /// right.
  symbol_names symbol_names_of(const source& src) const;
  /// The schema_version of the metadata table of `suffix`, refused unless it is 3 or 3.0.x.
  std::string schema_version(const std::string& suffix) const;
  /// The uuid suffixes of a rocpd file (one per rocpd_metadata table), refusing other files.
  std::vector<std::string> suffixes(const schema_names& names) const;
  /// Every row of the metadata table of `suffix`, by tag (the last of a repeated tag).
  std::map<std::string, std::string> metadata(const std::string& suffix) const;
};

reader::reader() = default;
reader::reader(reader&&) noexcept = default;
reader& reader::operator=(reader&&) noexcept = default;
reader::~reader() = default;

namespace {

std::vector<std::filesystem::path> expand(const std::vector<std::filesystem::path>& paths) {
  if (paths.empty()) {
    throw rocpd_error("rocpd: no trace files given; fix: pass a rocprofv3 results.db file or the "
                      "output directory rocprofv3 wrote (-d DIR)");
  }
  std::vector<std::filesystem::path> files;
  for (const std::filesystem::path& path : paths) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(status)) {
      throw rocpd_error(path.string() +
                        ": no such file or directory; fix: check the path (rocprofv3 writes "
                        "<dir>/<hostname>/<pid>_results.db)");
    }
    if (std::filesystem::is_directory(status)) {
      std::vector<std::filesystem::path> found;
      for (auto it = std::filesystem::recursive_directory_iterator(
               path, std::filesystem::directory_options::skip_permission_denied, ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && it->path().extension() == ".db") {
          found.push_back(it->path());
        }
      }
      if (found.empty()) {
        throw rocpd_error(
            path.string() +
            ": directory holds no *.db file; fix: pass the directory rocprofv3 wrote "
            "(-d DIR; files are <DIR>/<hostname>/<pid>_results.db), or the .db files");
      }
      std::sort(found.begin(), found.end()); // a stable database order for a given directory
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(path);
    }
  }
  return files;
}

bool supported_version(std::string_view version) {
  return version == "3" || version.substr(0, 2) == "3.";
}

/// The tables every suffix must have: the ones this reader selects from.
constexpr std::string_view required_tables[] = {"rocpd_kernel_dispatch", "rocpd_info_kernel_symbol",
                                                "rocpd_info_agent",      "rocpd_info_queue",
                                                "rocpd_info_stream",     "rocpd_info_process"};

/// One suffix: read through the unsuffixed views rocprofv3 creates, when they are there. Several
/// suffixes: those views cover one of them at most, so each suffix's tables are read directly.
bool views_usable(const std::vector<std::string>& suffixes, const schema_names& names) {
  if (suffixes.size() != 1 || suffixes.front().empty()) {
    return false;
  }
  return std::all_of(
      std::begin(required_tables), std::end(required_tables),
      [&](std::string_view base) { return names.views.count(std::string(base)) != 0; });
}

} // namespace

std::vector<std::string> reader::database::suffixes(const schema_names& names) const {
  std::vector<std::string> found;
  bool has_event = false;
  for (const std::string& name : names.tables) {
    if (name == "rocpd_metadata" || name.rfind("rocpd_metadata_", 0) == 0) {
      found.push_back(name.substr(std::string_view("rocpd_metadata").size()));
    }
    has_event = has_event || name.rfind("rocpd_event", 0) == 0;
  }
  if (!has_event && (names.has("rocpd_api") || names.has("rocpd_op"))) {
    fail("not a rocpd database (no rocpd_metadata table with schema_version 3); it looks like "
         "a legacy RPD file (table rocpd_api)",
         "fix: record with rocprofv3 --output-format rocpd (ROCm 7.x)");
  }
  if (found.empty()) {
    fail("not a rocpd database (no rocpd_metadata table with schema_version 3)", record_fix);
  }
  return found;
}

std::string reader::database::schema_version(const std::string& suffix) const {
  std::string version;
  sqlite::statement stmt =
      prepare("SELECT value FROM " + quote_identifier("rocpd_metadata" + suffix) +
              " WHERE tag = 'schema_version'");
  each(stmt, [&](const sqlite::statement& s) { version = s.column_text(0); });
  if (version.empty()) {
    fail("not a rocpd database (table rocpd_metadata" + suffix + " has no schema_version)",
         record_fix);
  }
  if (!supported_version(version)) {
    fail("rocpd schema_version " + version +
             " is not supported (this reader reads schema 3, i.e. 3 to 3.0.x)",
         "fix: record with rocprofv3 --output-format rocpd from ROCm 7.x, which writes "
         "schema 3");
  }
  return version;
}

std::map<std::string, std::string> reader::database::metadata(const std::string& suffix) const {
  std::map<std::string, std::string> rows;
  sqlite::statement stmt = prepare("SELECT tag, value FROM " +
                                   quote_identifier("rocpd_metadata" + suffix) + " ORDER BY id");
  each(stmt, [&](const sqlite::statement& s) {
    if (const auto tag = s.column_nullable_text(0)) {
      rows[std::string(*tag)] = std::string(s.column_nullable_text(1).value_or(""));
    }
  });
  return rows;
}

namespace {

/// Whether a column declared `type` has numeric affinity (SQLite's rules, datatype3.html §3.1).
bool numeric_affinity(std::string type) {
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (type.find("INT") != std::string::npos) {
    return true;
  }
  const bool text = type.find("CHAR") != std::string::npos ||
                    type.find("CLOB") != std::string::npos ||
                    type.find("TEXT") != std::string::npos;
  return !text && !type.empty() && type.find("BLOB") == std::string::npos;
}

} // namespace

symbol_names reader::database::symbol_names_of(const source& src) const {
  symbol_names out;
  // The join matches only integer kernel_ids to integer symbol ids exactly where kernel_id has
  // numeric affinity (text stays text); any other declaration keeps the join.
  std::string kernel_id_type;
  bool kernel_id_found = false;
  {
    sqlite::statement stmt =
        prepare("PRAGMA table_info(" + src.table("rocpd_kernel_dispatch") + ")");
    each(stmt, [&](const sqlite::statement& s) {
      if (s.column_text_view(1) == "kernel_id") {
        kernel_id_type = s.column_text(2);
        kernel_id_found = true;
      }
    });
  }
  if (!kernel_id_found || !numeric_affinity(kernel_id_type)) {
    return out;
  }
  sqlite::statement stmt =
      prepare("SELECT S.id, S.guid, COALESCE(NULLIF(S.display_name, ''), S.kernel_name) FROM " +
              src.table("rocpd_info_kernel_symbol") + " S");
  std::vector<std::pair<std::int64_t, std::optional<std::string>>> rows;
  bool exact = true;
  each(stmt, [&](const sqlite::statement& s) {
    const int id_type = sqlite3_column_type(s.handle(), 0);
    const int guid_type = sqlite3_column_type(s.handle(), 1);
    if (id_type == SQLITE_NULL || guid_type == SQLITE_NULL) {
      return; // `S.id = ...` or `S.guid = ...` is never true: the join never picks this row
    }
    if (id_type != SQLITE_INTEGER || guid_type != SQLITE_TEXT) {
      exact = false;
      return;
    }
    const std::string_view guid = s.column_text_view(1);
    if (!out.guid) {
      out.guid = std::string(guid);
    } else if (*out.guid != guid) {
      exact = false; // several guids in one table: which one a dispatch matches is the join's job
      return;
    }
    std::optional<std::string> name;
    if (const std::optional<std::string_view> text = s.column_nullable_text(2)) {
      name = std::string(*text);
    }
    rows.emplace_back(s.column_int64(0), std::move(name));
  });
  if (!exact) {
    return out;
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].first == rows[i - 1].first) {
      return out; // an id twice: the join yields the dispatch once per symbol row
    }
  }
  out.ids.reserve(rows.size());
  out.names.reserve(rows.size());
  for (auto& [id, name] : rows) {
    out.ids.push_back(id);
    out.names.push_back(std::move(name));
  }
  // A direct index when the ids are dense (rocprofiler numbers kernels from 1); memory stays
  // within a small multiple of the symbol count either way.
  if (!out.ids.empty()) {
    const auto span =
        static_cast<std::uint64_t>(out.ids.back()) - static_cast<std::uint64_t>(out.ids.front());
    if (span < 4 * static_cast<std::uint64_t>(out.ids.size()) + 1024) {
      out.dense_base = out.ids.front();
      out.dense.assign(static_cast<std::size_t>(span) + 1, 0);
      for (std::size_t i = 0; i < out.ids.size(); ++i) {
        out.dense[static_cast<std::uint64_t>(out.ids[i]) -
                  static_cast<std::uint64_t>(out.dense_base)] = static_cast<std::uint32_t>(i + 1);
      }
    }
  }
  out.usable = true;
  return out;
}

reader reader::open(const std::vector<std::filesystem::path>& paths) {
  reader result;
  result.paths_ = expand(paths);
  for (const std::filesystem::path& path : result.paths_) {
    auto db = std::make_unique<database>();
    const schema_names names = db->open(path);
    database_info info;
    info.path = path;
    const std::vector<std::string> suffixes = db->suffixes(names);
    for (const std::string& suffix : suffixes) {
      const std::string version = db->schema_version(suffix);
      if (info.schema_version.empty()) {
        info.schema_version = version;
        info.metadata = db->metadata(suffix);
      }
      for (const std::string_view base : required_tables) {
        if (names.tables.count(std::string(base) + suffix) == 0) {
          db->fail("rocpd table " + std::string(base) + suffix + " is missing",
                   "fix: the file is incomplete (was the profiled process killed before rocprofv3 "
                   "finished writing?); re-record it");
        }
      }
      info.uuids.push_back(suffix);
    }
    const bool views_ok = views_usable(suffixes, names);
    for (const std::string& suffix : suffixes) {
      db->sources.push_back(source{suffix, views_ok});
    }
    result.infos_.push_back(std::move(info));
    result.databases_.push_back(std::move(db));
  }
  return result;
}

void reader::for_each_dispatch(const std::function<void(const dispatch_row&)>& visit,
                               dispatch_fields fields) const {
  const bool all = fields == dispatch_fields::all;
  const bool shapes = all || fields == dispatch_fields::report;
  // Read in this order: the accounting fields, then the report's, then the rest, so that each
  // selection is a prefix of the next and a field has the same index in all of them.
  const std::vector<std::string_view> accounting_columns = {
      "start", "end", "kernel_id", "agent_id", "queue_id", "stream_id", "pid", "id"};
  const std::vector<std::string_view> shape_columns = {"grid_size_x",      "grid_size_y",
                                                       "grid_size_z",      "workgroup_size_x",
                                                       "workgroup_size_y", "workgroup_size_z"};
  const std::vector<std::string_view> required_columns = {"start",
                                                          "end",
                                                          "kernel_id",
                                                          "agent_id",
                                                          "queue_id",
                                                          "stream_id",
                                                          "pid",
                                                          "id",
                                                          "dispatch_id",
                                                          "grid_size_x",
                                                          "grid_size_y",
                                                          "grid_size_z",
                                                          "workgroup_size_x",
                                                          "workgroup_size_y",
                                                          "workgroup_size_z",
                                                          "guid"};
  const std::vector<std::string_view> optional_columns = {"tid", "group_segment_size",
                                                          "private_segment_size"};
  const int name_column = all ? 19 : shapes ? 16 : 8;
  for (std::size_t index = 0; index < databases_.size(); ++index) {
    const database& db = *databases_[index];
    for (std::size_t source_index = 0; source_index < db.sources.size(); ++source_index) {
      const source& src = db.sources[source_index];
      // Selected by name, so the 3.0.2 columns inserted before region_name_id change nothing.
      // Every column is checked even where fewer are read: a file reads or fails alike either way.
      db.select_list(src, "rocpd_kernel_dispatch", "K", required_columns, optional_columns);
      std::vector<std::string_view> read = accounting_columns;
      if (shapes)
        read.insert(read.end(), shape_columns.begin(), shape_columns.end());
      std::string columns =
          db.select_list(src, "rocpd_kernel_dispatch", "K", read,
                         shapes ? std::vector<std::string_view>{"group_segment_size", "event_id"}
                                : std::vector<std::string_view>{});
      if (all)
        columns += ", " + db.select_list(src, "rocpd_kernel_dispatch", "K", {"dispatch_id"},
                                         {"tid", "private_segment_size"});
      const symbol_names symbols = db.symbol_names_of(src);
      dispatch_row row;
      row.database = index;
      row.source = source_index;
      auto read_columns = [&row, all, shapes](const sqlite::statement& s) {
        row.start_ns = s.column_int64(0);
        row.end_ns = s.column_int64(1);
        row.kernel_id = s.column_int64(2);
        row.agent_id = s.column_int64(3);
        row.queue_id = s.column_int64(4);
        row.stream_id = s.column_int64(5);
        row.pid = s.column_int64(6);
        row.row_id = s.column_int64(7);
        if (!shapes) {
          return;
        }
        for (int axis = 0; axis < 3; ++axis) {
          row.grid[axis] = column_u32(s, 8 + axis);
          row.workgroup[axis] = column_u32(s, 11 + axis);
        }
        row.group_segment_size = s.column_int64(14);
        // column_int64 reads NULL as 0: only a 0 needs the type asked.
        row.event_id = s.column_int64(15);
        row.has_event = row.event_id != 0 || !s.column_is_null(15);
        if (!all) {
          return;
        }
        row.dispatch_id = s.column_int64(16);
        row.tid = s.column_int64(17);
        row.private_segment_size = s.column_int64(18);
      };
      // A dispatch whose symbol row is missing still counts, under a name that says so.
      std::string fallback;
      std::int64_t fallback_id = 0;
      auto unknown_name = [&](std::int64_t kernel_id) -> std::string_view {
        if (fallback.empty() || fallback_id != kernel_id) {
          fallback = "<unknown kernel " + std::to_string(kernel_id) + ">";
          fallback_id = kernel_id;
        }
        return fallback;
      };

      if (!symbols.usable) {
        const std::string sql =
            "SELECT " + columns + ", COALESCE(NULLIF(S.display_name, ''), S.kernel_name) FROM " +
            src.table("rocpd_kernel_dispatch") + " K LEFT JOIN " +
            src.table("rocpd_info_kernel_symbol") + " S ON S.id = K.kernel_id AND S.guid = K.guid";
        sqlite::statement stmt = db.prepare(sql);
        db.each(stmt, [&](const sqlite::statement& s) {
          read_columns(s);
          const std::optional<std::string_view> name = s.column_nullable_text(name_column);
          row.symbol_found = name.has_value();
          row.kernel_name = name ? *name : unknown_name(row.kernel_id);
          visit(row);
        });
        continue;
      }

      // The last column says whether the row's guid is the symbols' one (NULL when there is none),
      // with the comparison the join's `S.guid = K.guid` makes; the id is matched here, and only an
      // integer kernel_id can equal an integer symbol id (see symbol_names_of).
      sqlite::statement stmt = db.prepare("SELECT " + columns + ", K.\"guid\" = ?1 FROM " +
                                          src.table("rocpd_kernel_dispatch") + " K");
      if (symbols.guid) {
        stmt.bind_static_text(1, *symbols.guid);
      }
      std::int64_t last_id = 0;
      const std::optional<std::string>* last = nullptr;
      db.each(stmt, [&](const sqlite::statement& s) {
        read_columns(s);
        const std::optional<std::string>* entry = nullptr;
        if (s.column_int64(name_column) != 0 && integral(s, 2)) {
          // Consecutive dispatches often run the same kernel.
          if (last == nullptr || last_id != row.kernel_id) {
            last = symbols.find(row.kernel_id);
            last_id = row.kernel_id;
          }
          entry = last;
        }
        row.symbol_found = entry != nullptr && entry->has_value();
        row.kernel_name =
            row.symbol_found ? std::string_view(**entry) : unknown_name(row.kernel_id);
        visit(row);
      });
    }
  }
}

std::vector<agent_row> reader::agents() const {
  std::vector<agent_row> rows;
  for (std::size_t index = 0; index < databases_.size(); ++index) {
    const database& db = *databases_[index];
    for (const source& src : db.sources) {
      const std::string columns =
          db.select_list(src, "rocpd_info_agent", "A", {"id"},
                         {"type", "name", "model_name", "product_name", "absolute_index",
                          "logical_index", "type_index", "extdata"});
      sqlite::statement stmt = db.prepare("SELECT " + columns + " FROM " +
                                          src.table("rocpd_info_agent") + " A ORDER BY A.id");
      db.each(stmt, [&](const sqlite::statement& s) {
        agent_row row;
        row.database = index;
        row.id = s.column_int64(0);
        row.type = s.column_text(1);
        row.name = s.column_text(2);
        row.model_name = s.column_text(3);
        row.product_name = s.column_text(4);
        row.absolute_index = s.column_int64(5);
        row.logical_index = s.column_int64(6);
        row.type_index = s.column_int64(7);
        // Malformed JSON in one agent must not make the whole trace unreadable.
        row.extdata = nlohmann::json::parse(s.column_text(8), nullptr, false);
        if (row.extdata.is_discarded() || !row.extdata.is_object()) {
          row.extdata = nlohmann::json::object();
        }
        rows.push_back(std::move(row));
      });
    }
  }
  return rows;
}

std::vector<kernel_symbol_row> reader::kernel_symbols() const {
  std::vector<kernel_symbol_row> rows;
  for (std::size_t index = 0; index < databases_.size(); ++index) {
    const database& db = *databases_[index];
    for (const source& src : db.sources) {
      const std::string columns = db.select_list(
          src, "rocpd_info_kernel_symbol", "S", {"id", "kernel_name", "display_name"},
          {"pid", "code_object_id", "sgpr_count", "arch_vgpr_count", "accum_vgpr_count",
           "group_segment_size", "private_segment_size", "kernarg_segment_size"});
      sqlite::statement stmt =
          db.prepare("SELECT " + columns + " FROM " + src.table("rocpd_info_kernel_symbol") +
                     " S ORDER BY S.id");
      db.each(stmt, [&](const sqlite::statement& s) {
        kernel_symbol_row row;
        row.database = index;
        row.id = s.column_int64(0);
        row.kernel_name = s.column_text(1);
        row.display_name = s.column_text(2);
        if (row.display_name.empty()) {
          row.display_name = row.kernel_name;
        }
        row.pid = s.column_int64(3);
        row.code_object_id = s.column_int64(4);
        row.sgpr_count = s.column_int64(5);
        row.arch_vgpr_count = s.column_int64(6);
        row.accum_vgpr_count = s.column_int64(7);
        row.group_segment_size = s.column_int64(8);
        row.private_segment_size = s.column_int64(9);
        row.kernarg_segment_size = s.column_int64(10);
        rows.push_back(std::move(row));
      });
    }
  }
  return rows;
}

std::vector<queue_row> reader::queues() const {
  std::vector<queue_row> rows;
  for (std::size_t index = 0; index < databases_.size(); ++index) {
    const database& db = *databases_[index];
    for (const source& src : db.sources) {
      const std::string columns =
          db.select_list(src, "rocpd_info_queue", "Q", {"id", "pid"}, {"name"});
      sqlite::statement stmt = db.prepare("SELECT " + columns + " FROM " +
                                          src.table("rocpd_info_queue") + " Q ORDER BY Q.id");
      db.each(stmt, [&](const sqlite::statement& s) {
        rows.push_back(queue_row{index, s.column_int64(0), s.column_int64(1), s.column_text(2)});
      });
    }
  }
  return rows;
}

std::vector<stream_row> reader::streams() const {
  std::vector<stream_row> rows;
  for (std::size_t index = 0; index < databases_.size(); ++index) {
    const database& db = *databases_[index];
    for (const source& src : db.sources) {
      const std::string columns =
          db.select_list(src, "rocpd_info_stream", "T", {"id", "pid"}, {"name"});
      sqlite::statement stmt = db.prepare("SELECT " + columns + " FROM " +
                                          src.table("rocpd_info_stream") + " T ORDER BY T.id");
      db.each(stmt, [&](const sqlite::statement& s) {
        rows.push_back(stream_row{index, s.column_int64(0), s.column_int64(1), s.column_text(2)});
      });
    }
  }
  return rows;
}

std::vector<process_row> reader::processes() const {
  std::vector<process_row> rows;
  for (std::size_t index = 0; index < databases_.size(); ++index) {
    const database& db = *databases_[index];
    for (const source& src : db.sources) {
      const std::string columns =
          db.select_list(src, "rocpd_info_process", "P", {"pid"}, {"ppid", "command"});
      std::string sql = "SELECT " + columns;
      // The hostname lives in the node table; a file without one still lists its processes.
      const std::set<std::string> node_columns = db.columns(src.table("rocpd_info_node"));
      const bool with_node = node_columns.count("hostname") != 0 && node_columns.count("guid") != 0;
      sql += with_node ? ", N.hostname" : ", NULL";
      sql += " FROM " + src.table("rocpd_info_process") + " P";
      if (with_node) {
        sql +=
            " LEFT JOIN " + src.table("rocpd_info_node") + " N ON N.id = P.nid AND N.guid = P.guid";
      }
      sqlite::statement stmt = db.prepare(sql + " ORDER BY P.pid");
      db.each(stmt, [&](const sqlite::statement& s) {
        rows.push_back(process_row{index, s.column_int64(0), s.column_int64(1), s.column_text(2),
                                   s.column_text(3)});
      });
    }
  }
  return rows;
}

std::size_t reader::dispatch_count() const {
  std::size_t count = 0;
  for (const auto& db : databases_) {
    for (const source& src : db->sources) {
      sqlite::statement stmt =
          db->prepare("SELECT COUNT(*) FROM " + src.table("rocpd_kernel_dispatch"));
      db->each(stmt, [&](const sqlite::statement& s) {
        count += static_cast<std::size_t>(s.column_int64(0));
      });
    }
  }
  return count;
}

const std::vector<std::filesystem::path>& reader::paths() const {
  return paths_;
}
const std::vector<database_info>& reader::databases() const {
  return infos_;
}

} // namespace rpl::stages::rocpd
