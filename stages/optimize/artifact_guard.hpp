#pragma once
/// The artifact guard: before a patched kernel gets any GPU time, its compiled code object is
/// compared with the original's. A patch may change what a kernel does, never how the unchanged
/// host code finds and launches it: the same kernel entry symbols (mangled), the same parameter
/// layout, and no new device variables the host would not initialise. Reads NVIDIA cubins,
/// fatbinaries and nvcc host objects (`stages/hardware/cuda_cubin.hpp`) and AMDGPU code objects,
/// offload bundles and hipcc host objects (`stages/hardware/code_object_metadata.hpp`,
/// `code_object_globals.hpp`), telling them apart by their bytes.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rpl::stages::optimize {

/// One broken rule. `guard` is one of:
/// - `kernel_symbols_changed`: a kernel entry was added or removed (for some architecture), or an
///   architecture the original has code for is missing; `detail` names them;
/// - `parameter_layout_changed`: the target kernel's parameters differ in count, offset, size,
///   total bytes or (AMD) value_kind; `detail` names the first difference, e.g.
///   "parameter 1: offset 8 size 4 became offset 8 size 8";
/// - `new_global`: a device variable (`__device__`, `__constant__`, `__managed__`) the original
///   does not define, or one whose size changed;
/// - `unreadable`: the candidate (or the original) cannot be parsed; `detail` carries the
///   reader's error, which names the input, the problem and a fix.
struct artifact_finding {
  std::string guard;
  std::string detail;
};

/// Compares `candidate` with `original` (bytes of the same kind of artifact) and returns every
/// broken rule; empty when the candidate may run. `kernel` selects the kernels whose parameter
/// layout is checked: a mangled name, or a plain function name matching every overload and
/// template instance; empty, or matching no kernel of the original, checks every kernel both
/// define. On AMD only the explicit arguments count: `hidden_*` arguments are filled in by the
/// runtime and come and go with printf or hostcall use. `origin` names the candidate in details.
/// Never throws for bad input: that is an `unreadable` finding.
std::vector<artifact_finding> check_artifact(std::span<const std::byte> original,
                                             std::span<const std::byte> candidate,
                                             std::string_view kernel,
                                             std::string_view origin);

/// The kernel entry names (mangled) of an artifact, each once, in file order; or why not.
struct kernel_list {
  std::vector<std::string> names;
  std::string error; ///< non-empty when the bytes are unreadable; names `origin`
};

/// Every kernel entry of `bytes`, as check_artifact reads them.
kernel_list kernel_names(std::span<const std::byte> bytes, std::string_view origin);

} // namespace rpl::stages::optimize
