#include "stages/hardware/occupancy_model.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>

#include "stages/hardware/integer_rounding.hpp"

namespace rpl::stages {
namespace {

constexpr std::uint64_t unbounded = std::numeric_limits<std::uint64_t>::max();

std::string format_bytes(std::uint64_t bytes) {
  if (bytes % 1024 == 0)
    return std::to_string(bytes / 1024) + " KiB";
  if (bytes > 1024 && bytes * 10 % 1024 == 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
    return buf;
  }
  return std::to_string(bytes) + " bytes";
}

std::string format_percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", fraction * 100.0);
  std::string s = buf;
  if (s.size() > 2 && s.substr(s.size() - 2) == ".0")
    s.resize(s.size() - 2);
  return s + "%";
}

/// Each resource's workgroup (block) limit, in the order that breaks ties: a resource listed
/// earlier is named the limiter when two allow the same count, so full hardware slots win.
using limits_list = std::vector<std::pair<occupancy_limiter, std::uint64_t>>;

struct evaluation {
  occupancy_result result;
  std::string refusal; ///< why nothing fits, when occupancy is 0
};

/// Fills the result from the per-resource workgroup limits. `simds` spreads a workgroup's waves
/// (1 on NVIDIA, where the unit is the SM).
void finish(occupancy_result& out,
            const limits_list& limits,
            std::uint64_t waves_per_group,
            std::uint64_t simds) {
  std::uint64_t groups = unbounded;
  for (const auto& [limiter, count] : limits) {
    if (count < groups) {
      groups = count;
      out.limiter = limiter;
    }
    const std::uint64_t waves =
        count == unbounded ? out.max_waves_per_simd : div_up(count * waves_per_group, simds);
    out.limit_by_resource[to_string(limiter)] =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(waves, out.max_waves_per_simd));
  }
  // The wave-slot limit is always present, so `groups` is bounded.
  out.active_workgroups_per_cu = static_cast<std::uint32_t>(groups);
  out.active_waves_per_cu = static_cast<std::uint32_t>(groups * waves_per_group);
  out.active_waves_per_simd = static_cast<std::uint32_t>(div_up(groups * waves_per_group, simds));
  out.occupancy = out.max_waves_per_cu == 0
                      ? 0.0
                      : static_cast<double>(out.active_waves_per_cu) / out.max_waves_per_cu;
}

std::uint32_t wave_size_for(const arch_model& arch, const kernel_resources& k) {
  const std::uint32_t ws = k.wave_size == 0 ? arch.wave_size : k.wave_size;
  if (std::find(arch.wave_sizes.begin(), arch.wave_sizes.end(), ws) == arch.wave_sizes.end()) {
    std::string sizes;
    for (const std::uint32_t w : arch.wave_sizes)
      sizes += (sizes.empty() ? "" : " or ") + std::to_string(w);
    throw arch_error(arch.target + " has no wave size " + std::to_string(ws) + "; fix: use " +
                     sizes + " (or 0 for the default, " + std::to_string(arch.wave_size) + ")");
  }
  return ws;
}

/// Waves per SIMD a wave's unified VGPR footprint allows (LLVM getNumWavesPerEUWithNumVGPRs).
std::uint32_t waves_with_vgprs(const amd_limits& m, const vgpr_file& file, std::uint64_t total) {
  if (total < file.granule)
    return m.max_waves_per_simd;
  const std::uint64_t waves = file.registers_per_lane / align_up(total, file.granule);
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(std::max<std::uint64_t>(waves, 1), m.max_waves_per_simd));
}

