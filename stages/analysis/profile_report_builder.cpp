#include "stages/analysis/profile_report_builder.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <future>
#include <map>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

#include "stages/hardware/arch_model.hpp"
#include "stages/hardware/kernel_resources.hpp"
#include "stages/trace/counter_collector.hpp"
#include "stages/trace/rocpd_reader.hpp"
#include "stages/trace/trace_completeness.hpp"

namespace rpl::stages {

namespace {

/// (database index, row id): rows of different files never share an id space.
using row_key = std::pair<std::size_t, std::int64_t>;

/// Element by element: std::array's == calls memcmp, a library call per dispatch.
bool same(const dim3& a, const dim3& b) {
  return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}
bool same(std::int64_t a, std::int64_t b) {
  return a == b;
}

/// Adds one to `counts[key]`, remembering the last key: a kernel is mostly launched one way.
template <class Key> struct last_counted {
  Key key{};
  std::size_t* count = nullptr;
  template <class Map> void add(Map& counts, const Key& k) {
    if (count == nullptr || !same(key, k)) {
      count = &counts[k];
      key = k;
    }
    ++*count;
  }
};

/// What the dispatches say about one kernel beyond its timings.
struct kernel_shape {
  std::map<dim3, std::size_t> blocks;
  std::map<dim3, std::size_t> grids;
  // By block size, the dispatches' LDS/shared memory per workgroup (dynamic included): occupancy
  // describes one launch that happened, the most common block with its most common LDS, even when
  // a kernel is launched with several.
  std::map<dim3, std::map<std::int64_t, std::size_t>> lds_bytes_by_block;
  row_key agent{0, 0}; // of the first dispatch
  row_key symbol{0, 0};
  bool runtime_helper = false;
  // What the scan counted last, so that the next dispatch of the same launch skips the lookups.
  last_counted<dim3> last_block, last_grid;
  last_counted<std::int64_t> last_lds;
  std::map<std::int64_t, std::size_t>* lds_of_last_block = nullptr;
  dim3 last_lds_block{};
};

template <class Map> typename Map::key_type most_common(const Map& counts) {
  return std::max_element(counts.begin(), counts.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

/// All runs read together: the accounting, the dispatch shapes and the info tables.
struct trace_scan {
  std::vector<std::string> databases;
  rocpd::runtime_summary summary;
  std::map<std::string, kernel_shape, std::less<>> shapes;
  std::vector<report_agent> agents;
  std::map<row_key, rocpd::agent_row> agent_rows;
  std::map<row_key, rocpd::kernel_symbol_row> symbols;
  /// Per run, when asked: SUM(end - start) of user kernels (runtime_summary::total_gpu_ns).
  std::vector<std::int64_t> per_run_user_ns;
};

/// The kernel's shape entry, found by the name's storage first: the reader hands out the same
/// storage for every dispatch of a kernel, so a slot chosen by its address skips the tree walk and
/// its string comparisons; the name is still compared, so a reused slot is only a miss.
class shape_finder {
public:
  explicit shape_finder(std::map<std::string, kernel_shape, std::less<>>& shapes)
      : shapes_(shapes) {}
  /// The entry of `row`'s kernel, made (with the row's agent and symbol) if new.
  kernel_shape& operator()(const rocpd::dispatch_row& row) {
    // Fibonacci hashing of the address: names allocated side by side land in different slots.
    const auto address = reinterpret_cast<std::uintptr_t>(row.kernel_name.data());
    slot& s = slots_[(address * 0x9E3779B97F4A7C15ull) >> 56];
    if (s.data == row.kernel_name.data() && s.entry != nullptr && s.entry->first == row.kernel_name)
      return s.entry->second;
    auto it = shapes_.find(row.kernel_name);
    if (it == shapes_.end()) {
      it = shapes_.emplace(std::string(row.kernel_name), kernel_shape{}).first;
      it->second.agent = {row.database, row.agent_id};
      it->second.symbol = {row.database, row.kernel_id};
      it->second.runtime_helper = rocpd::is_runtime_helper(row.kernel_name);
    }
    s = {row.kernel_name.data(), &*it};
    return it->second;
  }

private:
  struct slot {
    const char* data = nullptr;
    std::pair<const std::string, kernel_shape>* entry = nullptr;
  };
  std::map<std::string, kernel_shape, std::less<>>& shapes_;
  std::array<slot, 256> slots_{};
};

/// One pass over every run's dispatches: the accounting, the shapes and, with `timeline`, the ops
/// of the files from `timeline_first` on (the last run's), renumbered from 0 as its reader numbers
/// them.
void scan_dispatches(const rocpd::reader& reader,
                     trace_scan& scan,
                     rocpd::timeline_builder* timeline,
                     std::size_t timeline_first,
                     rocpd::counter_collector* counters,
                     const std::vector<std::size_t>& run_of_database,
                     const std::function<void(const rocpd::dispatch_row&)>& also) {
  scan.per_run_user_ns.assign(run_of_database.empty() ? 0 : run_of_database.back() + 1, 0);
  rocpd::runtime_accumulator accumulator(reader);
  shape_finder find_shape(scan.shapes);
  reader.for_each_dispatch(
      [&](const rocpd::dispatch_row& row) {
        accumulator.add(row);
        kernel_shape& shape = find_shape(row);
        const dim3 block{row.workgroup[0], row.workgroup[1], row.workgroup[2]};
        shape.last_block.add(shape.blocks, block);
        shape.last_grid.add(shape.grids, dim3{row.grid[0], row.grid[1], row.grid[2]});
        if (shape.lds_of_last_block == nullptr || !same(shape.last_lds_block, block)) {
          shape.lds_of_last_block = &shape.lds_bytes_by_block[block];
          shape.last_lds_block = block;
          shape.last_lds = {};
        }
        shape.last_lds.add(*shape.lds_of_last_block, row.group_segment_size);
        if (!run_of_database.empty() && !shape.runtime_helper)
          scan.per_run_user_ns[run_of_database[row.database]] += row.end_ns - row.start_ns;
        if (timeline != nullptr && row.database >= timeline_first) {
          if (timeline_first == 0) {
            timeline->add(row);
          } else {
            rocpd::dispatch_row renumbered = row;
            renumbered.database -= timeline_first;
            timeline->add(renumbered);
          }
        }
        if (also)
          also(row);
        if (counters != nullptr)
          counters->add(row);
      },
      rocpd::dispatch_fields::report);
  scan.summary = accumulator.finish();
}

void scan_info_tables(const rocpd::reader& reader, trace_scan& scan) {
  std::set<std::string> seen;
  for (auto& a : reader.agents()) {
    // Each process's file lists the same GPUs: one entry per name and logical index.
    if (a.type == "GPU" && seen.insert(a.name + "/" + std::to_string(a.logical_index)).second) {
      scan.agents.push_back({a.name, a.product_name, a.logical_index});
    }
    scan.agent_rows[{a.database, a.id}] = std::move(a);
  }
  for (auto& s : reader.kernel_symbols()) {
    scan.symbols[{s.database, s.id}] = std::move(s);
  }
}

trace_scan scan_trace(const std::vector<std::filesystem::path>& paths,
                      rocpd::timeline_builder* timeline,
                      std::size_t timeline_first,
                      rocpd::counter_collector* counters,
                      const std::vector<std::size_t>& run_of_database,
                      const std::function<void(const rocpd::dispatch_row&)>& also) {
  trace_scan scan;
  const auto reader = rocpd::reader::open(paths);
  scan_dispatches(reader, scan, timeline, timeline_first, counters, run_of_database, also);
  for (const auto& p : reader.paths()) {
    scan.databases.push_back(p.string());
  }
  if (scan.summary.dispatch_count == 0) {
    std::string files;
    for (const auto& p : scan.databases) {
      files += (files.empty() ? "" : ", ") + p;
    }
    throw report_error(files + ": no kernel dispatches in the trace; fix: check that the "
                               "application launches GPU kernels and was recorded with "
                               "rocprofv3 --kernel-trace");
  }
  scan_info_tables(reader, scan);
  return scan;
}

/// Occupancy on `arch` (or the kernel's agent), or the note saying why there is none.
void add_occupancy(kernel_report& out,
                   const trace_scan& scan,
                   const kernel_shape& shape,
                   const rocpd::kernel_symbol_row& symbol,
                   const std::string& arch) {
  std::string target = arch;
  if (target.empty()) {
    if (auto agent = scan.agent_rows.find(shape.agent); agent != scan.agent_rows.end()) {
      target = agent->second.name;
    }
  }
  try {
    const auto model = load_arch(target);
    const dim3& b = out.block;
    const std::uint32_t block_size = b[0] * std::max(1u, b[1]) * std::max(1u, b[2]);
    const auto resources =
        kernel_resources::from_rocpd_symbol(symbol, block_size, *out.launch_lds_bytes);
    out.occupancy = compute_kernel_occupancy(model, resources, true);
  } catch (const arch_error& error) {
    out.occupancy_note = error.what();
  }
}

kernel_report describe_kernel(const rocpd::kernel_stats& k,
                              const trace_scan& scan,
                              bool with_occupancy,
                              const std::string& arch) {
  kernel_report out;
  out.runtime = k;
  const double total = scan.summary.total_gpu_ns;
  out.share = total > 0 ? k.total_ns / total : 0.0;
  const kernel_shape& shape = scan.shapes.at(k.name);
  out.block = most_common(shape.blocks);
  out.grid = most_common(shape.grids);
  const std::int64_t dispatch_lds = most_common(shape.lds_bytes_by_block.at(out.block));
  const auto symbol = scan.symbols.find(shape.symbol);
  if (symbol == scan.symbols.end()) {
    return out;
  }
  const auto& s = symbol->second;
  out.resources =
      symbol_resources{s.arch_vgpr_count,    s.accum_vgpr_count,     s.sgpr_count,
                       s.group_segment_size, s.private_segment_size, s.kernarg_segment_size};
  // A dispatch's group segment includes the dynamic part; a file without the column gives 0, and
  // then the symbol's static size is all that is known (kernel_resources::from_rocpd_symbol).
  out.launch_lds_bytes = std::max(dispatch_lds, s.group_segment_size);
  if (with_occupancy) {
    add_occupancy(out, scan, shape, s, arch);
  }
  return out;
}

} // namespace

namespace {

/// The collector of `counter_files`' counters over `files` (all runs' files, in scan order) when
/// they are all among those files, in the same order; nullopt otherwise.
std::optional<rocpd::counter_collector>
collect_counters(const rocpd::reader& files,
                 const std::vector<std::filesystem::path>& counter_files) {
  const std::set<std::filesystem::path> wanted(counter_files.begin(), counter_files.end());
  std::vector<std::size_t> databases;
  std::vector<std::filesystem::path> order;
  for (std::size_t i = 0; i < files.paths().size(); ++i) {
    if (wanted.count(files.paths()[i]) != 0) {
      databases.push_back(i);
      order.push_back(files.paths()[i]);
    }
  }
  if (order != counter_files)
    return std::nullopt;
  return rocpd::counter_collector(files, databases);
}

/// The report, and with `with_timeline` the last run's timeline, from one pass over the dispatches
/// of every run.
/// Joins the thread when the scope ends, however it ends.
struct joined {
  std::thread& thread;
  ~joined() {
    if (thread.joinable())
      thread.join();
  }
};

report_and_timeline build(const std::vector<std::vector<std::filesystem::path>>& runs,
                          const report_context& context,
                          bool with_timeline,
                          bool side_thread,
                          const std::function<void(const rocpd::dispatch_row&)>& also) {
  std::vector<std::filesystem::path> all_paths;
  std::vector<std::size_t> run_of_database; // for stability across runs
  std::vector<std::string> partial_reasons;
  std::optional<rocpd::reader> last_run;
  std::size_t last_run_first = 0;
  for (const auto& paths : runs) {
    auto reader = rocpd::reader::open(paths);
    last_run_first = all_paths.size();
    all_paths.insert(all_paths.end(), reader.paths().begin(), reader.paths().end());
    if (runs.size() > 1)
      run_of_database.resize(all_paths.size(), static_cast<std::size_t>(&paths - runs.data()));
    for (const rocpd::database_info& database : reader.databases()) {
      const std::string why = rocpd::describe_partial(rocpd::read_completeness(database.metadata));
      if (!why.empty()) {
        partial_reasons.push_back(database.path.string() + ": " + why);
      }
    }
    last_run = std::move(reader);
  }
  std::optional<rocpd::timeline_builder> timeline;
  if (with_timeline && last_run)
    timeline.emplace(*last_run);
  // The counter passes' counters: their dispatches from the scan, their values from their pmc
  // tables beside it (no join, no sort).
  std::optional<rocpd::reader> counter_files;
  std::optional<rocpd::counter_collector> counters;
  if (!context.counter_files.empty()) {
    counter_files.emplace(rocpd::reader::open(all_paths));
    counters = collect_counters(*counter_files, context.counter_files);
  }
  // The timeline's copies and synchronization beside the scan: the builder keeps them apart from
  // what the scan adds. A failure there is reported after the scan's own (as finish() would).
  std::thread side;
  std::exception_ptr side_error;
  const joined join_side{side};
  if (side_thread && (timeline || counters))
    side = std::thread([&] {
      try {
        if (timeline)
          timeline->read_side_tables();
        if (counters)
          counters->read_counter_rows();
      } catch (...) {
        side_error = std::current_exception();
      }
    });
  // All runs together: the per-kernel table, with the dispatch shapes seen on the way, each run's
  // GPU total (stability across runs) and the last run's timeline ops.
  trace_scan scan = scan_trace(all_paths, timeline ? &*timeline : nullptr, last_run_first,
                               counters ? &*counters : nullptr, run_of_database, also);
  // The counter rows the side thread has not taken yet, shared with it from here on.
  if (counters)
    counters->read_counter_rows();
  const rocpd::runtime_summary& summary = scan.summary;
  // Per run: the total GPU time, for stability across runs; one run is all runs.
  std::vector<rocpd::runtime_summary> per_run;
  if (runs.size() == 1)
    per_run.push_back(summary);
  for (const std::int64_t user_ns : scan.per_run_user_ns) {
    per_run.emplace_back();
    per_run.back().total_gpu_ns = static_cast<double>(user_ns);
  }

  report_and_timeline out;
  profile_report& report = out.report;
  report.backend = context.backend;
  report.command = context.command;
  report.databases = scan.databases;
  report.agents = scan.agents;
  const auto stability = rocpd::across_runs(per_run);
  report.stability = {stability.per_run_total_ns, stability.mean, stability.median,
                      stability.stddev,           stability.cv,   stability.stability};
  report.totals = report_totals{summary.total_gpu_ns,   summary.helper_gpu_ns, summary.wall_span_ns,
                                summary.dispatch_count, summary.per_agent,     summary.per_queue,
                                summary.per_stream,     summary.per_process};
  for (const auto& k : summary.kernels) {
    report.kernels.push_back(describe_kernel(k, scan, true, context.arch));
  }
  for (const auto& k : summary.helper_kernels) {
    report.helper_kernels.push_back(describe_kernel(k, scan, false, context.arch));
  }
  report.dominant_kernel = summary.dominant_kernel;
  report.partial = !partial_reasons.empty();
  report.partial_reasons = std::move(partial_reasons);
  if (side.joinable())
    side.join();
  if (side_error)
    std::rethrow_exception(side_error);
  // The counters' join beside the timeline's: neither reads what the other writes (each has its
  // own reader and connections).
  std::future<std::map<std::string, rocpd::kernel_counters>> joined_counters;
  if (counters)
    joined_counters = std::async(side_thread ? std::launch::async : std::launch::deferred,
                                 [&counters] { return counters->finish(); });
  if (timeline)
    out.timeline = timeline->finish();
  if (counters)
    out.counters = joined_counters.get();
  return out;
}

} // namespace

profile_report build_profile_report(const std::vector<std::vector<std::filesystem::path>>& runs,
                                    const report_context& context) {
  return build(runs, context, false, false, {}).report;
}

report_and_timeline
build_profile_report_and_timeline(const std::vector<std::vector<std::filesystem::path>>& runs,
                                  const report_context& context,
                                  bool side_thread,
                                  const std::function<void(const rocpd::dispatch_row&)>& also) {
  return build(runs, context, true, side_thread, also);
}

profile_report timing_profile_report(std::vector<std::string> command,
                                     std::span<const std::int64_t> wall_ns) {
  const auto stats = summarize(wall_ns);
  profile_report report;
  report.backend = "timing";
  report.command = std::move(command);
  for (const auto ns : wall_ns) {
    report.stability.per_run_ns.push_back(static_cast<double>(ns));
  }
  report.stability.mean_ns = stats.mean;
  report.stability.median_ns = stats.median;
  report.stability.stddev_ns = stats.stddev;
  report.stability.cv = stats.cv;
  report.stability.classification = stats.stability;
  report.note = "timing backend: these are whole-process wall times (start-up included), not "
                "kernel times; use the rocm backend for per-kernel figures";
  return report;
}

} // namespace rpl::stages
