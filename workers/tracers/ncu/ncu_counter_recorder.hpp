#pragma once
/// A counter pass on NVIDIA: the application once more under Nsight Compute,
/// `ncu --clock-control none --export REPORT --metrics LIST [--launch-count N] APP...`, then
/// `ncu --import REPORT --csv --page raw` parsed (stages/trace/ncu_csv.hpp) and written as its own
/// rocpd database, FOLDER/ncu_counters.db, marked `rpl_counter_pass = ncu`: analyses take its
/// counters per kernel name and leave its timeline alone (ncu serializes and replays every launch
/// it profiles, so only its durations are real). `--clock-control none` leaves the GPU's clocks as
/// they are, as the traced runs saw them.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "workers/tracers/trace_recorder.hpp"

namespace rpl::workers {

/// What the roofline, the occupancy and the bottleneck classes read on NVIDIA (Nsight Compute
/// metric names, hardware-models.md §1.5 and §4.1) for `target` ("sm_90": with the wgmma
/// (hgmma) tensor paths, which only Hopper has; other targets: the mma.sync (hmma) paths only).
std::vector<std::string> ncu_roofline_metrics(const std::string& target = "sm_90");

struct ncu_options {
  std::filesystem::path executable;                          ///< ncu (find_ncu)
  std::vector<std::string> metrics = ncu_roofline_metrics(); ///< --metrics
  std::uint32_t launch_count = 0; ///< profile only the first N launches (0: every launch)
  std::chrono::milliseconds timeout{std::chrono::hours(24)};
  bool echo_output = false;
};

/// `explicit_path` when given, else $NCU, else ncu on PATH, else /usr/local/cuda/bin/ncu; nullopt
/// when there is none.
std::optional<std::filesystem::path> find_ncu(const std::filesystem::path& explicit_path);

class ncu_counter_recorder final : public trace_recorder {
public:
  explicit ncu_counter_recorder(ncu_options options);
  /// Writes FOLDER/ncu_counters.db. A failed ncu run, or a report ncu cannot read back, is
  /// run_failed with ncu's words; a run that profiled no kernel is no_trace.
  recorded_run record(const std::vector<std::string>& argv,
                      const std::filesystem::path& folder,
                      unsigned run) override;

private:
  ncu_options options_;
};

} // namespace rpl::workers
