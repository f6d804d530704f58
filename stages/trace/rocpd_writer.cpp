#include "stages/trace/rocpd_writer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <unistd.h>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "stages/sqlite/sqlite_statement.hpp"

namespace rpl::stages::rocpd {
namespace {

/// FNV-1a: a stable hash, so a machine id maps to the same node id in every build.
std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t hash = 1469598103934665603ull;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

/// One INSERT into one table. Values are collected per row; with `batch_rows` > 1 the rows are
/// buffered and written `batch_rows` at a time by one multi-row statement. That matters because
/// AUTOINCREMENT (kept to match rocprofv3's schema) makes every statement execution look up and
/// store sqlite_sequence: per-row statements spent most of their time there. Batched tables must
/// take explicit ids, since no rowid comes back per row; their errors surface at the flush.
class insert {
public:
  insert() = default;
  insert(sqlite::connection& db,
         std::string table,
         std::string_view columns,
         std::size_t batch_rows,
         const std::string& file,
         const char* what)
      : db_(&db), table_(std::move(table)), columns_text_(columns), file_(&file), what_(what),
        batch_rows_(batch_rows) {
    columns_ = 1;
    for (const char c : columns) {
      columns_ += c == ',' ? 1 : 0;
    }
    single_ = prepare(1);
    if (batch_rows_ > 1) {
      multi_ = prepare(batch_rows_);
    }
    cells_.reserve(columns_ * batch_rows_);
  }
  insert& i64(std::int64_t value) {
    cells_.emplace_back(value);
    return *this;
  }
  /// -1 means "not known": NULL, or for an id column, SQLite's next rowid.
  insert& opt(std::int64_t value) {
    if (value == -1) {
      cells_.emplace_back(std::monostate{});
    } else {
      cells_.emplace_back(value);
    }
    return *this;
  }
  insert& real(double value) {
    cells_.emplace_back(value);
    return *this;
  }
  insert& text(std::string_view value) {
    cells_.emplace_back(std::string(value));
    return *this;
  }
  insert& json_text(std::string_view value) {
    return text(value.empty() ? std::string_view("{}") : value);
  }
  insert& json(const nlohmann::json& value) {
    return text(value.is_null() ? std::string("{}") : value.dump());
  }
  /// Ends the row. Unbatched: writes it and returns its id. Batched: writes when the batch is full
  /// and returns 0 (the caller knows the explicit id).
  std::int64_t run() {
    if (batch_rows_ <= 1) {
      execute(single_, 0, 1);
      cells_.clear();
      return db_->last_insert_rowid();
    }
    if (cells_.size() == columns_ * batch_rows_) {
      execute(multi_, 0, batch_rows_);
      cells_.clear();
    }
    return 0;
  }
  /// Writes the buffered rows of a batched table.
  void flush() {
    const std::size_t rows = columns_ == 0 ? 0 : cells_.size() / columns_;
    for (std::size_t row = 0; row < rows; ++row) {
      execute(single_, row * columns_, 1);
    }
    cells_.clear();
  }

private:
  using cell = std::variant<std::monostate, std::int64_t, double, std::string>;

  sqlite::statement prepare(std::size_t rows) const {
    std::string sql = "INSERT INTO " + table_ + " (" + columns_text_ + ") VALUES ";
    for (std::size_t row = 0; row < rows; ++row) {
      sql += row == 0 ? "(" : ", (";
      for (std::size_t column = 0; column < columns_; ++column) {
        sql += column == 0 ? "?" : ", ?";
      }
      sql += ")";
    }
    try {
      return sqlite::statement(*db_, sql, SQLITE_PREPARE_PERSISTENT);
    } catch (const sqlite::sqlite_error& error) {
      throw rocpd_error(*file_ + ": cannot prepare the insert into " + table_ + ": " +
                        error.sqlite_message() +
                        "; fix: this is a bug in the rocpd writer, please report it");
    }
  }

