#include "stages/analysis/bottleneck.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "stages/analysis/embedded_analysis_configs.hpp"

namespace rpl::stages::analysis {

namespace {

using nlohmann::json;

std::string number(double value, int digits = 1) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

/// What to try, per class; the limiter (registers, lds, ...) sharpens the occupancy advice.
std::string next_step(bottleneck_class c, const bottleneck_inputs& in) {
  switch (c) {
  case bottleneck_class::memory_bandwidth_bound:
    return "move fewer bytes: fuse with the kernels that produce or consume its data, keep reused "
           "tiles in LDS/shared memory or registers, use narrower types, check that loads are "
           "coalesced";
  case bottleneck_class::compute_throughput_bound:
    return "do less or cheaper arithmetic: use the matrix cores (MFMA / tensor cores) or a lower "
           "precision where accuracy allows, hoist invariant work out of loops";
  case bottleneck_class::latency_bound:
    return "give each wave more independent work (unroll, several elements per thread), keep more "
           "loads in flight (prefetch), then look at the stall reasons";
  case bottleneck_class::under_occupied:
    if (in.waves_per_cu && *in.waves_per_cu < 1)
      return "launch more blocks: the grid does not fill the GPU once (split the work finer, or "
             "run independent work beside it on other streams)";
    return in.occupancy_limiter.empty() || in.occupancy_limiter == "waves" ||
                   in.occupancy_limiter == "workgroups"
               ? "put more waves on the GPU: a larger grid, smaller blocks, or less register and "
                 "LDS use per block"
               : "put more waves on the GPU: a larger grid, or less " + in.occupancy_limiter +
                     " use per block (the occupancy limiter)";
  case bottleneck_class::divergence_limited:
    return "make branches uniform across a wave: sort or bin the work so that neighbouring threads "
           "take the same path, move rare cases to a separate kernel";
  case bottleneck_class::launch_overhead_bound:
    return "launch less often: fuse small kernels, capture the sequence in a graph (hipGraph / "
           "CUDA "
           "Graphs), or use a persistent kernel";
  case bottleneck_class::balanced:
    return "near both roofs at once: only less work (a better algorithm) or less traffic and less "
           "arithmetic together will make it faster";
  case bottleneck_class::memory_uncoalesced:
    return "change the access order so that neighbouring threads touch neighbouring addresses: "
           "swap the loop or index order (thread index on the fastest-moving dimension), "
           "transpose through LDS/shared memory, or change the data layout (array of structures "
           "to structure of arrays); more blocks will not help";
  }
  return {};
}

bottleneck_label make(bottleneck_class c,
                      std::string rule,
                      std::string because,
                      json thresholds,
                      json measured,
                      const bottleneck_inputs& in) {
  bottleneck_label out;
  out.label = c;
  out.rule = std::move(rule);
  out.because = std::move(because);
  out.thresholds = std::move(thresholds);
  out.measured = std::move(measured);
  out.next_step = next_step(c, in);
  return out;
}

json measured_of(const bottleneck_inputs& in) {
  json m = json::object();
  auto put = [&m](const char* key, const std::optional<double>& v) {
    if (v)
      m[key] = *v;
  };
  put("compute_pct", in.compute_pct);
  put("memory_pct", in.memory_pct);
  put("occupancy", in.occupancy);
  if (!in.occupancy_limiter.empty())
    m["occupancy_limiter"] = in.occupancy_limiter;
  put("waves_per_cu", in.waves_per_cu);
  put("active_thread_fraction", in.active_thread_fraction);
  put("mean_idle_before_ns", in.mean_idle_before_ns);
  put("mean_duration_ns", in.mean_duration_ns);
  put("issue_active", in.issue_active);
  if (!in.top_stall.empty())
    m["top_stall"] = in.top_stall;
  if (!in.stall_source.empty())
    m["stall_source"] = in.stall_source;
  put("top_stall_share", in.top_stall_share);
  put("sectors_per_request", in.access.sectors_per_request);
  put("coalescing_pct", in.access.coalescing_pct);
  put("l1_pct", in.access.l1_pct);
  put("l2_pct", in.access.l2_pct);
  return m;
}

/// Under-occupied: a grid too small for one wave over the GPU, or too few resident waves.
std::optional<std::string> under_occupied_because(const bottleneck_inputs& in,
                                                  const bottleneck_thresholds& t) {
  if (in.waves_per_cu && *in.waves_per_cu < t.min_waves_per_cu)
    return "the grid fills " + number(*in.waves_per_cu, 2) + " waves of blocks per CU/SM (< " +
           number(t.min_waves_per_cu, 2) + ")";
  if (in.occupancy && *in.occupancy <= t.under_occupied_max_occupancy)
    return "theoretical occupancy " + number(*in.occupancy * 100) +
           " % (<= " + number(t.under_occupied_max_occupancy * 100) + " %" +
           (in.occupancy_limiter.empty() ? "" : ", limited by " + in.occupancy_limiter) + ")";
  return std::nullopt;
}

std::optional<std::string> divergent_because(const bottleneck_inputs& in,
                                             const bottleneck_thresholds& t) {
  if (in.active_thread_fraction && *in.active_thread_fraction < t.divergence_min_active_fraction)
    return number(*in.active_thread_fraction * 100) +
           " % of a wave's lanes active per instruction (< " +
           number(t.divergence_min_active_fraction * 100) + " %)";
  return std::nullopt;
}

/// What the dominant warp stall means and what helps, by Nsight Compute's reason names.
std::string stall_advice(const std::string& reason) {
  if (reason == "long_scoreboard")
    return "warps wait on global or local memory: keep more loads in flight, prefetch, or stage "
           "reused data in shared memory";
  if (reason == "short_scoreboard" || reason == "mio_throttle")
    return "warps wait on shared memory or special functions: reduce bank conflicts and shared "
           "memory traffic per result";
  if (reason == "barrier")
    return "warps wait at barriers: balance the work between a block's warps, or synchronize "
           "less often";
  if (reason == "math_pipe_throttle")
    return "a math pipe is saturated: move work to another pipe (tensor cores, FP32 instead of "
           "FP64) or do less of it";
  if (reason == "lg_throttle")
    return "the load/store queue is full: fewer, wider memory instructions (vector loads)";
  if (reason == "wait")
    return "fixed-latency dependencies: more independent instructions between dependent ones "
           "(unroll, interleave)";
  if (reason == "not_selected")
    return "warps are ready but not picked: the scheduler is busy, occupancy is no longer the "
           "limit";
  // An AMD thread trace's categories (stages/trace/thread_trace.hpp).
  if (reason == "vmem_wait")
    return "waves wait on global memory (s_waitcnt vmcnt): keep more loads in flight (more waves "
           "per SIMD, independent loads issued before the first wait), prefetch, or reuse data "
           "from LDS";
  if (reason == "lds_smem_wait")
    return "waves wait on LDS or scalar loads (s_waitcnt lgkmcnt): pad LDS arrays against bank "
           "conflicts, issue LDS reads earlier, hoist scalar loads out of loops";
  if (reason == "mfma")
    return "the matrix cores are busy: the kernel runs at the matrix pipe's pace; a narrower data "
           "type or fewer MFMA instructions per result is what remains";
  if (reason == "vmem_issue")
    return "the vector memory pipe is full: fewer, wider memory instructions (dwordx4), "
           "contiguous addresses per wave";
  if (reason == "lds_issue")
    return "the LDS pipe is busy: wider LDS accesses (ds_read_b128), fewer LDS instructions per "
           "result";
  if (reason == "valu")
    return "VALU dependencies: more independent instructions between dependent ones (unroll, "
           "interleave)";
  return "look at the " + reason +
         " stalls per instruction (Nsight Compute's source view; ROCprof Compute Viewer for a "
         "thread trace)";
}

/// "; the dominant warp stall is long_scoreboard (45 % of the latency per instruction, ...)" when
/// the counters say so and the share passes the threshold.
std::string stall_detail(const bottleneck_inputs& in, const bottleneck_thresholds& t) {
  if (in.top_stall.empty() || !in.top_stall_share || *in.top_stall_share <= t.stall_share)
    return {};
  std::string text =
      in.stall_source.empty()
          ? "; the dominant warp stall is " + in.top_stall + " (" +
                number(*in.top_stall_share * 100) + " % of the latency per instruction"
          : "; the " + in.stall_source + "'s dominant stall is " + in.top_stall + " (" +
                number(*in.top_stall_share * 100) + " % of the traced waves' cycles";
  if (in.issue_active)
    text += ", an instruction issued in " + number(*in.issue_active * 100) + " % of cycles";
  return text + ")";
}

/// "the L1 fetches 32.0 sectors per global request (> 16.0)" when the accesses are uncoalesced.
std::optional<std::string> uncoalesced_because(const bottleneck_inputs& in,
                                               const bottleneck_thresholds& t) {
  std::string why;
  if (in.access.sectors_per_request &&
      *in.access.sectors_per_request > t.uncoalesced_min_sectors_per_request)
    why = "the L1 fetches " + number(*in.access.sectors_per_request) +
          " sectors of 32 B per global request (> " +
          number(t.uncoalesced_min_sectors_per_request) +
          "; a warp's 4-byte accesses to consecutive addresses need 4)";
  else if (in.access.coalescing_pct && *in.access.coalescing_pct < t.uncoalesced_max_coalescing_pct)
    why = "vL1D coalescing " + number(*in.access.coalescing_pct) + " % (< " +
          number(t.uncoalesced_max_coalescing_pct) + " %; 100 % is one vL1D access per four lanes)";
  else
    return std::nullopt;
  // Compute near its peak and ahead of every memory level limits first.
  const double memory_top = std::max(
      {in.memory_pct.value_or(0), in.access.l1_pct.value_or(0), in.access.l2_pct.value_or(0)});
  if (in.compute_pct && *in.compute_pct >= t.sol_high_pct && *in.compute_pct > memory_top)
    return std::nullopt;
  std::string levels;
  for (const auto& [name, pct] :
       {std::pair{"L1", in.access.l1_pct}, std::pair{"L2", in.access.l2_pct},
        std::pair{"DRAM", in.memory_pct}})
    if (pct)
      levels += std::string(levels.empty() ? "" : ", ") + name + " " + number(*pct) + " %";
  if (!levels.empty())
    why += "; throughput of peak: " + levels;
  return why;
}

/// "L2 at 88.7 % of its peak" when a cache level, not the DRAM, is where the bytes move.
std::optional<std::string> cache_level_because(const bottleneck_inputs& in,
                                               const bottleneck_thresholds& t) {
  const bool l1 = in.access.l1_pct && *in.access.l1_pct >= t.sol_high_pct;
  const bool l2 = in.access.l2_pct && *in.access.l2_pct >= t.sol_high_pct;
  if (!l1 && !l2)
    return std::nullopt;
  const bool l2_top = l2 && (!l1 || *in.access.l2_pct >= *in.access.l1_pct);
  return std::string(l2_top ? "L2" : "L1") + " at " +
         number(l2_top ? *in.access.l2_pct : *in.access.l1_pct) +
         " % of its peak (>= " + number(t.sol_high_pct) + " %): the bytes move between the caches";
}

double read_value(const json& values, const char* key, double fallback) {
  if (!values.contains(key))
    return fallback;
  const json& entry = values.at(key);
  const json& v = entry.is_object() ? entry.value("value", json()) : entry;
  if (!v.is_number())
    throw std::runtime_error(std::string("bottleneck thresholds: \"") + key +
                             "\" is not a number; fix: give it as {\"value\": <number>, "
                             "\"source\": \"...\"}");
  return v.get<double>();
}

} // namespace

std::string_view to_string(bottleneck_class c) {
  switch (c) {
  case bottleneck_class::memory_bandwidth_bound: return "memory-bandwidth bound";
  case bottleneck_class::compute_throughput_bound: return "compute-throughput bound";
  case bottleneck_class::latency_bound: return "latency bound";
  case bottleneck_class::under_occupied: return "under-occupied";
  case bottleneck_class::divergence_limited: return "divergence limited";
  case bottleneck_class::launch_overhead_bound: return "launch-overhead bound";
  case bottleneck_class::balanced: return "balanced";
  case bottleneck_class::memory_uncoalesced: return "memory: uncoalesced";
  }
  return "?";
}

std::string_view to_id(bottleneck_class c) {
  switch (c) {
  case bottleneck_class::memory_bandwidth_bound: return "memory_bandwidth_bound";
  case bottleneck_class::compute_throughput_bound: return "compute_throughput_bound";
  case bottleneck_class::latency_bound: return "latency_bound";
  case bottleneck_class::under_occupied: return "under_occupied";
  case bottleneck_class::divergence_limited: return "divergence_limited";
  case bottleneck_class::launch_overhead_bound: return "launch_overhead_bound";
  case bottleneck_class::balanced: return "balanced";
  case bottleneck_class::memory_uncoalesced: return "memory_uncoalesced";
  }
  return "unknown";
}

bottleneck_thresholds bottleneck_thresholds::from_json(const json& config) {
  if (!config.is_object() || !config.contains("values") || !config.at("values").is_object())
    throw std::runtime_error("bottleneck thresholds: no \"values\" object; fix: use the shape of "
                             "configs/analysis/bottleneck.json");
  const json& v = config.at("values");
  bottleneck_thresholds t;
  t.sol_high_pct = read_value(v, "sol_high_pct", t.sol_high_pct);
  t.sol_low_pct = read_value(v, "sol_low_pct", t.sol_low_pct);
  t.sol_gap_pct = read_value(v, "sol_gap_pct", t.sol_gap_pct);
  t.min_waves_per_cu = read_value(v, "min_waves_per_cu", t.min_waves_per_cu);
  t.under_occupied_max_occupancy =
      read_value(v, "under_occupied_max_occupancy", t.under_occupied_max_occupancy);
  t.divergence_min_active_fraction =
      read_value(v, "divergence_min_active_fraction", t.divergence_min_active_fraction);
  t.launch_idle_share = read_value(v, "launch_idle_share", t.launch_idle_share);
  t.stall_share = read_value(v, "stall_share", t.stall_share);
  t.uncoalesced_min_sectors_per_request =
      read_value(v, "uncoalesced_min_sectors_per_request", t.uncoalesced_min_sectors_per_request);
  t.uncoalesced_max_coalescing_pct =
      read_value(v, "uncoalesced_max_coalescing_pct", t.uncoalesced_max_coalescing_pct);
  return t;
}

bottleneck_thresholds bottleneck_thresholds::defaults() {
  for (const auto& file : embedded_analysis_configs()) {
    if (file.name == "bottleneck")
      return from_json(json::parse(file.text));
  }
  throw std::runtime_error("configs/analysis/bottleneck.json is not compiled in; fix: re-run "
                           "cmake (stages/CMakeLists.txt embeds configs/analysis/*.json)");
}

bottleneck_label classify(const bottleneck_inputs& in, const bottleneck_thresholds& t) {
  const json measured = measured_of(in);

  // 1. The host's launches set the pace: the stream waits longer than the kernel runs.
  if (in.mean_idle_before_ns && in.mean_duration_ns &&
      *in.mean_idle_before_ns + *in.mean_duration_ns > 0) {
    const double idle_share =
        *in.mean_idle_before_ns / (*in.mean_idle_before_ns + *in.mean_duration_ns);
    if (idle_share >= t.launch_idle_share) {
      return make(bottleneck_class::launch_overhead_bound, "launch.idle_share",
                  "its stream is idle " + number(idle_share * 100) +
                      " % of the time between its dispatches (mean idle " +
                      number(*in.mean_idle_before_ns / 1e3, 2) + " us before a " +
                      number(*in.mean_duration_ns / 1e3, 2) +
                      " us dispatch; >= " + number(t.launch_idle_share * 100) + " %)",
                  {{"launch_idle_share", t.launch_idle_share}}, measured, in);
    }
  }

  // 1b. Accesses that fetch far more than they use: the access order is the fix.
  if (const auto why = uncoalesced_because(in, t)) {
    return make(bottleneck_class::memory_uncoalesced, "memory.uncoalesced", *why,
                {{"uncoalesced_min_sectors_per_request", t.uncoalesced_min_sectors_per_request},
                 {"uncoalesced_max_coalescing_pct", t.uncoalesced_max_coalescing_pct},
                 {"sol_high_pct", t.sol_high_pct}},
                measured, in);
  }

  if (!in.compute_pct || !in.memory_pct) {
    // 2. No roofline: only the occupancy side can be judged.
    if (const auto why = under_occupied_because(in, t)) {
      return make(bottleneck_class::under_occupied, "occupancy.without_roofline", *why,
                  {{"min_waves_per_cu", t.min_waves_per_cu},
                   {"under_occupied_max_occupancy", t.under_occupied_max_occupancy}},
                  measured, in);
    }
    bottleneck_label none;
    none.measured = measured;
    none.missing = std::string("no roofline (") +
                   (!in.compute_pct && !in.memory_pct ? "compute and memory throughput"
                    : !in.compute_pct                 ? "compute throughput"
                                                      : "memory throughput") +
                   " unknown): record counters with `rocm-perf profile --counters roofline`";
    // A stall known without the roofline is evidence, not a class: waiting on memory can mean
    // latency or a saturated bus, which only the throughput tells apart.
    if (const std::string stalls = stall_detail(in, t); !stalls.empty())
      none.missing += stalls + ": " + stall_advice(in.top_stall);
    return none;
  }

  const double compute = *in.compute_pct;
  const double memory = *in.memory_pct;
  const std::string both =
      "compute " + number(compute) + " % and memory " + number(memory) + " % of peak";
  // The compute side's class: wasted lanes make a compute-heavy kernel divergence limited.
  auto compute_side = [&](std::string rule, std::string because, json thresholds) {
    if (const auto why = divergent_because(in, t)) {
      thresholds["divergence_min_active_fraction"] = t.divergence_min_active_fraction;
      return make(bottleneck_class::divergence_limited, rule + ".divergent", because + "; " + *why,
                  std::move(thresholds), measured, in);
    }
    return make(bottleneck_class::compute_throughput_bound, std::move(rule), std::move(because),
                std::move(thresholds), measured, in);
  };

  // 3. One unit runs near its peak.
  if (std::max(compute, memory) >= t.sol_high_pct) {
    const json thresholds = {{"sol_high_pct", t.sol_high_pct}};
    const std::string because = both + " (one >= " + number(t.sol_high_pct) + " %)";
    if (compute >= memory)
      return compute_side("sol.high.compute", because, thresholds);
    return make(bottleneck_class::memory_bandwidth_bound, "sol.high.memory", because, thresholds,
                measured, in);
  }
  // 4. Neither unit is busy: too little work in flight, or waiting on latency.
  if (compute < t.sol_low_pct && memory < t.sol_low_pct) {
    json thresholds = {{"sol_low_pct", t.sol_low_pct}};
    const std::string because = both + " (both < " + number(t.sol_low_pct) + " %)";
    if (const auto why = cache_level_because(in, t)) {
      thresholds["sol_high_pct"] = t.sol_high_pct;
      return make(bottleneck_class::memory_bandwidth_bound, "sol.both_low.cache_level",
                  because + "; " + *why, thresholds, measured, in);
    }
    if (const auto why = under_occupied_because(in, t)) {
      thresholds["min_waves_per_cu"] = t.min_waves_per_cu;
      thresholds["under_occupied_max_occupancy"] = t.under_occupied_max_occupancy;
      return make(bottleneck_class::under_occupied, "sol.both_low.occupancy", because + "; " + *why,
                  thresholds, measured, in);
    }
    if (const auto why = divergent_because(in, t)) {
      thresholds["divergence_min_active_fraction"] = t.divergence_min_active_fraction;
      return make(bottleneck_class::divergence_limited, "sol.both_low.divergent",
                  because + "; " + *why, thresholds, measured, in);
    }
    const std::string stalls = stall_detail(in, t);
    auto label =
        make(bottleneck_class::latency_bound, "sol.both_low.latency",
             because + ", with enough waves to fill the GPU" + stalls, thresholds, measured, in);
    if (!stalls.empty()) {
      label.rule += ".stall";
      label.thresholds["stall_share"] = t.stall_share;
      label.next_step = stall_advice(in.top_stall);
    }
    return label;
  }
  // 5. One unit clearly ahead of the other.
  if (std::fabs(compute - memory) >= t.sol_gap_pct) {
    const json thresholds = {{"sol_low_pct", t.sol_low_pct}, {"sol_gap_pct", t.sol_gap_pct}};
    const std::string because = both + " (" + number(std::fabs(compute - memory)) +
                                " points apart, >= " + number(t.sol_gap_pct) + ")";
    if (compute > memory)
      return compute_side("sol.gap.compute", because, thresholds);
    return make(bottleneck_class::memory_bandwidth_bound, "sol.gap.memory", because, thresholds,
                measured, in);
  }
  // 6. Both busy, neither ahead.
  return make(bottleneck_class::balanced, "sol.balanced",
              both + " (within " + number(t.sol_gap_pct) +
                  " points, at least one >= " + number(t.sol_low_pct) + " %)",
              {{"sol_low_pct", t.sol_low_pct}, {"sol_gap_pct", t.sol_gap_pct}}, measured, in);
}

json to_json(const bottleneck_label& label) {
  json j;
  if (label.label) {
    j["class"] = to_id(*label.label);
    j["name"] = to_string(*label.label);
    j["rule"] = label.rule;
    j["because"] = label.because;
    j["thresholds"] = label.thresholds;
    j["next_step"] = label.next_step;
  } else {
    j["class"] = nullptr;
    j["missing"] = label.missing;
  }
  j["measured"] = label.measured;
  return j;
}

} // namespace rpl::stages::analysis
