#include "stages/trace/ncu_csv.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "stages/trace/csv_record.hpp"

namespace rpl::stages::ncu {

namespace {

/// One CSV record from `text` at `at`; `line` counts lines for errors.
std::vector<std::string> read_record(std::string_view text, std::size_t& at, std::size_t line) {
  try {
    return csv::read_record(text, at);
  } catch (const csv::csv_error& error) {
    throw ncu_error("ncu CSV line " + std::to_string(line) + ": " + error.what() +
                    "; fix: pass ncu's own --csv output unchanged (a file cut short: run ncu "
                    "again)");
  }
}

/// "1,073,741,824" -> 1073741824; "3.88" -> 3.88; anything else (text, empty, "n/a") -> nullopt.
std::optional<double> number(const std::string& text) {
  std::string digits;
  digits.reserve(text.size());
  for (const char c : text)
    if (c != ',')
      digits += c;
  if (digits.empty())
    return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || errno == ERANGE || !std::isfinite(value))
    return std::nullopt;
  return value;
}

/// "(256, 1, 1)" -> {256, 1, 1}; zeros when it is not that shape.
void read_dim3(const std::string& text, std::uint32_t out[3]) {
  std::size_t at = text.find('(');
  for (int i = 0; i < 3 && at != std::string::npos; ++i) {
    ++at;
    char* end = nullptr;
    const unsigned long v = std::strtoul(text.c_str() + at, &end, 10);
    out[i] = static_cast<std::uint32_t>(v);
    at = text.find(',', at);
  }
}

std::int64_t integer(const std::string& text) {
  return static_cast<std::int64_t>(number(text).value_or(0));
}

/// The factor from a column's unit to its base (bytes, nanoseconds; a rate's numerator alike), for
/// a report printed with ncu's default automatic units ("Mbyte", "usecond", "Gbyte/second"); 1 for
/// base and unknown units.
double unit_scale(const std::string& unit) {
  static const std::map<std::string, double> factors = {
      {"Kbyte", 1e3},   {"Mbyte", 1e6},   {"Gbyte", 1e9}, {"Tbyte", 1e12},
      {"usecond", 1e3}, {"msecond", 1e6}, {"second", 1e9}};
  const auto slash = unit.find('/');
  const auto it = factors.find(unit.substr(0, slash));
  if (it == factors.end())
    return 1;
  if (slash != std::string::npos && it->first == "second")
    return 1; // "second/..." is not a unit ncu prints
  return it->second;
}

} // namespace

report parse_raw_csv(std::string_view text) {
  report r;
  std::size_t at = 0, line = 0;
  // Skip what precedes the header: the application's output and ncu's ==PROF== lines.
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    const std::string_view row = text.substr(at, end == std::string_view::npos ? end : end - at);
    ++line;
    if (row.rfind("\"ID\",", 0) == 0)
      break;
    at = end == std::string_view::npos ? text.size() : end + 1;
  }
  if (at >= text.size())
    throw ncu_error("no ncu raw CSV header (a line starting with \"ID\",) found; fix: run ncu with "
                    "--csv --page raw and keep its standard output");
  r.columns = read_record(text, at, line);
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < r.columns.size(); ++i)
    index.emplace(r.columns[i], i);
  for (const char* required : {"ID", "Kernel Name"})
    if (!index.count(required))
      throw ncu_error(std::string("ncu CSV header has no \"") + required +
                      "\" column; fix: run ncu with --csv --page raw (not --page details)");
  auto column = [&](const std::vector<std::string>& fields, const char* name) -> std::string {
    const auto it = index.find(name);
    return it == index.end() ? std::string() : fields[it->second];
  };
  bool units_read = false;
  while (at < text.size()) {
    ++line;
    const std::size_t start = at;
    auto fields = read_record(text, at, line);
    if (fields.size() == 1 && fields[0].empty())
      continue; // a blank line
    if (text.substr(start, 2) == "==")
      continue; // an ncu message after the table (==PROF== Disconnected ...)
    if (fields.size() != r.columns.size())
      throw ncu_error("ncu CSV line " + std::to_string(line) + " has " +
                      std::to_string(fields.size()) + " fields, the header " +
                      std::to_string(r.columns.size()) +
                      "; fix: keep ncu's standard output apart from the application's (or run it "
                      "with --log-file)");
    if (!units_read && fields[0].empty()) {
      // The units row: empty under ID and the launch columns.
      for (std::size_t i = 0; i < fields.size(); ++i)
        r.units[r.columns[i]] = fields[i];
      units_read = true;
      continue;
    }
    units_read = true;
    kernel_row k;
    k.id = integer(column(fields, "ID"));
    k.pid = integer(column(fields, "Process ID"));
    k.process_name = column(fields, "Process Name");
    k.kernel_name = column(fields, "Kernel Name");
    k.context = integer(column(fields, "Context"));
    k.stream = integer(column(fields, "Stream"));
    read_dim3(column(fields, "Block Size"), k.block);
    read_dim3(column(fields, "Grid Size"), k.grid);
    k.device = integer(column(fields, "Device"));
    k.compute_capability = column(fields, "CC");
    for (std::size_t i = 0; i < fields.size(); ++i) {
      const std::string& name = r.columns[i];
      if (name.find("__") == std::string::npos)
        continue; // the launch description columns above, not metrics
      if (const auto v = number(fields[i])) {
        const auto unit = r.units.find(name);
        k.metrics.emplace(name, unit == r.units.end() ? *v : *v * unit_scale(unit->second));
      }
    }
    r.kernels.push_back(std::move(k));
  }
  return r;
}

