#pragma once
/// What a worker host offers, for READY: the CPUs this process may run on and the memory available
/// now. The broker gives a worker as many jobs at once as it has slots (by default, its cores).

#include <cstdint>

namespace rpl::workers {

/// CPUs in this process's affinity mask (what `taskset`, cgroups or Slurm left it), at least 1.
std::uint32_t usable_cores();

/// MemAvailable from /proc/meminfo, in bytes; 0 when it cannot be read.
std::uint64_t memory_available_bytes();

} // namespace rpl::workers