evaluation evaluate_amd(const arch_model& arch,
                        const amd_limits& m,
                        const kernel_resources& k,
                        std::uint32_t ws) {
  evaluation e;
  occupancy_result& out = e.result;
  const std::uint64_t simds = m.simds_per_unit;
  out.unit = "waves per SIMD";
  out.wave_size = ws;
  out.max_waves_per_simd = m.max_waves_per_simd;
  out.max_waves_per_cu = m.max_waves_per_simd * m.simds_per_unit;

  if (k.block_size == 0 || k.block_size > m.max_workgroup_size) {
    out.limiter = occupancy_limiter::block_size;
    out.limit_by_resource[to_string(occupancy_limiter::block_size)] = 0;
    e.refusal = k.block_size == 0 ? "a workgroup of 0 threads cannot run"
                                  : "a workgroup of " + std::to_string(k.block_size) +
                                        " threads exceeds the maximum of " +
                                        std::to_string(m.max_workgroup_size) + " on " + arch.target;
    return e;
  }
  const std::uint64_t w = div_up(k.block_size, ws);
  const vgpr_file& file = m.vgpr_files.at(ws);
  limits_list limits;
  limits.emplace_back(occupancy_limiter::waves, simds * m.max_waves_per_simd / w);

  // VGPRs (and AGPRs on a unified file).
  const std::uint64_t footprint = vgpr_footprint(m, k);
  // With the unified total given, the arch part is what precedes the AGPRs.
  const std::uint64_t arch_vgprs = m.unified_vgpr_agpr && k.vgprs_include_agprs
                                       ? footprint - std::min<std::uint64_t>(k.agprs, footprint)
                                       : k.vgprs;
  const bool vgprs_refused = arch_vgprs > m.max_vgprs_per_wave || k.agprs > m.max_agprs_per_wave ||
                             footprint > m.max_unified_vgprs_per_wave ||
                             footprint > file.registers_per_lane;
  const std::uint64_t vgpr_waves = vgprs_refused ? 0 : waves_with_vgprs(m, file, footprint);
  limits.emplace_back(occupancy_limiter::vgprs, simds * vgpr_waves / w);
  if (vgprs_refused) {
    if (k.agprs > m.max_agprs_per_wave)
      e.refusal = std::to_string(k.agprs) + " AGPRs exceed the " +
                  std::to_string(m.max_agprs_per_wave) + " a wave may use on " + arch.target;
    else if (arch_vgprs > m.max_vgprs_per_wave)
      e.refusal = std::to_string(arch_vgprs) + " VGPRs exceed the " +
                  std::to_string(m.max_vgprs_per_wave) + " a wave may address on " + arch.target;
    else
      e.refusal = "a VGPR+AGPR footprint of " + std::to_string(footprint) + " exceeds the " +
                  std::to_string(m.max_unified_vgprs_per_wave) + " a wave may use on " +
                  arch.target;
  } else if (simds * vgpr_waves / w == 0) {
    e.refusal = "a workgroup of " + std::to_string(w) + " waves needs " +
                std::to_string(div_up(w, simds)) + " waves per SIMD but " +
                std::to_string(footprint) + " VGPRs allow only " + std::to_string(vgpr_waves);
  }

  // SGPRs: a GFX9 limiter only; gfx10+ allocates them per wave.
  std::uint64_t sgpr_groups = unbounded;
  if (k.sgprs > m.max_sgprs_per_wave) {
    sgpr_groups = 0;
    e.refusal = std::to_string(k.sgprs) + " SGPRs exceed the " +
                std::to_string(m.max_sgprs_per_wave) + " a wave may use on " + arch.target;
  } else if (!m.waves_by_sgprs.empty()) {
    std::uint64_t waves = m.waves_by_sgprs.back().second;
    for (const auto& [max_sgprs, steps_waves] : m.waves_by_sgprs)
      if (k.sgprs <= max_sgprs) {
        waves = steps_waves;
        break;
      }
    sgpr_groups = simds * std::min<std::uint64_t>(waves, m.max_waves_per_simd) / w;
  }
  limits.emplace_back(occupancy_limiter::sgprs, sgpr_groups);

  // LDS: rounded to the allocation granule, against the CU's (WGP's) LDS.
  std::uint64_t lds_groups = unbounded;
  if (k.lds_bytes > m.max_lds_per_workgroup_bytes) {
    lds_groups = 0;
    e.refusal = "LDS of " + format_bytes(k.lds_bytes) + " per workgroup exceeds the " +
                format_bytes(m.max_lds_per_workgroup_bytes) + " a workgroup may allocate on " +
                arch.target;
  } else if (const std::uint64_t alloc = align_up(k.lds_bytes, m.lds_granule_bytes); alloc > 0) {
    lds_groups = m.lds_per_unit_bytes / alloc;
  }
  limits.emplace_back(occupancy_limiter::lds, lds_groups);

  // Barriers: one per multi-wave workgroup.
  limits.emplace_back(occupancy_limiter::barriers, w > 1 || m.single_wave_workgroup_uses_barrier
                                                       ? m.barriers_per_unit
                                                       : unbounded);
  finish(out, limits, w, simds);
  return e;
}

