#include "workers/devices/nvidia_gpu.hpp"

#include <cctype>
#include <chrono>
#include <filesystem>
#include <vector>

#include "workers/devices/nvml_probe.hpp"
#include "workers/process/child_process.hpp"

namespace rpl::workers {

namespace {

/// The digits of the first number in `text`, dots skipped: "9.0\n" → "90".
std::string first_number(const std::string& text) {
  std::string digits;
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
      digits += c;
    } else if (c == '.') {
      continue;
    } else if (!digits.empty()) {
      break;
    }
  }
  return digits;
}

} // namespace

bool nvidia_gpu_present() {
  std::error_code ec;
  // The device node is missing in some containers that still see the driver, and /proc is masked
  // in others: either one is enough.
  return std::filesystem::exists("/dev/nvidia0", ec) ||
         std::filesystem::exists("/proc/driver/nvidia", ec);
}

std::string local_nvidia_arch() {
  if (!nvidia_gpu_present()) {
    return {};
  }
  if (const auto gpus = list_nvml_gpus(); gpus && !gpus->empty() && gpus->front().compute_major > 0)
    return "sm_" + std::to_string(gpus->front().compute_major) +
           std::to_string(gpus->front().compute_minor);
  std::error_code ec;
  std::vector<std::vector<std::string>> queries = {
      {"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"}};
  for (const char* dir : {"/usr/local/cuda/bin", "/usr/bin"}) {
    const auto tool = std::filesystem::path(dir) / "__nvcc_device_query";
    if (std::filesystem::exists(tool, ec)) {
      queries.push_back({tool.string()});
    }
  }
  for (const auto& argv : queries) {
    child_options options;
    options.argv = argv;
    options.max_output_bytes = 4096;
    // The first query on a freshly booted host can take seconds while the driver initialises.
    const auto outcome = run_child(options, std::chrono::milliseconds(30000));
    if (!outcome.succeeded()) {
      continue;
    }
    const auto cap = first_number(outcome.output);
    if (cap.size() >= 2 && cap.size() <= 3) {
      return "sm_" + cap;
    }
  }
  return {};
}

} // namespace rpl::workers

namespace rpl::workers {

namespace {

std::string trimmed(std::string text) {
  const auto first = text.find_first_not_of(" \t");
  const auto last = text.find_last_not_of(" \t\r");
  return first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
}

} // namespace

std::vector<nvidia_device> list_nvidia_gpus() {
  std::vector<nvidia_device> devices;
  if (!nvidia_gpu_present()) {
    return devices;
  }
  if (const auto gpus = list_nvml_gpus()) {
    for (const auto& gpu : *gpus)
      devices.push_back({gpu.index, gpu.name, gpu.uuid});
    return devices;
  }
  child_options options;
  options.argv = {"nvidia-smi", "--query-gpu=index,name,uuid", "--format=csv,noheader"};
  options.max_output_bytes = 65536;
  const auto outcome = run_child(options, std::chrono::milliseconds(30000));
  if (!outcome.succeeded()) {
    return devices;
  }
  std::size_t start = 0;
  while (start < outcome.output.size()) {
    auto end = outcome.output.find('\n', start);
    if (end == std::string::npos) {
      end = outcome.output.size();
    }
    const auto line = outcome.output.substr(start, end - start);
    start = end + 1;
    const auto first = line.find(',');
    const auto last = line.rfind(',');
    if (first == std::string::npos || first == last) {
      continue;
    }
    nvidia_device device;
    try {
      device.index = std::stoi(trimmed(line.substr(0, first)));
    } catch (const std::exception&) {
      continue;
    }
    device.name = trimmed(line.substr(first + 1, last - first - 1));
    device.uuid = trimmed(line.substr(last + 1));
    devices.push_back(std::move(device));
  }
  return devices;
}

} // namespace rpl::workers
