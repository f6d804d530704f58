#include "stages/trace/thread_trace.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <optional>

#include <nlohmann/json.hpp>

#include "stages/trace/csv_record.hpp"

namespace rpl::stages::att {

namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

/// Lower case, spaces and underscores at the ends removed: "CodeObj " -> "codeobj".
std::string normalized(std::string_view name) {
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.front())))
    name.remove_prefix(1);
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back())))
    name.remove_suffix(1);
  std::string out(name);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// The positions of the columns the summary needs, found by name.
struct columns {
  std::size_t instruction = 0, hitcount = 0, latency = 0, stall = 0, idle = 0;
  std::optional<std::size_t> source;
  std::size_t needed = 0; ///< fields a row must have

  static columns of(const std::vector<std::string>& header, const std::string& origin) {
    columns c;
    auto find = [&](std::initializer_list<const char*> names) -> std::optional<std::size_t> {
      for (std::size_t i = 0; i < header.size(); ++i)
        for (const char* name : names)
          if (normalized(header[i]) == name)
            return i;
      return std::nullopt;
    };
    auto need = [&](std::initializer_list<const char*> names, const char* shown) {
      const auto at = find(names);
      if (!at)
        throw thread_trace_error(origin + ": no \"" + shown +
                                 "\" column in the header; fix: pass the stats_*.csv or "
                                 "code.json that rocprofv3 --att wrote, unchanged");
      c.needed = std::max(c.needed, *at + 1);
      return *at;
    };
    c.instruction = need({"instruction", "isa"}, "Instruction");
    c.hitcount = need({"hitcount", "hit"}, "Hitcount");
    c.latency = need({"latency"}, "Latency");
    c.stall = need({"stall"}, "Stall");
    c.idle = need({"idle"}, "Idle");
    c.source = find({"source"});
    return c;
  }
};

std::int64_t whole_number(std::string_view text,
                          const char* column,
                          const std::string& origin,
                          std::size_t row) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0)
    throw thread_trace_error(origin + ": row " + std::to_string(row) + ": " + column + " \"" +
                             std::string(text) +
                             "\" is not a whole number of cycles >= 0; fix: pass the decoder's "
                             "output unchanged");
  return value;
}

/// Appends a row to `blocks`: a "; <symbol>" row starts a kernel.
void add_row(std::vector<kernel_block>& blocks,
             std::string instruction,
             std::string source,
             const std::function<std::int64_t(std::size_t column)>& number,
             const columns& c) {
  if (starts_with(instruction, ";")) {
    kernel_block block;
    std::string_view symbol(instruction);
    symbol.remove_prefix(1);
    while (!symbol.empty() && symbol.front() == ' ')
      symbol.remove_prefix(1);
    block.symbol = std::string(symbol);
    block.demangled = std::move(source);
    blocks.push_back(std::move(block));
    return;
  }
  if (blocks.empty())
    blocks.emplace_back(); // code before any kernel symbol
  instruction_row row;
  row.instruction = std::move(instruction);
  row.hitcount = number(c.hitcount);
  row.latency = number(c.latency);
  row.stall = number(c.stall);
  row.idle = number(c.idle);
  row.source = std::move(source);
  blocks.back().rows.push_back(std::move(row));
}

const char* column_name(const columns& c, std::size_t at) {
  if (at == c.hitcount)
    return "Hitcount";
  if (at == c.latency)
    return "Latency";
  if (at == c.stall)
    return "Stall";
  return "Idle";
}

} // namespace

std::string_view to_id(stall_category c) {
  switch (c) {
  case stall_category::vmem_wait: return "vmem_wait";
  case stall_category::lds_smem_wait: return "lds_smem_wait";
  case stall_category::barrier: return "barrier";
  case stall_category::other_wait: return "other_wait";
  case stall_category::mfma: return "mfma";
  case stall_category::vmem_issue: return "vmem_issue";
  case stall_category::lds_issue: return "lds_issue";
  case stall_category::smem_issue: return "smem_issue";
  case stall_category::branch: return "branch";
  case stall_category::valu: return "valu";
  case stall_category::salu: return "salu";
  case stall_category::other: return "other";
  }
  return "other";
}

bool is_wait(stall_category c) {
  return c == stall_category::vmem_wait || c == stall_category::lds_smem_wait ||
         c == stall_category::barrier || c == stall_category::other_wait;
}