  void execute(sqlite::statement& stmt, std::size_t first_cell, std::size_t rows) {
    try {
      for (std::size_t i = 0; i < rows * columns_; ++i) {
        const int index = static_cast<int>(i + 1);
        const cell& value = cells_[first_cell + i];
        if (const auto* integer = std::get_if<std::int64_t>(&value)) {
          stmt.bind_int64(index, *integer);
        } else if (const auto* real_value = std::get_if<double>(&value)) {
          stmt.bind_double(index, *real_value);
        } else if (const auto* text_value = std::get_if<std::string>(&value)) {
          stmt.bind_static_text(index, *text_value); // the cell outlives the step below
        } else {
          stmt.bind_null(index);
        }
      }
      stmt.step();
      stmt.reset();
    } catch (const sqlite::sqlite_error& error) {
      stmt.reset();
      cells_.clear();
      throw rocpd_error(*file_ + ": cannot write " + what_ + ": " + error.sqlite_message() +
                        "; fix: check the ids (each must be unique in its table) and that the disk "
                        "is writable");
    }
  }

  sqlite::connection* db_ = nullptr;
  std::string table_;
  std::string columns_text_;
  const std::string* file_ = nullptr;
  const char* what_ = "";
  std::size_t batch_rows_ = 1;
  std::size_t columns_ = 0;
  std::vector<cell> cells_;
  sqlite::statement single_;
  sqlite::statement multi_;
};

std::string normalize_guid(std::string uuid) {
  if (!uuid.empty() && uuid.front() == '_') {
    uuid.erase(0, 1);
  }
  for (char& c : uuid) {
    if (c == '_') {
      c = '-';
    }
  }
  return uuid;
}

/// Lets the string map be searched with a string_view, without building a std::string per lookup.
struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const {
    return std::hash<std::string_view>{}(text);
  }
};

} // namespace

struct writer::impl {
  std::filesystem::path path;
  std::string file; // path as text, for messages
  std::string guid;
  std::string suffix;
  sqlite::connection db;
  bool in_transaction = false;

  std::unordered_map<std::string, std::int64_t, string_hash, std::equal_to<>> strings;
  std::int64_t empty_string_id = 0;
  std::int64_t last_nid = 0;
  std::int64_t last_pid = 0;
  std::int64_t last_tid = 0;
  std::int64_t last_event = 0;
  // Batched tables take explicit ids (see insert): running counters like rocprofv3's.
  std::int64_t next_event_id = 1;
  std::int64_t next_dispatch_id = 1;
  std::int64_t next_region_id = 1;
  std::int64_t next_copy_id = 1;
  std::int64_t next_pmc_event_id = 1;

  insert metadata_insert, string_insert, node_insert, process_insert, thread_insert, agent_insert,
      queue_insert, stream_insert, code_object_insert, symbol_insert, event_insert, dispatch_insert,
      copy_insert, region_insert, pmc_info_insert, pmc_event_insert, arg_insert;

  ~impl() {
    if (db && in_transaction) {
      try {
        flush();
      } catch (const rocpd_error&) {
        // A destructor cannot report; commit() is where callers see write errors.
      }
      sqlite3_exec(db.handle(), "COMMIT", nullptr, nullptr, nullptr);
    }
    // The connection closes after the member statements are finalized (close_v2 defers it anyway).
  }

  void exec(const std::string& sql, const char* what) {
    try {
      db.exec(sql);
    } catch (const sqlite::sqlite_error& error) {
      throw rocpd_error(file + ": cannot " + what + ": " + error.sqlite_message() +
                        "; fix: check that the folder is writable and the disk is not full");
    }
  }

  insert prepare(std::string_view table,
                 std::string_view columns,
                 const char* what,
                 std::size_t batch_rows = 1) {
    return insert(db, std::string(table) + suffix, columns, batch_rows, file, what);
  }

  /// Writes the rows the batched tables still buffer (before a commit, and at the end).
  void flush() {
    event_insert.flush();
    dispatch_insert.flush();
    region_insert.flush();
    copy_insert.flush();
    pmc_event_insert.flush();
    arg_insert.flush();
  }

  std::int64_t nid(std::int64_t value) const { return value != 0 ? value : last_nid; }
  std::int64_t pid(std::int64_t value) const { return value != 0 ? value : last_pid; }
  std::int64_t tid(std::int64_t value) const { return value != 0 ? value : last_tid; }

  std::int64_t intern(std::string_view text) {
    if (text.empty() && empty_string_id != 0) {
      return empty_string_id; // the region name of nearly every dispatch
    }
    if (const auto it = strings.find(text); it != strings.end()) {
      return it->second;
    }
    const std::int64_t id = string_insert.text(text).run();
    strings.emplace(std::string(text), id);
    return id;
  }

