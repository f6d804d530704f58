// rpl_hsa_capture: the HSA (AMD) capture library of `rocm-perf isolate`, an HSA tools library
// (HSA_TOOLS_LIB=librpl_hsa_capture.so): the runtime calls OnLoad with its API table, and the
// library replaces the calls it must see (specification §8.2: the HSA Tools API, not LD_PRELOAD):
//   - hsa_queue_create: the queue is created interceptable (hsa_amd_queue_intercept_create) and
//     every packet submitted to it passes through on_packets;
//   - hsa_amd_memory_pool_allocate / _free: the live allocations (device memory is told apart
//     with hsa_amd_pointer_info at capture time);
//   - hsa_code_object_reader_create_from_memory, hsa_executable_load_agent_code_object: the code
//     object bytes of each executable, so a dispatch's kernel object leads to its symbol and image.
// At the RPL_CAPTURE_DISPATCH-th kernel dispatch packet (from 0) whose kernel's name matches
// RPL_CAPTURE_KERNEL, it writes a barrier packet and waits (the work before it done), keeps the
// kernarg segment, the code object and every device allocation's contents, writes the dispatch
// and another barrier, waits, and keeps what the dispatch changed: the same capture folder as the
// CUDA library (stages/capture/; the packet decoded by stages/capture/aql_dispatch.hpp).
//
// Written against the HSA headers present where it is built (Debian's ROCm 5.2 here; every call it
// makes exists in ROCm 7's too). No AMD GPU has ever run it: the project has none.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <span>
#include <string>
#include <unistd.h>
#include <vector>

#include <hsa/hsa.h>
#include <hsa/hsa_api_trace.h>
#include <hsa/hsa_ext_amd.h>
#include <nlohmann/json.hpp>

#include "stages/capture/aql_dispatch.hpp"
#include "stages/capture/capture_manifest.hpp"
#include "workers/capture/capture_directory.hpp"

