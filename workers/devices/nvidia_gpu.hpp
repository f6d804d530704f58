#pragma once
/// This host's NVIDIA GPU, as the engine's verbs need to know it: whether one is there (profile's
/// `--backend auto`) and its compute capability (autotune's default nvcc architecture). One probe
/// for every caller, so the verbs cannot disagree about whether a GPU is present.

#include <string>
#include <vector>

namespace rpl::workers {

/// True when the NVIDIA driver shows a GPU: the device node /dev/nvidia0 or the driver's
/// /proc/driver/nvidia. Reads only the filesystem; starts no process and loads no CUDA library.
bool nvidia_gpu_present();

/// The compute capability of this host's first NVIDIA GPU as "sm_XY", or empty without one. Asks
/// NVML first (no process), then nvidia-smi, then the CUDA toolkit's own device query (what `nvcc
/// -arch=native` uses), since some drivers' nvidia-smi cannot report compute_cap. The fallbacks
/// run child processes (up to 30 s each on a freshly booted host), so call it once.
std::string local_nvidia_arch();

/// One GPU as nvidia-smi lists it.
struct nvidia_device {
  int index = 0;    ///< the driver's index (what CUDA_VISIBLE_DEVICES names)
  std::string name; ///< e.g. "NVIDIA H100 80GB HBM3"
  std::string uuid; ///< "GPU-..."
};

/// Every NVIDIA GPU of this host, from NVML (nvml_probe.hpp), else from nvidia-smi
/// --query-gpu=index,name,uuid (a child process); empty without a GPU or either.
std::vector<nvidia_device> list_nvidia_gpus();

} // namespace rpl::workers