stall_category categorize(std::string_view instruction) {
  while (!instruction.empty() && std::isspace(static_cast<unsigned char>(instruction.front())))
    instruction.remove_prefix(1);
  const std::string_view op = instruction.substr(0, instruction.find_first_of(" \t"));
  if (starts_with(op, "s_waitcnt") || starts_with(op, "s_wait_")) {
    // The operands name the counters (gfx9-11: "s_waitcnt vmcnt(0) lgkmcnt(0)", s_waitcnt_vscnt;
    // gfx12: s_wait_loadcnt 0x0, s_wait_loadcnt_dscnt). Vector memory first: its latency is the
    // longest of the counters waited for.
    const std::string_view text = starts_with(op, "s_waitcnt_") ? op : instruction;
    if (contains(text, "vmcnt") || contains(text, "vscnt") || contains(op, "loadcnt") ||
        contains(op, "storecnt") || contains(op, "samplecnt") || contains(op, "bvhcnt"))
      return stall_category::vmem_wait;
    if (contains(text, "lgkmcnt") || contains(op, "dscnt") || contains(op, "kmcnt"))
      return stall_category::lds_smem_wait;
    return stall_category::other_wait;
  }
  if (starts_with(op, "s_barrier"))
    return stall_category::barrier;
  if (starts_with(op, "s_sleep"))
    return stall_category::other_wait;
  if (starts_with(op, "v_mfma") || starts_with(op, "v_smfmac") || starts_with(op, "v_wmma") ||
      starts_with(op, "v_swmmac"))
    return stall_category::mfma;
  for (const char* prefix : {"global_", "buffer_", "flat_", "scratch_", "image_", "tbuffer_"})
    if (starts_with(op, prefix))
      return stall_category::vmem_issue;
  if (starts_with(op, "ds_"))
    return stall_category::lds_issue;
  for (const char* prefix : {"s_load", "s_buffer_load", "s_store", "s_buffer_store", "s_scratch",
                             "s_dcache", "s_atomic", "s_buffer_atomic"})
    if (starts_with(op, prefix))
      return stall_category::smem_issue;
  for (const char* prefix : {"s_branch", "s_cbranch", "s_setpc", "s_swappc", "s_getpc"})
    if (starts_with(op, prefix))
      return stall_category::branch;
  if (starts_with(op, "v_"))
    return stall_category::valu;
  if (starts_with(op, "s_"))
    return stall_category::salu;
  return stall_category::other;
}

std::vector<kernel_block> parse_stats_csv(std::string_view text, const std::string& origin) {
  std::vector<kernel_block> blocks;
  std::size_t at = 0, line = 1;
  auto record = [&]() {
    try {
      return csv::read_record(text, at);
    } catch (const csv::csv_error& error) {
      throw thread_trace_error(origin + ": line " + std::to_string(line) + ": " + error.what() +
                               "; fix: pass the decoder's output unchanged (a file cut short: "
                               "trace again)");
    }
  };
  if (text.empty())
    throw thread_trace_error(origin + ": empty; fix: pass a stats_*.csv that rocprofv3 --att "
                                      "wrote (an empty file: the decoder failed, see its log)");
  const columns c = columns::of(record(), origin);
  while (at < text.size()) {
    ++line;
    std::vector<std::string> fields = record();
    if (fields.size() == 1 && fields[0].empty())
      continue; // a blank line
    if (fields.size() < c.needed)
      throw thread_trace_error(origin + ": line " + std::to_string(line) + " has " +
                               std::to_string(fields.size()) + " fields, the header needs " +
                               std::to_string(c.needed) +
                               "; fix: pass the decoder's output unchanged");
    std::string source = c.source && *c.source < fields.size() ? fields[*c.source] : "";
    add_row(
        blocks, std::move(fields[c.instruction]), std::move(source),
        [&](std::size_t column) {
          return whole_number(fields[column], column_name(c, column), origin, line);
        },
        c);
  }
  return blocks;
}