  std::int64_t event(std::string_view category,
                     std::int64_t stack_id,
                     std::int64_t parent_stack_id,
                     std::int64_t correlation_id,
                     std::string_view extdata) {
    const std::int64_t category_id = intern(category);
    last_event = next_event_id++;
    event_insert.i64(last_event)
        .i64(category_id)
        .i64(stack_id)
        .i64(parent_stack_id)
        .i64(correlation_id)
        .json_text(extdata)
        .run();
    return last_event;
  }
};

writer::writer(const std::filesystem::path& path, std::string uuid)
    : impl_(std::make_unique<impl>()) {
  impl& w = *impl_;
  w.path = path;
  w.file = path.string();
  w.guid = normalize_guid(uuid.empty() ? generate_uuid() : std::move(uuid));
  w.suffix = "_" + w.guid;
  for (char& c : w.suffix) {
    if (c == '-') {
      c = '_';
    }
  }
  std::error_code ec;
  std::filesystem::remove(path, ec); // rocprofv3 replaces an existing file too
  try {
    w.db =
        sqlite::connection(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX);
  } catch (const sqlite::sqlite_error& error) {
    throw rocpd_error(w.file + ": cannot create the rocpd database: " + error.sqlite_message() +
                      "; fix: check that the folder exists and is writable");
  }
  // The file is written in one go and is useless if the writer dies midway, so durability per
  // statement buys nothing; this is what makes a million rows a matter of seconds.
  w.exec("PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF; PRAGMA cache_size = -65536;",
         "set up the connection");
  w.exec("BEGIN", "begin a transaction");
  w.in_transaction = true;
  w.exec(rocpd_schema_sql(w.suffix, w.guid), "create the rocpd schema");

  constexpr std::size_t batch = 64; // rows per statement for the high-volume tables
  w.metadata_insert = w.prepare("rocpd_metadata", "tag, value", "a metadata row");
  w.string_insert = w.prepare("rocpd_string", "string", "a string");
  w.node_insert = w.prepare("rocpd_info_node",
                            "id, hash, machine_id, system_name, hostname, "
                            "release, version, hardware_name, domain_name",
                            "a node");
  w.process_insert = w.prepare("rocpd_info_process",
                               "id, nid, ppid, pid, init, fini, start, \"end\", "
                               "command, environment, extdata",
                               "a process");
  w.thread_insert = w.prepare("rocpd_info_thread",
                              "id, nid, ppid, pid, tid, name, start, \"end\", extdata", "a thread");
  w.agent_insert = w.prepare("rocpd_info_agent",
                             "id, nid, pid, type, absolute_index, logical_index, type_index, uuid, "
                             "name, model_name, vendor_name, product_name, user_name, extdata",
                             "an agent");
  w.queue_insert = w.prepare("rocpd_info_queue", "id, nid, pid, name", "a queue");
  w.stream_insert = w.prepare("rocpd_info_stream", "id, nid, pid, name", "a stream");
  w.code_object_insert = w.prepare("rocpd_info_code_object",
                                   "id, nid, pid, agent_id, uri, load_base, load_size, "
                                   "load_delta, storage_type, extdata",
                                   "a code object");
  w.symbol_insert =
      w.prepare("rocpd_info_kernel_symbol",
                "id, nid, pid, code_object_id, kernel_name, display_name, kernel_object, "
                "kernarg_segment_size, "
                "kernarg_segment_alignment, group_segment_size, private_segment_size, sgpr_count, "
                "arch_vgpr_count, accum_vgpr_count, extdata",
                "a kernel symbol");
  w.event_insert = w.prepare("rocpd_event",
                             "id, category_id, stack_id, parent_stack_id, correlation_id, extdata",
                             "events", batch);
  w.dispatch_insert = w.prepare(
      "rocpd_kernel_dispatch",
      "id, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, \"end\", "
      "private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, "
      "workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, region_name_id, event_id, extdata",
      "kernel dispatches", batch);
  w.copy_insert =
      w.prepare("rocpd_memory_copy",
                "id, nid, pid, tid, start, \"end\", name_id, dst_agent_id, dst_address, "
                "src_agent_id, src_address, size, queue_id, stream_id, region_name_id, "
                "event_id",
                "memory copies", batch);
  w.region_insert = w.prepare(
      "rocpd_region", "id, nid, pid, tid, start, \"end\", name_id, event_id", "regions", batch);
  w.pmc_info_insert = w.prepare("rocpd_info_pmc",
                                "id, nid, pid, agent_id, target_arch, name, symbol, description, "
                                "component, value_type, block, expression, is_constant, "
                                "is_derived, extdata",
                                "a counter definition");
  w.pmc_event_insert =
      w.prepare("rocpd_pmc_event", "id, event_id, pmc_id, value", "counter values", batch);
  w.arg_insert = w.prepare("rocpd_arg", "event_id, position, type, name, value, extdata",
                           "API call arguments", batch);
  // rocprofv3 always inserts the empty string: the region name of a dispatch without a region.
  w.empty_string_id = w.intern("");
}

