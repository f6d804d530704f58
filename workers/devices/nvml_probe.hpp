#pragma once
/// Reads (never sets) a GPU's clocks through NVML: the SM clock, the clocks-event ("throttle")
/// reasons and the cumulative power and thermal violation time. NVML comes from the driver
/// (libnvidia-ml.so.1), loaded with dlopen at run time, so the engine needs no NVIDIA library to
/// build or start, and hosts without one simply have no clock evidence.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rpl::workers {

/// One reading of one GPU.
struct gpu_clock_reading {
  std::uint32_t sm_mhz = 0;
  std::uint64_t reasons = 0;              ///< clocks-event reason bits (stages/hardware)
  std::int64_t power_violation_ns = -1;   ///< cumulative since the driver loaded; -1 unsupported
  std::int64_t thermal_violation_ns = -1; ///< cumulative since the driver loaded; -1 unsupported
};

/// The seam: NVML on a real host, a script in tests. read() is safe from several lane threads.
class gpu_clock_probe {
public:
  virtual ~gpu_clock_probe() = default;
  /// The GPU with this UUID ("GPU-..."), or nullopt when it cannot be read.
  virtual std::optional<gpu_clock_reading> read(const std::string& uuid) = 0;
};

/// One GPU as NVML lists it.
struct nvml_gpu {
  int index = 0;    ///< NVML's (and nvidia-smi's) index
  std::string name; ///< e.g. "NVIDIA H100 80GB HBM3"
  std::string uuid; ///< "GPU-..."
  int compute_major = 0;
  int compute_minor = 0;
};

/// Every GPU NVML lists, or nullopt where NVML cannot be loaded or initialised (callers then ask
/// nvidia-smi). No child process: nvidia-smi costs a process start and its own NVML start-up,
/// which the engine's start (and so the first candidate) waited for.
std::optional<std::vector<nvml_gpu>> list_nvml_gpus();

/// NVML's probe, or nullptr with `why_not` set (no libnvidia-ml.so.1, nvmlInit failed). The
/// library stays loaded while the probe lives; nvmlShutdown runs when it goes.
std::shared_ptr<gpu_clock_probe> open_nvml_probe(std::string& why_not);

} // namespace rpl::workers
