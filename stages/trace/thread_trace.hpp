#pragma once
/// AMD thread trace (ATT, `rocprofv3 --att`) per-instruction statistics as a stall summary per
/// kernel. rocprofv3's trace decoder writes, per traced dispatch, `stats_<ui dir>.csv` (columns
/// CodeObj, Vaddr, Instruction, Hitcount, Latency, Stall, Idle, Source) and
/// `ui_output_agent_<a>_dispatch_<d>/code.json` ({"code": [[ISA, _, LineNumber, Source, Codeobj,
/// Vaddr, Hit, Latency, Stall, Idle], ...], "header": "ISA, _, LineNumber, ..."}); both are read by
/// column name, so added or reordered columns do not shift values. A row whose instruction is
/// "; <symbol>" starts a kernel (its Source is the demangled name). Cycles are summed over every
/// wave the trace followed: Latency is an instruction's time from first issue attempt to done
/// (stall + execution), Stall the part it could not issue, Idle the gap before it
/// (../shared/reference/hardware-models.md §4.3).
///
/// The summary splits the waves' time into categories that add up to it: a wait instruction
/// (s_waitcnt, gfx12's s_wait_*cnt, s_barrier) counts its whole latency under what it waits for;
/// any other instruction counts its stall under its pipe and the rest as execution; idle gaps are
/// idle. The dominant stall is the largest category other than execution and idle.

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rpl::stages::att {

/// A thread-trace file that cannot be read as one, with what is wrong and a fix.
class thread_trace_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Where an instruction's cycles go.
enum class stall_category {
  vmem_wait,     ///< s_waitcnt vmcnt/vscnt, s_wait_loadcnt/storecnt/samplecnt/bvhcnt
  lds_smem_wait, ///< s_waitcnt lgkmcnt, s_wait_dscnt/kmcnt: LDS, scalar memory, messages
  barrier,       ///< s_barrier (gfx12: s_barrier_wait)
  other_wait,    ///< s_waitcnt on other or all counters, s_sleep, s_wait_* others
  mfma,          ///< v_mfma, v_smfmac, v_wmma, v_swmmac: matrix-core pipe
  vmem_issue,    ///< global_, buffer_, flat_, scratch_, image_, tbuffer_: vector memory pipe
  lds_issue,     ///< ds_: LDS pipe
  smem_issue,    ///< s_load, s_buffer_load, s_store, s_scratch, s_dcache: scalar memory pipe
  branch,        ///< s_branch, s_cbranch, s_setpc, s_swappc, s_getpc
  valu,          ///< other v_
  salu,          ///< other s_
  other,         ///< anything else
};

/// "vmem_wait", ...: the JSON value.
std::string_view to_id(stall_category c);
/// The category of one instruction by its mnemonic (the ISA text, operands allowed).
stall_category categorize(std::string_view instruction);
/// Whether a category's instructions are waits (their whole latency is waiting).
bool is_wait(stall_category c);

/// One instruction row of the decoder's output.
struct instruction_row {
  std::string instruction;
  std::int64_t hitcount = 0;
  std::int64_t latency = 0; ///< cycles, stall included, summed over the traced waves
  std::int64_t stall = 0;
  std::int64_t idle = 0;
  std::string source; ///< file:line when compiled with -g
};

/// The rows of one kernel in one file.
struct kernel_block {
  std::string symbol;    ///< from the "; <symbol>" row
  std::string demangled; ///< that row's Source, when present
  std::vector<instruction_row> rows;
};

/// Parses `stats_*.csv` text. `origin` names the file in errors. Throws thread_trace_error for a
/// header without the needed columns, a row with another number of fields, a field that is not a
/// whole number, or malformed quoting.
std::vector<kernel_block> parse_stats_csv(std::string_view text, const std::string& origin);
/// Parses `code.json` text the same way (the header as a string or an array of names).
std::vector<kernel_block> parse_code_json(std::string_view text, const std::string& origin);

/// One kernel's stall summary, over every file and wave that traced it.
struct stall_summary {
  std::string kernel;              ///< the demangled name where known, else the symbol
  std::string symbol;              ///< the code-object symbol
  std::size_t traces = 0;          ///< blocks (traced dispatches) summed
  std::int64_t instructions = 0;   ///< Σ hitcount: instructions issued by the traced waves
  std::int64_t wave_cycles = 0;    ///< Σ latency + Σ idle
  std::int64_t execute_cycles = 0; ///< latency − stall of the instructions that are not waits
  std::int64_t idle_cycles = 0;
  std::map<stall_category, std::int64_t> stall_cycles; ///< every category seen, zeros included
  stall_category top = stall_category::other;
  double top_share = 0; ///< top's cycles over wave_cycles
  /// Rows whose stall exceeds their latency (execution counted as 0); not silently dropped.
  std::size_t inconsistent_rows = 0;
};

/// The summaries of `blocks`, one per kernel (blocks with the same symbol are summed); blocks
/// whose instructions never issued (hitcount 0: code the trace did not reach) are left out. In
/// symbol order.
std::vector<stall_summary> summarize(const std::vector<kernel_block>& blocks);

/// analysis.json's thread_trace object (docs/schema/analysis.schema.json), with
/// cycles_per_instruction = wave_cycles / instructions.
nlohmann::json to_json(const stall_summary& summary);

} // namespace rpl::stages::att