/// The smallest carveout that holds `bytes` (cudaOccAlignUpShmemSizeVoltaPlus).
std::uint64_t carveout_for(const nvidia_limits& m, std::uint64_t bytes) {
  for (const std::uint64_t c : m.shared_memory_carveouts_bytes)
    if (c >= bytes)
      return c;
  return m.shared_memory_carveouts_bytes.back();
}

evaluation evaluate_nvidia(const arch_model& arch,
                           const nvidia_limits& m,
                           const kernel_resources& k,
                           std::uint32_t ws) {
  evaluation e;
  occupancy_result& out = e.result;
  out.unit = "warps per SM";
  out.wave_size = ws;
  out.max_waves_per_simd = m.max_warps_per_sm;
  out.max_waves_per_cu = m.max_warps_per_sm;

  if (k.block_size == 0 || k.block_size > m.max_threads_per_block) {
    out.limiter = occupancy_limiter::block_size;
    out.limit_by_resource[to_string(occupancy_limiter::block_size)] = 0;
    e.refusal = k.block_size == 0
                    ? "a block of 0 threads cannot run"
                    : "a block of " + std::to_string(k.block_size) +
                          " threads exceeds the maximum of " +
                          std::to_string(m.max_threads_per_block) + " on " + arch.target;
    return e;
  }
  const std::uint64_t w = div_up(k.block_size, ws);
  limits_list limits;
  limits.emplace_back(occupancy_limiter::waves, m.max_warps_per_sm / w);
  limits.emplace_back(occupancy_limiter::workgroups, m.max_blocks_per_sm);

  // Registers: allocated per warp in units, per sub-partition (cudaOccMaxBlocksPerSMRegsLimit).
  std::uint64_t reg_blocks = unbounded;
  const std::uint64_t regs_per_warp =
      align_up(std::uint64_t{k.vgprs} * ws, m.register_allocation_unit_size);
  if (k.vgprs > m.max_registers_per_thread) {
    reg_blocks = 0;
    e.refusal = std::to_string(k.vgprs) + " registers per thread exceed the maximum of " +
                std::to_string(m.max_registers_per_thread) + " on " + arch.target;
  } else if (regs_per_warp * align_up(w, m.sub_partitions_per_sm) > m.registers_per_block ||
             regs_per_warp * w > m.registers_per_block) {
    // The hardware check assumes the block's warps are spread over all sub-partitions.
    reg_blocks = 0;
    e.refusal = "a block of " + std::to_string(w) + " warps at " + std::to_string(regs_per_warp) +
                " registers per warp exceeds the " + std::to_string(m.registers_per_block) +
                " registers a block may use on " + arch.target;
  } else if (regs_per_warp > 0) {
    const std::uint64_t per_sub_partition =
        m.registers_per_sm / m.sub_partitions_per_sm / regs_per_warp;
    reg_blocks = per_sub_partition * m.sub_partitions_per_sm / w;
  }
  limits.emplace_back(occupancy_limiter::registers, reg_blocks);

  // Shared memory: the block's bytes plus the driver's reservation, rounded to the allocation
  // unit, against the carveout (raised to the smallest that holds one block).
  std::uint64_t smem_blocks = unbounded;
  const std::uint64_t alloc = align_up(k.lds_bytes + m.reserved_shared_memory_per_block_bytes,
                                       m.shared_memory_allocation_unit_bytes);
  if (alloc > m.max_shared_memory_per_block_bytes + m.reserved_shared_memory_per_block_bytes) {
    smem_blocks = 0;
    e.refusal = "shared memory of " + format_bytes(k.lds_bytes) + " per block exceeds the " +
                format_bytes(m.max_shared_memory_per_block_bytes) + " a block may use on " +
                arch.target + " (opt-in maximum)";
  } else if (alloc > 0) {
    std::uint64_t carveout = m.shared_memory_per_sm_bytes;
    if (k.shared_memory_carveout_bytes)
      carveout =
          carveout_for(m, std::min(*k.shared_memory_carveout_bytes, m.shared_memory_per_sm_bytes));
    if (carveout < alloc)
      carveout = carveout_for(m, alloc);
    smem_blocks = carveout / alloc;
  }
  limits.emplace_back(occupancy_limiter::shared_memory, smem_blocks);
  finish(out, limits, w, 1);
  return e;
}