writer::~writer() = default;
writer::writer(writer&&) noexcept = default;
writer& writer::operator=(writer&&) noexcept = default;

std::int64_t writer::add_node(const node_info& node) {
  impl& w = *impl_;
  const std::uint64_t h = fnv1a(node.machine_id);
  const std::int64_t id = node.id != -1 ? node.id : static_cast<std::int64_t>(h % (1ull << 32));
  const std::int64_t hash =
      node.hash != -1 ? node.hash
                      : static_cast<std::int64_t>(h % static_cast<std::uint64_t>(INT64_MAX));
  w.node_insert.i64(id)
      .i64(hash)
      .text(node.machine_id)
      .text(node.system_name)
      .text(node.hostname)
      .text(node.release)
      .text(node.version)
      .text(node.hardware_name)
      .text(node.domain_name)
      .run();
  w.last_nid = id;
  return id;
}

std::int64_t writer::add_process(const process_info& process) {
  impl& w = *impl_;
  w.process_insert.i64(process.pid)
      .i64(w.nid(process.nid))
      .i64(process.ppid)
      .i64(process.pid)
      .i64(process.init_ns)
      .i64(process.fini_ns)
      .i64(process.start_ns)
      .i64(process.end_ns)
      .text(process.command)
      .json(process.environment)
      .json(process.extdata)
      .run();
  w.last_pid = process.pid;
  if (process.default_queue_and_stream) {
    add_queue(process.pid, "Default Queue", 0);
    add_stream(process.pid, "Default Stream", 0);
  }
  return process.pid;
}

std::int64_t writer::add_thread(const thread_info& thread) {
  impl& w = *impl_;
  const std::int64_t pid = w.pid(thread.pid);
  w.thread_insert.i64(thread.tid)
      .i64(w.nid(thread.nid))
      .i64(thread.ppid)
      .i64(pid)
      .i64(thread.tid)
      .text(thread.name)
      .i64(thread.start_ns)
      .i64(thread.end_ns)
      .json(thread.extdata)
      .run();
  w.last_tid = thread.tid;
  return thread.tid;
}

std::int64_t writer::add_agent(const agent_info& agent) {
  impl& w = *impl_;
  return w.agent_insert.i64(agent.id != -1 ? agent.id : agent.absolute_index)
      .i64(w.nid(agent.nid))
      .i64(w.pid(agent.pid))
      .text(agent.type)
      .i64(agent.absolute_index)
      .i64(agent.logical_index)
      .i64(agent.type_index)
      .i64(agent.uuid)
      .text(agent.name)
      .text(agent.model_name)
      .text(agent.vendor_name)
      .text(agent.product_name)
      .text(agent.user_name.empty() ? agent.product_name : agent.user_name)
      .json(agent.extdata)
      .run();
}

std::int64_t writer::add_queue(std::int64_t pid, std::string_view name, std::int64_t id) {
  impl& w = *impl_;
  return w.queue_insert.opt(id).i64(w.last_nid).i64(w.pid(pid)).text(name).run();
}

std::int64_t writer::add_stream(std::int64_t pid, std::string_view name, std::int64_t id) {
  impl& w = *impl_;
  return w.stream_insert.opt(id).i64(w.last_nid).i64(w.pid(pid)).text(name).run();
}