std::vector<kernel_block> parse_code_json(std::string_view text, const std::string& origin) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    throw thread_trace_error(origin + ": not a JSON object; fix: pass the code.json that "
                                      "rocprofv3 --att wrote, unchanged");
  if (!doc.contains("header") || !doc.contains("code") || !doc["code"].is_array())
    throw thread_trace_error(origin + ": no \"header\" and \"code\" array; fix: pass the "
                                      "code.json of a ui_output_agent_*_dispatch_* folder");
  std::vector<std::string> header;
  const nlohmann::json& h = doc["header"];
  if (h.is_string()) {
    std::size_t at = 0;
    const std::string names = h.get<std::string>();
    header = csv::read_record(names, at);
  } else if (h.is_array()) {
    for (const auto& name : h)
      header.push_back(name.is_string() ? name.get<std::string>() : std::string());
  } else {
    throw thread_trace_error(origin + ": \"header\" is neither a string nor an array of names; "
                                      "fix: pass the decoder's code.json unchanged");
  }
  const columns c = columns::of(header, origin);
  std::vector<kernel_block> blocks;
  std::size_t index = 0;
  for (const auto& row : doc["code"]) {
    ++index;
    if (!row.is_array() || row.size() < c.needed)
      throw thread_trace_error(origin + ": code row " + std::to_string(index) +
                               " is not an array of the header's " + std::to_string(c.needed) +
                               " columns; fix: pass the decoder's code.json unchanged");
    auto text_at = [&](std::size_t column) {
      return row[column].is_string() ? row[column].get<std::string>() : std::string();
    };
    add_row(
        blocks, text_at(c.instruction), c.source ? text_at(*c.source) : std::string(),
        [&](std::size_t column) -> std::int64_t {
          const auto& v = row[column];
          if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
            throw thread_trace_error(origin + ": code row " + std::to_string(index) + ": " +
                                     column_name(c, column) + " " + v.dump() +
                                     " is not a whole number of cycles >= 0; fix: pass the "
                                     "decoder's code.json unchanged");
          return v.get<std::int64_t>();
        },
        c);
  }
  return blocks;
}

std::vector<stall_summary> summarize(const std::vector<kernel_block>& blocks) {
  std::map<std::string, stall_summary> by_symbol;
  for (const kernel_block& block : blocks) {
    std::int64_t issued = 0;
    for (const auto& row : block.rows)
      issued += row.hitcount;
    if (issued == 0)
      continue;
    stall_summary& s = by_symbol[block.symbol];
    s.symbol = block.symbol;
    if (s.kernel.empty())
      s.kernel = !block.demangled.empty() ? block.demangled
                 : !block.symbol.empty()  ? block.symbol
                                          : "<code before any kernel symbol>";
    ++s.traces;
    s.instructions += issued;
    for (const auto& row : block.rows) {
      const stall_category category = categorize(row.instruction);
      s.stall_cycles.try_emplace(category, 0);
      s.wave_cycles += row.latency + row.idle;
      s.idle_cycles += row.idle;
      if (is_wait(category)) {
        s.stall_cycles[category] += row.latency;
      } else if (row.stall > row.latency) {
        ++s.inconsistent_rows;
        s.stall_cycles[category] += row.latency;
      } else {
        s.stall_cycles[category] += row.stall;
        s.execute_cycles += row.latency - row.stall;
      }
    }
  }
  std::vector<stall_summary> out;
  for (auto& [symbol, s] : by_symbol) {
    std::int64_t best = -1;
    for (const auto& [category, cycles] : s.stall_cycles)
      if (cycles > best) {
        best = cycles;
        s.top = category;
      }
    s.top_share = s.wave_cycles > 0 && best > 0
                      ? static_cast<double>(best) / static_cast<double>(s.wave_cycles)
                      : 0;
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::json to_json(const stall_summary& summary) {
  nlohmann::json stalls = nlohmann::json::object();
  for (const auto& [category, cycles] : summary.stall_cycles)
    stalls[std::string(to_id(category))] = cycles;
  return {{"symbol", summary.symbol},
          {"traces", summary.traces},
          {"instructions", summary.instructions},
          {"wave_cycles", summary.wave_cycles},
          {"execute_cycles", summary.execute_cycles},
          {"idle_cycles", summary.idle_cycles},
          {"stall_cycles", std::move(stalls)},
          {"cycles_per_instruction", summary.instructions > 0
                                         ? nlohmann::json(static_cast<double>(summary.wave_cycles) /
                                                          static_cast<double>(summary.instructions))
                                         : nlohmann::json(nullptr)},
          {"top_stall", to_id(summary.top)},
          {"top_stall_share", summary.top_share},
          {"inconsistent_rows", summary.inconsistent_rows}};
}

} // namespace rpl::stages::att
