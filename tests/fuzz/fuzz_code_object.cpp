// libFuzzer target: the AMDGPU code-object reader (stages/hardware/code_object_metadata.hpp) on
// arbitrary bytes, as `rocm-perf inspect` and the compile worker meet them: a bare code object, a
// clang offload bundle, or a host ELF embedding bundles, each carrying an NT_AMDGPU_METADATA note.
//
// metadata_error is the reader's only allowed failure; anything else escaping is reported by
// libFuzzer as a crash. What it reads is also rendered to JSON, as `inspect --json` prints it.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "stages/hardware/code_object_metadata.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace s = rpl::stages;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  std::vector<s::code_object> objects;
  try {
    objects = s::read_code_objects_from_memory(bytes, "fuzz.hsaco");
  } catch (const s::metadata_error&) {
    return 0;
  }
  for (const s::code_object& object : objects) {
    nlohmann::json out = {{"target", object.target},
                          {"processor", object.processor},
                          {"features", object.features},
                          {"bundle_entry", object.bundle_entry},
                          {"kernels", nlohmann::json::array()}};
    for (const s::kernel_metadata& kernel : object.kernels) {
      out["kernels"].push_back(s::to_json(kernel));
    }
    (void)out.dump(); // throws on text JSON cannot carry
  }
  return 0;
}
