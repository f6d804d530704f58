#include "workers/tracers/ncu/ncu_counter_recorder.hpp"

#include <cstdlib>
#include <unistd.h>

#include "stages/trace/ncu_csv.hpp"
#include "stages/trace/rocpd_writer.hpp"
#include "workers/process/find_program.hpp"
#include "workers/tracers/detail/recorded_child.hpp"

namespace rpl::workers {

namespace {

std::string join(const std::vector<std::string>& words, char separator) {
  std::string out;
  for (const auto& w : words)
    out += (out.empty() ? "" : std::string(1, separator)) + w;
  return out;
}

} // namespace

std::vector<std::string> ncu_roofline_metrics(const std::string& target) {
  std::vector<std::string> metrics = {
      // Time and DRAM traffic (the memory roof).
      "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
      // FLOPs by type (fp32, fp64, fp16 with its packed weights; §1.5).
      "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
      // Tensor-core math ops (dense paths), sm_90 (wgmma and mma.sync).
      "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum",
      "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum",
      "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off.sum",
      "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum",
      "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off.sum",
      "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32_sparsity_off.sum",
      // Speed of light, waves, achieved occupancy and divergence (§4.1 rules).
      "sm__throughput.avg.pct_of_peak_sustained_elapsed",
      "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
      "launch__waves_per_multiprocessor", "sm__warps_active.avg.pct_of_peak_sustained_active",
      // Coalescing and the memory levels (memory_access.hpp): the L1's sectors per global request
      // and each level's throughput.
      "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
      "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
      "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
      "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
      "lts__throughput.avg.pct_of_peak_sustained_elapsed",
      "dram__throughput.avg.pct_of_peak_sustained_elapsed",
      "smsp__thread_inst_executed_per_inst_executed.ratio", "dram__bytes.sum.per_second",
      // Issue and warp stalls (§4.1 IssueSlotUtilization and CPIStall): the cycles an
      // instruction issued, the warp latency per issued instruction and each stall's part.
      "smsp__issue_active.avg.per_cycle_active", "smsp__average_warp_latency_per_inst_issued.ratio",
      "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
      "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
      "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
      "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
      "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
      "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
      "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
      "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
      "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio",
      "smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio",
      "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio"};
  if (target != "sm_90")
    std::erase_if(metrics, [](const std::string& m) { return m.find("_hgmma_") != m.npos; });
  return metrics;
}

std::optional<std::filesystem::path> find_ncu(const std::filesystem::path& explicit_path) {
  if (!explicit_path.empty())
    return explicit_path;
  if (const char* env = std::getenv("NCU"); env != nullptr && *env != '\0')
    return std::filesystem::path(env);
  if (auto found = find_on_path("ncu"))
    return found;
  const std::filesystem::path cuda = "/usr/local/cuda/bin/ncu";
  if (::access(cuda.c_str(), X_OK) == 0)
    return cuda;
  return std::nullopt;
}

ncu_counter_recorder::ncu_counter_recorder(ncu_options options) : options_(std::move(options)) {}

recorded_run ncu_counter_recorder::record(const std::vector<std::string>& argv,
                                          const std::filesystem::path& folder,
                                          unsigned run) {
  std::filesystem::create_directories(folder);
  const auto report = folder / "ncu_counters.ncu-rep";
  std::error_code ignored;
  std::filesystem::remove(report, ignored); // ncu refuses to overwrite without -f
  child_options profile;
  profile.argv = {options_.executable.string(),
                  "--clock-control",
                  "none",
                  "--export",
                  report.string(),
                  "--force-overwrite",
                  "--metrics",
                  join(options_.metrics, ',')};
  if (options_.launch_count > 0) {
    profile.argv.push_back("--launch-count");
    profile.argv.push_back(std::to_string(options_.launch_count));
  }
  profile.argv.insert(profile.argv.end(), argv.begin(), argv.end());
  const auto outcome = tracers_detail::run_recorded_child(
      profile, options_.timeout, options_.echo_output, "ncu, counter pass " + std::to_string(run));
  recorded_run out;
  out.wall = outcome.wall;
  out.leftovers = outcome.leftovers;
  if (!outcome.succeeded()) {
    out.status = record_status::run_failed;
    out.reason = "ncu " + tracers_detail::describe_failure(outcome) +
                 "; fix: run with --debug to see ncu's output (an unknown metric, a GPU ncu "
                 "cannot profile, or missing permissions for GPU counters)\n" +
                 tracers_detail::output_tail(outcome);
    return out;
  }
  // The CSV comes from the saved report, apart from the application's own output.
  child_options import;
  import.argv = {options_.executable.string(), "--import", report.string(), "--csv", "--page",
                 "raw",
                 // Base units: by default ncu scales each value (Mbyte, usecond, ...).
                 "--print-units", "base"};
  import.max_output_bytes = std::size_t{512} << 20;
  const auto csv = run_child(import, std::chrono::minutes(10));
  if (!csv.succeeded()) {
    out.status = record_status::run_failed;
    out.reason = "ncu --import " + report.string() + " " + tracers_detail::describe_failure(csv) +
                 "; fix: check that the report was written (disk space) and that this ncu can "
                 "read it\n" +
                 tracers_detail::output_tail(csv);
    return out;
  }
  try {
    const auto parsed = stages::ncu::parse_raw_csv(csv.output);
    if (parsed.kernels.empty()) {
      out.status = record_status::no_trace;
      out.reason = "ncu profiled no kernel launch; fix: check that the application launches "
                   "kernels on an NVIDIA GPU";
      return out;
    }
    const auto db = folder / "ncu_counters.db";
    stages::rocpd::writer w(db);
    stages::ncu::write_counter_pass(parsed, w, static_cast<std::int64_t>(::getpid()));
    w.commit();
    out.databases = {db};
  } catch (const std::exception& error) {
    out.status = record_status::run_failed;
    out.reason = std::string("ncu's report could not be read: ") + error.what();
  }
  return out;
}

} // namespace rpl::workers
