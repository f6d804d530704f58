#pragma once
/// Counter passes on AMD: the application once per pass under
/// `rocprofv3 --pmc C1 C2 ... --output-format rocpd -d FOLDER/pass-N -- APP` (in ROCm 7.x one
/// --pmc is one pass, and a set the hardware cannot count at once fails the run). Each pass leaves
/// its own database with rocpd_pmc_event rows joined to the dispatches; analyses merge them per
/// kernel name (stages/trace/counter_values.hpp).

#include <string>
#include <vector>

#include "workers/tracers/rocprofv3/rocprofv3_recorder.hpp"

namespace rpl::workers {

/// The roofline's counters on `target` in passes (hardware-models.md §1.1: VALU F16/F32, then VALU
/// F64 with the MFMA MOPS, then the HBM requests); empty for a target without an HBM formula.
std::vector<std::vector<std::string>> rocm_roofline_passes(const std::string& target);

class rocprofv3_counter_recorder final : public trace_recorder {
public:
  rocprofv3_counter_recorder(rocprofv3_options options,
                             std::vector<std::vector<std::string>> passes);
  /// Runs every pass into FOLDER/pass-N; the first failure ends it (run_failed, rocprofv3's words).
  recorded_run record(const std::vector<std::string>& argv,
                      const std::filesystem::path& folder,
                      unsigned run) override;

private:
  rocprofv3_options options_;
  std::vector<std::vector<std::string>> passes_;
};

} // namespace rpl::workers