evaluation evaluate(const arch_model& arch, const kernel_resources& k) {
  const std::uint32_t ws = wave_size_for(arch, k);
  if (arch.amd)
    return evaluate_amd(arch, *arch.amd, k, ws);
  if (arch.nvidia)
    return evaluate_nvidia(arch, *arch.nvidia, k, ws);
  throw arch_error(arch.target + ": the model has neither AMD nor NVIDIA limits");
}

/// "5 waves per SIMD (62.5%)", plus what limits it next when that is not `searched`.
std::string describe(const occupancy_result& r, occupancy_limiter searched) {
  std::string s =
      std::to_string(r.active_waves_per_simd) + " " +
      (r.active_waves_per_simd == 1 ? (r.unit == "warps per SM" ? "warp per SM" : "wave per SIMD")
                                    : r.unit) +
      " (" + format_percent(r.occupancy) + ")";
  if (r.occupancy < 1.0 && r.limiter != searched)
    s += ", then limited by " + std::string(to_string(r.limiter));
  return s;
}

/// Tries `candidates` (ever smaller use of one resource) and reports the first step that raises
/// occupancy and the best one reached. Returns whether any step helped.
template <typename Apply, typename Label>
bool search_steps(const arch_model& arch,
                  const kernel_resources& k,
                  const occupancy_result& base,
                  occupancy_limiter searched,
                  const std::vector<std::uint64_t>& candidates,
                  Apply apply,
                  Label label,
                  std::vector<std::string>& out) {
  double best = base.occupancy;
  std::vector<std::pair<std::uint64_t, occupancy_result>> steps;
  for (const std::uint64_t c : candidates) {
    kernel_resources trial = k;
    apply(trial, c);
    occupancy_result r = evaluate(arch, trial).result;
    if (r.occupancy > best + 1e-12) {
      best = r.occupancy;
      steps.emplace_back(c, std::move(r));
    }
  }
  if (steps.empty())
    return false;
  out.push_back("with " + label(steps.front().first) + ": " +
                describe(steps.front().second, searched));
  if (steps.size() > 1)
    out.push_back("with " + label(steps.back().first) + ": " +
                  describe(steps.back().second, searched));
  return true;
}

/// Block size: a size (a multiple of the wave) that raises occupancy, the highest first and then
/// the nearest to the current one. Only tried when the block size, wave slots, workgroup or
/// barrier limits bound occupancy. Returns whether it found one.
bool suggest_block_size(const arch_model& arch,
                        const kernel_resources& k,
                        const occupancy_result& r,
                        std::vector<std::string>& out) {
  if (r.limiter != occupancy_limiter::block_size && r.limiter != occupancy_limiter::waves &&
      r.limiter != occupancy_limiter::workgroups && r.limiter != occupancy_limiter::barriers)
    return false;
  const bool amd = arch.amd.has_value();
  const std::string block_noun = amd ? "workgroup" : "block";
  const std::uint32_t max_block =
      amd ? arch.amd->max_workgroup_size : arch.nvidia->max_threads_per_block;
  const std::uint32_t ws = r.wave_size;
  std::uint64_t best_block = 0;
  double best = r.occupancy;
  occupancy_result best_result;
  for (std::uint64_t b = ws; b <= max_block; b += ws) {
    kernel_resources trial = k;
    trial.block_size = static_cast<std::uint32_t>(b);
    occupancy_result t = evaluate(arch, trial).result;
    const auto distance = [&](std::uint64_t x) {
      return x > k.block_size ? x - k.block_size : k.block_size - x;
    };
    // Prefer the highest occupancy, then the size nearest to the current one.
    if (t.occupancy > best + 1e-12 ||
        (best_block != 0 && t.occupancy > best - 1e-12 && distance(b) < distance(best_block))) {
      best = t.occupancy;
      best_block = b;
      best_result = std::move(t);
    }
  }
  if (best_block == 0)
    return false;
  out.push_back("with " + std::to_string(best_block) + " threads per " + block_noun + ": " +
                describe(best_result, occupancy_limiter::block_size));
  return true;
}