std::int64_t writer::add_code_object(const code_object_info& code_object) {
  impl& w = *impl_;
  return w.code_object_insert.opt(code_object.id)
      .i64(w.nid(code_object.nid))
      .i64(w.pid(code_object.pid))
      .i64(code_object.agent_id)
      .text(code_object.uri)
      .i64(code_object.load_base)
      .i64(code_object.load_size)
      .i64(code_object.load_delta)
      .text(code_object.storage_type)
      .json(code_object.extdata)
      .run();
}

std::int64_t writer::add_kernel_symbol(const kernel_symbol_info& symbol) {
  impl& w = *impl_;
  return w.symbol_insert.opt(symbol.id)
      .i64(w.nid(symbol.nid))
      .i64(w.pid(symbol.pid))
      .i64(symbol.code_object_id)
      .text(symbol.kernel_name)
      .text(symbol.display_name.empty() ? symbol.kernel_name : symbol.display_name)
      .i64(symbol.kernel_object)
      .i64(symbol.kernarg_segment_size)
      .i64(symbol.kernarg_segment_alignment)
      .i64(symbol.group_segment_size)
      .i64(symbol.private_segment_size)
      .i64(symbol.sgpr_count)
      .i64(symbol.arch_vgpr_count)
      .i64(symbol.accum_vgpr_count)
      .json(symbol.extdata)
      .run();
}

std::int64_t writer::add_string(std::string_view text) {
  return impl_->intern(text);
}

std::int64_t writer::add_event(const event_info& event) {
  return impl_->event(event.category, event.stack_id, event.parent_stack_id, event.correlation_id,
                      event.extdata);
}

std::int64_t writer::add_event(std::string_view category,
                               std::int64_t correlation_id,
                               const nlohmann::json& extdata) {
  const std::string text = extdata.is_null() ? std::string("{}") : extdata.dump();
  return impl_->event(category, 0, 0, correlation_id, text);
}

std::int64_t writer::add_dispatch(const dispatch_info& dispatch) {
  impl& w = *impl_;
  const std::int64_t dispatch_id =
      dispatch.dispatch_id != 0 ? dispatch.dispatch_id : w.next_dispatch_id;
  w.next_dispatch_id = dispatch_id + 1;
  std::int64_t event_id = dispatch.event_id;
  if (event_id == 0) {
    event_id = w.event("KERNEL_DISPATCH", dispatch.correlation_id, dispatch.correlation_id,
                       dispatch.external_correlation_id, {});
  } else {
    w.last_event = event_id;
  }
  w.dispatch_insert.i64(dispatch_id)
      .i64(w.nid(dispatch.nid))
      .i64(w.pid(dispatch.pid))
      .i64(w.tid(dispatch.tid))
      .i64(dispatch.agent_id)
      .i64(dispatch.kernel_id)
      .i64(dispatch_id)
      .i64(dispatch.queue_id)
      .i64(dispatch.stream_id)
      .i64(dispatch.start_ns)
      .i64(dispatch.end_ns)
      .i64(dispatch.private_segment_size)
      .i64(dispatch.group_segment_size)
      .i64(dispatch.workgroup[0])
      .i64(dispatch.workgroup[1])
      .i64(dispatch.workgroup[2])
      .i64(dispatch.grid[0])
      .i64(dispatch.grid[1])
      .i64(dispatch.grid[2])
      .i64(w.intern(dispatch.region_name))
      .i64(event_id)
      .json_text(dispatch.extdata)
      .run();
  return dispatch_id;
}

std::int64_t writer::add_memory_copy(const memory_copy_info& copy) {
  impl& w = *impl_;
  std::int64_t event_id = copy.event_id;
  if (event_id == 0) {
    event_id = w.event("MEMORY_COPY", copy.correlation_id, copy.correlation_id,
                       copy.external_correlation_id, {});
  } else {
    w.last_event = event_id;
  }
  const std::int64_t name_id = w.intern(copy.name);
  const std::int64_t region_id = w.intern(copy.region_name);
  const std::int64_t id = copy.id != -1 ? copy.id : w.next_copy_id;
  w.next_copy_id = std::max(w.next_copy_id, id + 1);
  w.copy_insert.i64(id)
      .i64(w.nid(copy.nid))
      .i64(w.pid(copy.pid))
      .i64(w.tid(copy.tid))
      .i64(copy.start_ns)
      .i64(copy.end_ns)
      .i64(name_id)
      .i64(copy.dst_agent_id)
      .i64(copy.dst_address)
      .i64(copy.src_agent_id)
      .i64(copy.src_address)
      .i64(copy.size_bytes)
      .opt(copy.queue_id)
      .i64(copy.stream_id)
      .i64(region_id)
      .i64(event_id)
      .run();
  return id;
}

