#include "workers/tracers/rocprofv3/rocprofv3_counter_recorder.hpp"

#include "workers/tracers/detail/recorded_child.hpp"

namespace rpl::workers {

std::vector<std::vector<std::string>> rocm_roofline_passes(const std::string& target) {
  std::vector<std::string> hbm;
  if (target == "gfx90a")
    hbm = {"TCC_EA_RDREQ_sum", "TCC_EA_RDREQ_32B_sum", "TCC_EA_WRREQ_sum", "TCC_EA_WRREQ_64B_sum"};
  else if (target == "gfx942")
    hbm = {"TCC_BUBBLE_sum", "TCC_EA0_RDREQ_sum", "TCC_EA0_RDREQ_32B_sum", "TCC_EA0_WRREQ_sum",
           "TCC_EA0_WRREQ_64B_sum"};
  else
    return {};
  return {{"SQ_INSTS_VALU_ADD_F16", "SQ_INSTS_VALU_MUL_F16", "SQ_INSTS_VALU_FMA_F16",
           "SQ_INSTS_VALU_TRANS_F16", "SQ_INSTS_VALU_ADD_F32", "SQ_INSTS_VALU_MUL_F32",
           "SQ_INSTS_VALU_FMA_F32", "SQ_INSTS_VALU_TRANS_F32"},
          {"SQ_INSTS_VALU_ADD_F64", "SQ_INSTS_VALU_MUL_F64", "SQ_INSTS_VALU_FMA_F64",
           "SQ_INSTS_VALU_TRANS_F64", "SQ_INSTS_VALU_MFMA_MOPS_F16", "SQ_INSTS_VALU_MFMA_MOPS_BF16",
           "SQ_INSTS_VALU_MFMA_MOPS_F32", "SQ_INSTS_VALU_MFMA_MOPS_F64"},
          hbm,
          // rocprof-compute's vL1D Coalescing (memory_access.hpp).
          {"TA_TOTAL_WAVEFRONTS_sum", "TCP_TOTAL_ACCESSES_sum"}};
}

rocprofv3_counter_recorder::rocprofv3_counter_recorder(rocprofv3_options options,
                                                       std::vector<std::vector<std::string>> passes)
    : options_(std::move(options)), passes_(std::move(passes)) {}

recorded_run rocprofv3_counter_recorder::record(const std::vector<std::string>& argv,
                                                const std::filesystem::path& folder,
                                                unsigned run) {
  recorded_run out;
  for (std::size_t pass = 0; pass < passes_.size(); ++pass) {
    const auto dir = folder / ("pass-" + std::to_string(pass + 1));
    std::filesystem::create_directories(dir);
    child_options child;
    child.argv = {options_.executable.string(), "--pmc"};
    child.argv.insert(child.argv.end(), passes_[pass].begin(), passes_[pass].end());
    child.argv.insert(child.argv.end(), {"--output-format", "rocpd", "-d", dir.string(), "--"});
    child.argv.insert(child.argv.end(), argv.begin(), argv.end());
    child.environment = options_.environment;
    const auto outcome = tracers_detail::run_recorded_child(
        child, options_.timeout, options_.echo_output,
        "rocprofv3 counter pass " + std::to_string(pass + 1) + ", run " + std::to_string(run));
    out.wall += outcome.wall;
    out.leftovers.insert(out.leftovers.end(), outcome.leftovers.begin(), outcome.leftovers.end());
    if (!outcome.succeeded()) {
      out.status = record_status::run_failed;
      out.reason = "rocprofv3 counter pass " + std::to_string(pass + 1) + " (--pmc " +
                   tracers_detail::join_argv(passes_[pass]) + ") " +
                   tracers_detail::describe_failure(outcome) +
                   "; fix: run with --debug to see rocprofv3's output (a counter this GPU "
                   "lacks, or too many for one pass)\n" +
                   tracers_detail::output_tail(outcome);
      return out;
    }
  }
  out.databases = tracers_detail::find_databases(folder);
  if (out.databases.empty()) {
    out.status = record_status::no_trace;
    out.reason = "the counter passes wrote no database; fix: check that the application "
                 "launches kernels on the GPU";
  }
  return out;
}

} // namespace rpl::workers