std::string agent_name(const std::string& compute_capability) {
  std::string digits;
  for (const char c : compute_capability)
    if (c >= '0' && c <= '9')
      digits += c;
  return digits.empty() ? "sm_unknown" : "sm_" + digits;
}

void write_counter_pass(const report& r,
                        rocpd::writer& w,
                        std::int64_t fallback_pid,
                        std::int64_t start_ns) {
  const std::int64_t pid =
      !r.kernels.empty() && r.kernels.front().pid > 0 ? r.kernels.front().pid : fallback_pid;
  rocpd::node_info node;
  w.add_node(node);
  rocpd::process_info process;
  process.pid = pid;
  process.command = r.kernels.empty() ? "" : r.kernels.front().process_name;
  w.add_process(process);
  rocpd::thread_info thread;
  thread.pid = pid;
  thread.tid = pid;
  w.add_thread(thread);
  w.add_metadata("rpl_counter_pass", "ncu");

  std::map<std::int64_t, std::int64_t> agent_of_device;
  std::map<std::pair<std::int64_t, std::string>, std::int64_t> symbol_of;
  std::map<std::int64_t, std::int64_t> stream_of;
  std::map<std::pair<std::int64_t, std::string>, std::int64_t> pmc_of; // (agent, metric)
  std::int64_t next_symbol = 1;
  std::int64_t now = start_ns;
  for (const kernel_row& k : r.kernels) {
    auto agent = agent_of_device.find(k.device);
    if (agent == agent_of_device.end()) {
      rocpd::agent_info a;
      a.id = k.device; // the device ordinal, as the CUPTI tracer numbers its agents
      a.pid = pid;
      a.type = "GPU";
      a.vendor_name = "NVIDIA";
      a.absolute_index = k.device;
      a.logical_index = k.device;
      a.type_index = k.device;
      a.name = agent_name(k.compute_capability);
      a.model_name = a.name;
      agent = agent_of_device.emplace(k.device, w.add_agent(a)).first;
      rocpd::code_object_info code_object;
      code_object.id = agent->second;
      code_object.pid = pid;
      code_object.agent_id = agent->second;
      w.add_code_object(code_object);
    }
    const std::int64_t agent_id = agent->second;
    auto symbol = symbol_of.find({agent_id, k.kernel_name});
    if (symbol == symbol_of.end()) {
      rocpd::kernel_symbol_info s;
      s.id = next_symbol++;
      s.pid = pid;
      s.code_object_id = agent_id;
      s.kernel_name = k.kernel_name;
      s.display_name = k.kernel_name;
      const auto regs = k.metrics.find("launch__registers_per_thread");
      s.arch_vgpr_count = regs == k.metrics.end() ? 0 : static_cast<std::int64_t>(regs->second);
      const auto smem = k.metrics.find("launch__shared_mem_per_block_static");
      s.group_segment_size = smem == k.metrics.end() ? 0 : static_cast<std::int64_t>(smem->second);
      symbol =
          symbol_of.emplace(std::make_pair(agent_id, k.kernel_name), w.add_kernel_symbol(s)).first;
    }
    auto stream = stream_of.find(k.stream);
    if (stream == stream_of.end())
      stream = stream_of.emplace(k.stream, w.add_stream(pid, "Stream " + std::to_string(k.stream)))
                   .first;
    rocpd::dispatch_info d;
    d.pid = pid;
    d.tid = pid;
    d.agent_id = agent_id;
    d.kernel_id = symbol->second;
    d.stream_id = stream->second;
    d.correlation_id = k.id + 1;
    const auto duration = k.metrics.find("gpu__time_duration.sum");
    const std::int64_t ns =
        duration == k.metrics.end() ? 0 : static_cast<std::int64_t>(std::llround(duration->second));
    d.start_ns = now;
    d.end_ns = now + ns;
    now = d.end_ns + 1'000; // apart, so no analysis reads them as overlapping
    for (int i = 0; i < 3; ++i) {
      d.workgroup[static_cast<std::size_t>(i)] = k.block[i];
      d.grid[static_cast<std::size_t>(i)] =
          static_cast<std::int64_t>(k.grid[i]) * k.block[i]; // rocpd grids are in work-items
    }
    const auto dynamic = k.metrics.find("launch__shared_mem_per_block_dynamic");
    const auto fixed = k.metrics.find("launch__shared_mem_per_block_static");
    d.group_segment_size =
        static_cast<std::int64_t>((dynamic == k.metrics.end() ? 0 : dynamic->second) +
                                  (fixed == k.metrics.end() ? 0 : fixed->second));
    w.add_dispatch(d);
    const std::int64_t event = w.last_event_id();
    for (const auto& [name, value] : k.metrics) {
      auto pmc = pmc_of.find({agent_id, name});
      if (pmc == pmc_of.end()) {
        rocpd::pmc_info info;
        info.pid = pid;
        info.agent_id = agent_id;
        info.name = name;
        info.is_derived = true; // ncu's metrics are already summed over the GPU's units
        const auto unit = r.units.find(name);
        if (unit != r.units.end() && !unit->second.empty())
          info.extdata = {{"units", unit->second}};
        pmc = pmc_of.emplace(std::make_pair(agent_id, name), w.add_pmc_info(info)).first;
      }
      w.add_pmc_event(event, pmc->second, value);
    }
  }
}

} // namespace rpl::stages::ncu