/// AMD VGPRs (AGPRs included on a unified file): every granule step below the current footprint.
bool suggest_vgprs(const arch_model& arch,
                   const amd_limits& m,
                   const kernel_resources& k,
                   const occupancy_result& r,
                   std::vector<std::string>& out) {
  const vgpr_file& file = m.vgpr_files.at(r.wave_size);
  const std::uint64_t footprint = vgpr_footprint(m, k);
  const std::uint64_t top = std::min<std::uint64_t>(
      align_up(footprint, file.granule),
      std::min<std::uint64_t>(m.max_unified_vgprs_per_wave, file.registers_per_lane) +
          file.granule);
  std::vector<std::uint64_t> candidates;
  for (std::uint64_t f = top; f > file.granule;) {
    f -= file.granule;
    if (f <= m.max_vgprs_per_wave || (k.agprs > 0 && m.unified_vgpr_agpr))
      candidates.push_back(f);
  }
  const bool unified = k.agprs > 0 && m.unified_vgpr_agpr;
  return search_steps(
      arch, k, r, occupancy_limiter::vgprs, candidates,
      [&](kernel_resources& t, std::uint64_t f) {
        t.vgprs_include_agprs = false;
        if (unified && f > m.max_vgprs_per_wave) {
          t.vgprs = m.max_vgprs_per_wave;
          t.agprs = static_cast<std::uint32_t>(f - m.max_vgprs_per_wave);
        } else {
          t.vgprs = static_cast<std::uint32_t>(f);
          t.agprs = 0;
        }
      },
      [&](std::uint64_t f) {
        return unified ? "a VGPR+AGPR footprint of at most " + std::to_string(f) + " per lane"
                       : "at most " + std::to_string(f) + " VGPRs";
      },
      out);
}

/// AMD SGPRs (the step bounds below the current count) and LDS (every allocation granule below
/// the current allocation).
bool suggest_sgprs_and_lds(const arch_model& arch,
                           const amd_limits& m,
                           const kernel_resources& k,
                           const occupancy_result& r,
                           std::vector<std::string>& out) {
  std::vector<std::uint64_t> candidates;
  for (auto it = m.waves_by_sgprs.rbegin(); it != m.waves_by_sgprs.rend(); ++it)
    if (it->first < k.sgprs)
      candidates.push_back(it->first);
  if (m.waves_by_sgprs.empty() && k.sgprs > m.max_sgprs_per_wave)
    candidates.push_back(m.max_sgprs_per_wave);
  bool helped = search_steps(
      arch, k, r, occupancy_limiter::sgprs, candidates,
      [](kernel_resources& t, std::uint64_t s) { t.sgprs = static_cast<std::uint32_t>(s); },
      [](std::uint64_t s) { return "at most " + std::to_string(s) + " SGPRs"; }, out);
  candidates.clear();
  for (std::uint64_t b = std::min(align_up(k.lds_bytes, m.lds_granule_bytes),
                                  m.max_lds_per_workgroup_bytes + m.lds_granule_bytes);
       b >= m.lds_granule_bytes;) {
    b -= m.lds_granule_bytes;
    candidates.push_back(b);
  }
  helped |= search_steps(
      arch, k, r, occupancy_limiter::lds, candidates,
      [](kernel_resources& t, std::uint64_t b) { t.lds_bytes = b; },
      [](std::uint64_t b) { return "at most " + format_bytes(b) + " LDS per workgroup"; }, out);
  return helped;
}

/// NVIDIA registers per thread: every count below the current one.
bool suggest_registers(const arch_model& arch,
                       const nvidia_limits& m,
                       const kernel_resources& k,
                       const occupancy_result& r,
                       std::vector<std::string>& out) {
  std::vector<std::uint64_t> candidates;
  for (std::uint64_t n = std::min<std::uint64_t>(k.vgprs, m.max_registers_per_thread + 1); n > 1;)
    candidates.push_back(--n);
  return search_steps(
      arch, k, r, occupancy_limiter::registers, candidates,
      [](kernel_resources& t, std::uint64_t n) { t.vgprs = static_cast<std::uint32_t>(n); },
      [](std::uint64_t n) { return "at most " + std::to_string(n) + " registers per thread"; },
      out);
}

