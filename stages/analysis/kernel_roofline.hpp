#pragma once
/// The roofline of one kernel from its hardware counters: FLOPs by data type, DRAM/HBM bytes,
/// arithmetic intensity, achieved FLOP/s and bytes/s, percent of the applicable peaks, the ridge
/// point and the bound. Formulas as shared/reference/hardware-models.md gives them:
///
/// AMD (wave64, §1.1): VALU FLOPs per type = 64 x (ADD + MUL + TRANS + 2 FMA) of
/// SQ_INSTS_VALU_<op>_<F16|F32|F64>; MFMA FLOPs per type = 512 x SQ_INSTS_VALU_MFMA_MOPS_<type>;
/// HBM bytes on gfx90a = 32 RDREQ_32B + 64 (RDREQ - RDREQ_32B) + 64 WRREQ_64B + 32 (WRREQ -
/// WRREQ_64B) of TCC_EA_*, on gfx942 = 128 TCC_BUBBLE + 32 TCC_EA0_RDREQ_32B + 64 (TCC_EA0_RDREQ -
/// TCC_BUBBLE - TCC_EA0_RDREQ_32B) + 32 (TCC_EA0_WRREQ - TCC_EA0_WRREQ_64B) + 64 TCC_EA0_WRREQ_64B.
/// Each counter is read as NAME_sum (derived) or NAME (its instances summed).
///
/// NVIDIA (Nsight Compute, §1.5): fp32 = fadd + fmul + 2 ffma, fp64 = dadd + dmul + 2 dfma,
/// fp16 = 2 hadd + 2 hmul + 4 hfma (smsp__sass_thread_inst_executed_op_*_pred_on.sum); tensor
/// FLOPs = the dense math ops of sm__ops_path_tensor_op_{hgmma,hmma}_src_<type>*_sparsity_off.sum;
/// DRAM bytes = dram__bytes_read.sum + dram__bytes_write.sum.
///
/// Peaks come from the target's model (configs/arch, each with its source): the product the agent
/// names (or the model's first product, said in a note), overridable per key. Missing counters give
/// no roofline and say which; a byte formula that goes negative, or a non-finite value, is a
/// problem reported with the values, and the roofline is not given.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "stages/hardware/arch_model.hpp"
#include "stages/trace/counter_values.hpp"

namespace rpl::stages::analysis {

/// The roofs of one GPU: FLOP/s per data type ("fp32", "bf16_tensor", "mfma_f16", ...) and DRAM
/// bytes/s, each with where it came from.
struct peaks {
  std::string product; ///< the product the figures are for
  std::map<std::string, double> flops_per_s;
  std::optional<double> bytes_per_s;
  std::vector<std::string> notes; ///< the product assumed, overrides applied
};

/// The roofs of `model` for the agent's `product_name` (matched by name, else the first product),
/// then `overrides` ("hbm" for bytes/s, a data type for FLOP/s) on top.
peaks peaks_for(const arch_model& model,
                const std::string& product_name,
                const std::map<std::string, double>& overrides = {});

struct kernel_roofline {
  std::string name;
  std::string target;
  std::size_t dispatches = 0;          ///< with counters
  double duration_ns = 0;              ///< per dispatch (the timeline's mean where given)
  std::map<std::string, double> flops; ///< per dispatch, by data type
  double total_flops = 0;              ///< per dispatch
  std::optional<double> dram_bytes;    ///< per dispatch
  std::optional<double> intensity;     ///< FLOP per DRAM byte
  double flops_per_s = 0;
  std::optional<double> bytes_per_s;
  std::string dominant_type; ///< the type with the most FLOPs; its peak is the compute roof
  std::optional<double> peak_flops_per_s;
  std::optional<double> peak_bytes_per_s;
  std::optional<double> percent_of_compute_peak;
  std::optional<double> percent_of_memory_peak;
  std::optional<double> ridge_point; ///< peak FLOP/s / peak bytes/s
  std::string bound;                 ///< "compute" or "memory" (intensity vs ridge); empty unknown
  /// Nsight Compute's own speed-of-light percentages, when the pass recorded them.
  std::optional<double> sol_compute_pct;
  std::optional<double> sol_memory_pct;
  std::optional<double> active_thread_fraction; ///< threads per warp instruction / warp size
  std::optional<double> issue_active;           ///< smsp__issue_active.avg.per_cycle_active
  std::string top_stall;                 ///< the stall reason with the largest part of the latency
  std::optional<double> top_stall_share; ///< that part: stall / latency per issued instruction
};

/// A roofline, or why there is none.
struct roofline_outcome {
  std::optional<kernel_roofline> roofline;
  std::string missing;               ///< what was missing, with how to get it
  std::vector<std::string> problems; ///< inconsistent counters, with their values
};

/// The roofline of one kernel's counters on `peaks`; `timeline_duration_ns` (the traced mean
/// duration of its dispatches) is used when given, else the counter passes' own.
roofline_outcome compute_roofline(const rocpd::kernel_counters& counters,
                                  const peaks& roofs,
                                  std::optional<double> timeline_duration_ns);

/// The roofline of each of the kernel's dispatches (kernel_counters::dispatches_by_ordinal), with
/// the dispatch's own duration; a dispatch whose counters are incomplete or inconsistent is null.
std::vector<std::optional<kernel_roofline>>
dispatch_rooflines(const rocpd::kernel_counters& counters, const peaks& roofs);

nlohmann::json to_json(const kernel_roofline& r);
nlohmann::json to_json(const peaks& p);

} // namespace rpl::stages::analysis