std::int64_t writer::add_region(const region_info& region) {
  impl& w = *impl_;
  std::int64_t event_id = region.event_id;
  if (event_id == 0) {
    event_id = w.event(region.category, region.correlation_id, 0, region.external_correlation_id,
                       region.event_extdata);
  } else {
    w.last_event = event_id;
  }
  const std::int64_t name_id = w.intern(region.name);
  const std::int64_t id =
      region.id != -1 ? region.id
                      : (region.correlation_id != 0 ? region.correlation_id : w.next_region_id);
  w.next_region_id = std::max(w.next_region_id, id + 1);
  w.region_insert.i64(id)
      .i64(w.nid(region.nid))
      .i64(w.pid(region.pid))
      .i64(w.tid(region.tid))
      .i64(region.start_ns)
      .i64(region.end_ns)
      .i64(name_id)
      .i64(event_id)
      .run();
  return id;
}

std::int64_t writer::add_pmc_info(const pmc_info& counter) {
  impl& w = *impl_;
  return w.pmc_info_insert.opt(counter.id)
      .i64(w.nid(counter.nid))
      .i64(w.pid(counter.pid))
      .i64(counter.agent_id)
      .text("GPU")
      .text(counter.name)
      .text(counter.symbol.empty() ? counter.name : counter.symbol)
      .text(counter.description)
      .text("rocm")
      .text("ABS")
      .text(counter.block)
      .text(counter.expression)
      .i64(counter.is_constant ? 1 : 0)
      .i64(counter.is_derived ? 1 : 0)
      .json(counter.extdata)
      .run();
}

std::int64_t writer::add_pmc_event(std::int64_t event_id, std::int64_t pmc_id, double value) {
  impl& w = *impl_;
  const std::int64_t id = w.next_pmc_event_id++;
  w.pmc_event_insert.i64(id).i64(event_id).i64(pmc_id).real(value).run();
  return id;
}

void writer::add_arg(std::int64_t event_id,
                     std::int64_t position,
                     std::string_view type,
                     std::string_view name,
                     std::string_view value,
                     std::string_view extdata) {
  impl_->arg_insert.i64(event_id)
      .i64(position)
      .text(type)
      .text(name)
      .text(value)
      .json_text(extdata)
      .run();
}

std::int64_t writer::last_event_id() const {
  return impl_->last_event;
}

void writer::add_metadata(std::string_view tag, std::string_view value) {
  impl_->metadata_insert.text(tag).text(value).run();
}

void writer::commit() {
  impl& w = *impl_;
  w.flush();
  w.exec("COMMIT", "commit");
  w.in_transaction = false;
  w.exec("BEGIN", "begin a transaction");
  w.in_transaction = true;
}

const std::filesystem::path& writer::path() const {
  return impl_->path;
}
const std::string& writer::guid() const {
  return impl_->guid;
}
const std::string& writer::uuid_suffix() const {
  return impl_->suffix;
}

std::string writer::generate_uuid() {
  // UUIDv7 layout: 48-bit Unix ms, version 7, 12 random bits, variant 10, 62 random bits. The seed
  // mixes the pid so two processes started in the same millisecond still differ.
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  std::random_device device;
  std::mt19937_64 random(
      (static_cast<std::uint64_t>(device()) << 32) ^ device() ^
      (static_cast<std::uint64_t>(getpid()) << 16) ^
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  const std::uint64_t high =
      (static_cast<std::uint64_t>(ms) << 16) | 0x7000u | (random() & 0x0fffu);
  const std::uint64_t low = (random() & 0x3fffffffffffffffull) | 0x8000000000000000ull;
  char text[37];
  std::snprintf(text, sizeof text, "%08llx-%04llx-%04llx-%04llx-%012llx",
                static_cast<unsigned long long>(high >> 32),
                static_cast<unsigned long long>((high >> 16) & 0xffffu),
                static_cast<unsigned long long>(high & 0xffffu),
                static_cast<unsigned long long>(low >> 48),
                static_cast<unsigned long long>(low & 0xffffffffffffull));
  return text;
}

} // namespace rpl::stages::rocpd