namespace {

namespace fs = std::filesystem;
namespace sc = rpl::stages::capture;
namespace cap = rpl::workers::capture;

void warn(const std::string& text) {
  std::fprintf(stderr, "rocm-perf isolate (hsa): %s\n", text.c_str());
}

struct queue_info {
  hsa_agent_t agent{};
};

struct tool_state {
  std::mutex mutex;
  CoreApiTable core{}; ///< the runtime's functions, before ours replaced them
  AmdExtTable amd{};
  fs::path out;
  std::regex pattern;
  std::string pattern_text;
  std::uint64_t wanted = 0;
  std::uint64_t matched = 0;
  std::uint64_t dispatches = 0;
  bool done = false;
  std::map<std::uint64_t, std::uint64_t> allocations;              ///< base -> size
  std::map<std::uint64_t, std::vector<char>> readers;              ///< reader handle -> bytes
  std::map<std::uint64_t, std::vector<std::uint64_t>> executables; ///< executable -> readers
  std::map<std::uint64_t, std::pair<std::string, std::uint64_t>> kernels; ///< object -> name, exec
};

tool_state* g = nullptr;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

void write_status(const std::string& status,
                  const std::string& reason,
                  nlohmann::json extra = nlohmann::json::object()) {
  extra["status"] = status;
  extra["reason"] = reason;
  extra["kernel_regex"] = g->pattern_text;
  extra["dispatch"] = g->wanted;
  extra["matching_launches"] = g->matched;
  extra["launches"] = g->dispatches;
  extra["backend"] = "hsa";
  try {
    cap::write_text(g->out, cap::status_file, extra.dump(2) + "\n");
  } catch (const std::exception& error) {
    warn(error.what());
  }
}

void refuse(const std::string& reason) {
  g->done = true;
  warn("refused to capture: " + reason);
  write_status("refused", reason);
}

/// The kernel symbol whose kernel object is `object`: its name and executable (cached).
const std::pair<std::string, std::uint64_t>* kernel_of(std::uint64_t object, hsa_agent_t agent) {
  if (auto it = g->kernels.find(object); it != g->kernels.end()) {
    return &it->second;
  }
  struct search {
    std::uint64_t object;
    std::uint64_t executable;
    std::string name;
    bool found = false;
  };
  for (const auto& [handle, readers] : g->executables) {
    search s{object, handle, {}, false};
    auto visit = [](hsa_executable_t, hsa_agent_t, hsa_executable_symbol_t symbol, void* data) {
      auto* wanted = static_cast<search*>(data);
      hsa_symbol_kind_t kind{};
      g->core.hsa_executable_symbol_get_info_fn(symbol, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind);
      if (kind != HSA_SYMBOL_KIND_KERNEL) {
        return HSA_STATUS_SUCCESS;
      }
      std::uint64_t found = 0;
      g->core.hsa_executable_symbol_get_info_fn(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                                &found);
      if (found != wanted->object) {
        return HSA_STATUS_SUCCESS;
      }
      std::uint32_t length = 0;
      g->core.hsa_executable_symbol_get_info_fn(symbol, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH,
                                                &length);
      std::string name(length, '\0');
      g->core.hsa_executable_symbol_get_info_fn(symbol, HSA_EXECUTABLE_SYMBOL_INFO_NAME,
                                                name.data());
      // The symbol is the kernel descriptor, `<name>.kd`.
      if (name.size() > 3 && name.compare(name.size() - 3, 3, ".kd") == 0) {
        name.resize(name.size() - 3);
      }
      wanted->name = name;
      wanted->found = true;
      return HSA_STATUS_INFO_BREAK;
    };
    hsa_executable_t executable{handle};
    g->core.hsa_executable_iterate_agent_symbols_fn(executable, agent, visit, &s);
    if (s.found) {
      return &(g->kernels[object] = {s.name, handle});
    }
  }
  return nullptr;
}

hsa_signal_t barrier_and_wait(hsa_amd_queue_intercept_packet_writer writer) {
  hsa_signal_t signal{};
  g->core.hsa_signal_create_fn(1, 0, nullptr, &signal);
  hsa_barrier_and_packet_t barrier{};
  barrier.header = static_cast<std::uint16_t>(
      HSA_PACKET_TYPE_BARRIER_AND | (1u << HSA_PACKET_HEADER_BARRIER) |
      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
  barrier.completion_signal = signal;
  writer(&barrier, 1);
  g->core.hsa_signal_wait_scacquire_fn(signal, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX,
                                       HSA_WAIT_STATE_BLOCKED);
  g->core.hsa_signal_destroy_fn(signal);
  return signal;
}

/// The device allocations (HSA_EXT_POINTER_TYPE_HSA owned by a GPU agent), copied to the host.
bool snapshot(std::vector<sc::memory_region>& regions,
              std::vector<std::vector<std::uint8_t>>& out) {
  out.clear();
  for (const auto& r : regions) {
    std::vector<std::uint8_t> bytes(r.size);
    if (g->core.hsa_memory_copy_fn(bytes.data(), reinterpret_cast<void*>(r.base), r.size) !=
        HSA_STATUS_SUCCESS) {
      refuse("copying allocation " + sc::hex_address(r.base) + " failed");
      return false;
    }
    out.push_back(std::move(bytes));
  }
  return true;
}

void capture(const sc::aql_dispatch& packet,
             const void* raw,
             const std::string& name,
             std::uint64_t executable,
             const queue_info& queue,
             hsa_amd_queue_intercept_packet_writer writer) {
  // The code object that holds the kernel, and its metadata.
  const std::vector<char>* image = nullptr;
  rpl::stages::kernel_metadata kernel;
  for (const auto reader : g->executables[executable]) {
    const auto& bytes = g->readers[reader];
    try {
      for (const auto& object : rpl::stages::read_code_objects_from_memory(
               std::as_bytes(std::span(bytes.data(), bytes.size())), "code object")) {
        for (const auto& k : object.kernels) {
          if (k.name == name) {
            image = &bytes;
            kernel = k;
          }
        }
      }
    } catch (const std::exception&) {
    }
  }
  if (image == nullptr) {
    writer(raw, 1);
    return refuse("no loaded code object's metadata describes " + name);
  }
  char agent_name[64] = {0};
  g->core.hsa_agent_get_info_fn(queue.agent, HSA_AGENT_INFO_NAME, agent_name);
  sc::dispatch_manifest m;
  try {
    m = sc::hsa_manifest(packet, kernel, agent_name);
  } catch (const sc::capture_error& error) {
    writer(raw, 1);
    return refuse(error.what());
  }
  m.dispatch_index = g->wanted;
  m.granularity = 4096;
  m.pid = ::getpid();
  barrier_and_wait(writer);
  // Device allocations only: host and fine-grained memory are not restored by a replay.
  std::vector<sc::memory_region> regions;
  for (const auto& [base, size] : g->allocations) {
    hsa_amd_pointer_info_t info{};
    info.size = sizeof info;
    if (g->amd.hsa_amd_pointer_info_fn(reinterpret_cast<void*>(base), &info, nullptr, nullptr,
                                       nullptr) != HSA_STATUS_SUCCESS) {
      continue;
    }
    hsa_device_type_t type{};
    g->core.hsa_agent_get_info_fn(info.agentOwner, HSA_AGENT_INFO_DEVICE, &type);
    if (info.type == HSA_EXT_POINTER_TYPE_HSA && type == HSA_DEVICE_TYPE_GPU) {
      regions.push_back({base, size, sc::before_file_name(base), {}, regions.size()});
    }
  }
  std::vector<std::vector<std::uint8_t>> before;
  if (!snapshot(regions, before)) {
    writer(raw, 1);
    return;
  }
  std::vector<std::uint8_t> kernarg(kernel.kernarg_segment_size);
  std::memcpy(kernarg.data(), reinterpret_cast<const void*>(packet.kernarg_address),
              kernarg.size());
  writer(raw, 1);
  barrier_and_wait(writer);
  std::vector<std::vector<std::uint8_t>> after;
  if (!snapshot(regions, after)) {
    return;
  }
  try {
    cap::write_bytes(g->out, m.kernarg_file, kernarg.data(), kernarg.size());
    cap::write_bytes(g->out, m.code_object_file, image->data(), image->size());
    const auto aql = sc::encode_aql_dispatch(packet);
    cap::write_bytes(g->out, "packet.bin", aql.data(), aql.size());
    for (std::size_t i = 0; i < regions.size(); ++i) {
      cap::write_bytes(g->out, regions[i].file, before[i].data(), before[i].size());
      if (after[i] != before[i]) {
        regions[i].after_file = sc::after_file_name(regions[i].base);
        cap::write_bytes(g->out, regions[i].after_file, after[i].data(), after[i].size());
      }
    }
    cap::write_text(g->out, cap::regions_file, sc::regions_to_json(regions).dump(2) + "\n");
    cap::write_text(g->out, cap::dispatch_file, sc::to_json(m).dump(2) + "\n");
  } catch (const std::exception& error) {
    return refuse(error.what());
  }
  g->done = true;
  write_status("captured", "", {{"kernel", name}, {"regions", regions.size()}});
}

void on_packets(const void* packets,
                std::uint64_t count,
                std::uint64_t,
                void* data,
                hsa_amd_queue_intercept_packet_writer writer) {
  const auto* bytes = static_cast<const std::uint8_t*>(packets);
  std::lock_guard lock(g->mutex);
  for (std::uint64_t i = 0; i < count; ++i) {
    const void* raw = bytes + 64 * i;
    const std::span<const std::uint8_t> packet(bytes + 64 * i, 64);
    if (g->done || !sc::is_kernel_dispatch(packet)) {
      writer(raw, 1);
      continue;
    }
    ++g->dispatches;
    const auto decoded = sc::decode_aql_dispatch(packet);
    const auto* queue = static_cast<const queue_info*>(data);
    const auto* kernel = kernel_of(decoded.kernel_object, queue->agent);
    if (kernel == nullptr || !std::regex_search(kernel->first, g->pattern) ||
        g->matched++ != g->wanted) {
      writer(raw, 1);
      continue;
    }
    capture(decoded, raw, kernel->first, kernel->second, *queue, writer);
  }
}

hsa_status_t queue_create(hsa_agent_t agent,
                          uint32_t size,
                          hsa_queue_type32_t type,
                          void (*callback)(hsa_status_t, hsa_queue_t*, void*),
                          void* data,
                          uint32_t private_segment_size,
                          uint32_t group_segment_size,
                          hsa_queue_t** queue) {
  const auto status = g->amd.hsa_amd_queue_intercept_create_fn(
      agent, size, type, callback, data, private_segment_size, group_segment_size, queue);
  if (status == HSA_STATUS_SUCCESS) {
    g->amd.hsa_amd_queue_intercept_register_fn(*queue, on_packets, new queue_info{agent});
  }
  return status;
}

hsa_status_t pool_allocate(hsa_amd_memory_pool_t pool, size_t size, uint32_t flags, void** ptr) {
  const auto status = g->amd.hsa_amd_memory_pool_allocate_fn(pool, size, flags, ptr);
  if (status == HSA_STATUS_SUCCESS) {
    std::lock_guard lock(g->mutex);
    g->allocations[reinterpret_cast<std::uint64_t>(*ptr)] = size;
  }
  return status;
}

hsa_status_t pool_free(void* ptr) {
  {
    std::lock_guard lock(g->mutex);
    g->allocations.erase(reinterpret_cast<std::uint64_t>(ptr));
  }
  return g->amd.hsa_amd_memory_pool_free_fn(ptr);
}

hsa_status_t
reader_from_memory(const void* code_object, size_t size, hsa_code_object_reader_t* reader) {
  const auto status =
      g->core.hsa_code_object_reader_create_from_memory_fn(code_object, size, reader);
  if (status == HSA_STATUS_SUCCESS) {
    std::lock_guard lock(g->mutex);
    const auto* bytes = static_cast<const char*>(code_object);
    g->readers[reader->handle].assign(bytes, bytes + size);
  }
  return status;
}

hsa_status_t load_code_object(hsa_executable_t executable,
                              hsa_agent_t agent,
                              hsa_code_object_reader_t reader,
                              const char* options,
                              hsa_loaded_code_object_t* loaded) {
  const auto status =
      g->core.hsa_executable_load_agent_code_object_fn(executable, agent, reader, options, loaded);
  if (status == HSA_STATUS_SUCCESS) {
    std::lock_guard lock(g->mutex);
    g->executables[executable.handle].push_back(reader.handle);
  }
  return status;
}

void at_exit() {
  if (g == nullptr) {
    return;
  }
  std::lock_guard lock(g->mutex);
  if (!g->done) {
    write_status("not_found", "the program made " + std::to_string(g->dispatches) +
                                  " kernel dispatches, " + std::to_string(g->matched) +
                                  " of a kernel matching '" + g->pattern_text + "'; dispatch " +
                                  std::to_string(g->wanted) + " was asked for");
  }
}

} // namespace

extern "C" __attribute__((visibility("default"))) bool
OnLoad(HsaApiTable* table, uint64_t, uint64_t, const char* const*) {
  const std::string out = env("RPL_CAPTURE_DIR");
  const std::string kernel = env("RPL_CAPTURE_KERNEL");
  if (out.empty() || kernel.empty() || table == nullptr || table->core_ == nullptr ||
      table->amd_ext_ == nullptr) {
    warn("RPL_CAPTURE_DIR and RPL_CAPTURE_KERNEL must be set (rocm-perf isolate sets them); "
         "capturing nothing");
    return true;
  }
  auto* state = new tool_state;
  try {
    state->pattern = std::regex(kernel, std::regex::ECMAScript);
  } catch (const std::regex_error& error) {
    warn("RPL_CAPTURE_KERNEL '" + kernel + "' is not a regular expression: " + error.what());
    return true;
  }
  state->out = out;
  state->pattern_text = kernel;
  state->wanted = std::strtoull(env("RPL_CAPTURE_DISPATCH").c_str(), nullptr, 10);
  state->core = *table->core_;
  state->amd = *table->amd_ext_;
  g = state;
  table->core_->hsa_queue_create_fn = queue_create;
  table->core_->hsa_code_object_reader_create_from_memory_fn = reader_from_memory;
  table->core_->hsa_executable_load_agent_code_object_fn = load_code_object;
  table->amd_ext_->hsa_amd_memory_pool_allocate_fn = pool_allocate;
  table->amd_ext_->hsa_amd_memory_pool_free_fn = pool_free;
  std::atexit(at_exit);
  return true;
}

extern "C" __attribute__((visibility("default"))) void OnUnload() {}
