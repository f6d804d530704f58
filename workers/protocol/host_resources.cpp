#include "workers/protocol/host_resources.hpp"

#include <fstream>
#include <string>
#include <thread>

#include <sched.h>

namespace rpl::workers {

std::uint32_t usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0)
      return static_cast<std::uint32_t>(count);
  }
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? hardware : 1;
}

std::uint64_t memory_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  std::uint64_t value = 0;
  while (meminfo >> key >> value) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:")
      return value * 1024; // reported in kB
  }
  return 0;
}

} // namespace rpl::workers