/// NVIDIA shared memory: the sizes at which the rounded per-block allocation drops a unit, then a
/// carveout below the maximum.
bool suggest_shared_memory(const arch_model& arch,
                           const nvidia_limits& m,
                           const kernel_resources& k,
                           const occupancy_result& r,
                           std::vector<std::string>& out) {
  std::vector<std::uint64_t> candidates;
  const std::uint64_t unit = m.shared_memory_allocation_unit_bytes;
  const std::uint64_t reserved = m.reserved_shared_memory_per_block_bytes;
  std::uint64_t alloc = std::min(align_up(k.lds_bytes + reserved, unit),
                                 m.max_shared_memory_per_block_bytes + reserved + unit);
  while (alloc > unit && alloc - unit >= reserved) {
    alloc -= unit;
    candidates.push_back(alloc - reserved);
  }
  bool helped = search_steps(
      arch, k, r, occupancy_limiter::shared_memory, candidates,
      [](kernel_resources& t, std::uint64_t b) { t.lds_bytes = b; },
      [](std::uint64_t b) { return "at most " + format_bytes(b) + " shared memory per block"; },
      out);
  if (k.shared_memory_carveout_bytes && r.limiter == occupancy_limiter::shared_memory) {
    kernel_resources trial = k;
    trial.shared_memory_carveout_bytes.reset();
    const occupancy_result t = evaluate(arch, trial).result;
    if (t.occupancy > r.occupancy + 1e-12) {
      out.push_back("with the maximum shared-memory carveout (" +
                    format_bytes(m.shared_memory_per_sm_bytes) +
                    "): " + describe(t, occupancy_limiter::shared_memory));
      helped = true;
    }
  }
  return helped;
}

/// Two resources tie: lowering either alone changes nothing, so say that all must go down.
void suggest_tied_resources(const occupancy_result& r, std::vector<std::string>& out) {
  std::vector<std::string> tied;
  for (const auto& [name, waves] : r.limit_by_resource)
    if (waves == r.active_waves_per_simd && name != "waves")
      tied.push_back(name);
  if (tied.size() < 2)
    return;
  std::string names;
  for (std::size_t i = 0; i < tied.size(); ++i)
    names += (i == 0 ? "" : i + 1 == tied.size() ? " and " : ", ") + tied[i];
  out.push_back(names + " each limit occupancy to " + std::to_string(r.active_waves_per_simd) +
                " " + r.unit + "; only lowering all of them raises it");
}

/// What would raise occupancy: why a launch is refused, then each resource's search, in the order
/// block size, (AMD) VGPRs, SGPRs, LDS or (NVIDIA) registers, shared memory, carveout.
void add_suggestions(const arch_model& arch,
                     const kernel_resources& k,
                     const evaluation& base,
                     std::vector<std::string>& out) {
  const occupancy_result& r = base.result;
  if (r.occupancy >= 1.0)
    return;
  if (!base.refusal.empty() && r.active_waves_per_cu == 0)
    out.push_back(base.refusal);
  bool helped = suggest_block_size(arch, k, r, out);
  if (arch.amd) {
    helped |= suggest_vgprs(arch, *arch.amd, k, r, out);
    helped |= suggest_sgprs_and_lds(arch, *arch.amd, k, r, out);
  } else {
    helped |= suggest_registers(arch, *arch.nvidia, k, r, out);
    helped |= suggest_shared_memory(arch, *arch.nvidia, k, r, out);
  }
  if (!helped && r.active_waves_per_cu > 0)
    suggest_tied_resources(r, out);
}

} // namespace

const char* to_string(occupancy_limiter value) {
  switch (value) {
  case occupancy_limiter::waves: return "waves";
  case occupancy_limiter::vgprs: return "vgprs";
  case occupancy_limiter::sgprs: return "sgprs";
  case occupancy_limiter::lds: return "lds";
  case occupancy_limiter::workgroups: return "workgroups";
  case occupancy_limiter::barriers: return "barriers";
  case occupancy_limiter::registers: return "registers";
  case occupancy_limiter::shared_memory: return "shared_memory";
  case occupancy_limiter::block_size: return "block_size";
  }
  return "unknown";
}

occupancy_result compute_occupancy(const arch_model& arch, const kernel_resources& kernel) {
  evaluation e = evaluate(arch, kernel);
  add_suggestions(arch, kernel, e, e.result.suggestions);
  return std::move(e.result);
}

} // namespace rpl::stages
