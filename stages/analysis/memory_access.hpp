#pragma once
/// How well a kernel's global memory accesses use what the memory system moves, from counters: on
/// NVIDIA the L1's sectors per request (Nsight Compute's "Sectors/Req": a warp's 4-byte accesses
/// to consecutive addresses fill 4 sectors of 32 B, one thread per sector fills 32) and each
/// level's throughput (L1, L2, DRAM, % of peak); on AMD rocprof-compute's vL1D "Coalescing"
/// (panel 16.1: TA_TOTAL_WAVEFRONTS_sum * 64 * 100 / (TCP_TOTAL_ACCESSES_sum * 4), 100 % when a
/// wave's accesses need one vL1D access per four lanes). The bottleneck class reads them
/// (bottleneck.hpp, rule "memory.uncoalesced").

#include <optional>

#include <nlohmann/json.hpp>

#include "stages/trace/counter_values.hpp"

namespace rpl::stages::analysis {

struct memory_access {
  /// Global load and store sectors over their requests at the L1 (NVIDIA).
  std::optional<double> sectors_per_request;
  /// rocprof-compute's vL1D Coalescing, % (AMD).
  std::optional<double> coalescing_pct;
  /// Each level's throughput, % of its peak (NVIDIA: l1tex__throughput, lts__throughput,
  /// dram__throughput, averaged over the counted dispatches).
  std::optional<double> l1_pct;
  std::optional<double> l2_pct;
  std::optional<double> dram_pct;
  bool empty() const {
    return !sectors_per_request && !coalescing_pct && !l1_pct && !l2_pct && !dram_pct;
  }
};

/// The figures `counters` allow; each is missing when one of its counters is (or its
/// denominator is 0).
memory_access memory_access_of(const rocpd::kernel_counters& counters);

/// {"sectors_per_request": .., "coalescing_pct": .., "l1_pct": .., ...}: the known figures.
nlohmann::json to_json(const memory_access& access);

} // namespace rpl::stages::analysis
