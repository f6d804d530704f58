#include "workers/tracers/cupti/host_facts.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <sys/utsname.h>
#include <unistd.h>

#include <cuda.h>
#include <cupti.h>

namespace rpl::workers::cupti_tracer {
namespace {

namespace cupti = rpl::stages::cupti;

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!all.empty() && all.back() == '\0') {
    all.pop_back();
  }
  std::replace(all.begin(), all.end(), '\0', ' ');
  return all;
}

std::string hostname() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof host, "localhost");
  }
  return host;
}

std::string uuid_text(const CUuuid& uuid) {
  char text[64];
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  std::snprintf(text, sizeof text,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return text;
}

/// The attributes that describe a device's limits and identity.
void read_attributes(CUdevice dev, cupti::driver_device& d) {
  const auto attr = [dev](CUdevice_attribute a) -> std::optional<int> {
    int value = 0;
    if (cuDeviceGetAttribute(&value, a, dev) != CUDA_SUCCESS) {
      return std::nullopt;
    }
    return value;
  };
  d.compute_capability_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  d.compute_capability_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  d.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  d.clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  d.memory_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  d.memory_bus_width = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  d.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  d.max_threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  d.max_blocks_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  d.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  d.shared_memory_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  d.shared_memory_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  d.shared_memory_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  d.registers_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  d.l2_cache_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  d.async_engine_count = attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
  d.pci_bus_id = attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  d.pci_device_id = attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  d.pci_domain_id = attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  d.gpu_pci_device_id = attr(CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID);
}

} // namespace

cupti::host_facts read_host_facts(std::int64_t pid) {
  cupti::host_facts host;
  host.hostname = hostname();
  host.machine_id = read_first_line("/etc/machine-id");
  utsname u{};
  if (uname(&u) == 0) {
    host.uname = cupti::uname_facts{u.sysname, u.release, u.version, u.machine};
  }
  host.pid = pid;
  host.ppid = static_cast<std::int64_t>(getppid());
  host.command = command_line();
  host.environment = cupti::environment_json(environ);
  std::uint32_t cupti_version = 0;
  if (cuptiGetVersion(&cupti_version) == CUPTI_SUCCESS) {
    host.cupti_version = static_cast<int>(cupti_version);
  }
  host.cupti_header_version = CUPTI_API_VERSION;
  int driver_version = 0;
  (void)cuDriverGetVersion(&driver_version);
  host.cuda_driver_version = driver_version;
  return host;
}

std::map<std::int64_t, std::string> read_thread_names(const std::set<std::int64_t>& threads) {
  std::map<std::int64_t, std::string> names;
  for (const std::int64_t tid : threads) {
    std::string name = read_first_line("/proc/self/task/" + std::to_string(tid) + "/comm");
    if (!name.empty()) {
      names[tid] = std::move(name);
    }
  }
  return names;
}

cupti::driver_device read_driver_device(std::uint32_t ordinal) {
  cupti::driver_device d;
  CUdevice dev = 0;
  CUresult r = cuDeviceGet(&dev, static_cast<int>(ordinal));
  if (r == CUDA_ERROR_NOT_INITIALIZED && cuInit(0) == CUDA_SUCCESS) {
    r = cuDeviceGet(&dev, static_cast<int>(ordinal));
  }
  d.available = r == CUDA_SUCCESS;
  if (!d.available) {
    return d;
  }
  char name[256] = {0};
  if (cuDeviceGetName(name, sizeof name - 1, dev) == CUDA_SUCCESS) {
    d.name = name;
  }
  read_attributes(dev, d);
  std::size_t total = 0;
  if (cuDeviceTotalMem(&total, dev) == CUDA_SUCCESS) {
    d.memory_bytes = static_cast<std::uint64_t>(total);
  }
  CUuuid uuid{};
  if (cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS) {
    d.uuid = uuid_text(uuid);
  }
  return d;
}

} // namespace rpl::workers::cupti_tracer
