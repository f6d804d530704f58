#pragma once
/// CUDA/HIP sources parsed with libclang into a stages::optimize::source_model. libclang is loaded
/// at run time (dlopen), never linked: it is 150 MB with libLLVM, which a GPU bundle cannot carry,
/// so a host without it still runs everything but the rule proposer, which reports "unavailable".
/// Searched in order: $RPL_LIBCLANG, libclang-15.so.1, libclang.so.1, libclang-14.so.1,
/// libclang.so. $RPL_CLANG_RESOURCE_DIR names the clang resource folder (stddef.h, the CUDA
/// wrappers) of a libclang moved out of its LLVM tree.

#include <string>
#include <string_view>
#include <vector>

#include "stages/optimize/source_model.hpp"

namespace rpl::workers {

/// Whether libclang can be loaded; when not, `why` names what was tried and the fix.
bool libclang_available(std::string& why);

/// Parses `text` (held in memory: nothing is read from or written to `file_name` unless it
/// includes it) as `language` ("cuda" or "hip"). Only the -D, -I, -isystem and -std flags of
/// `compile_flags` are passed on. The CUDA/HIP headers of the host are tried first, then a small
/// built-in stand-in for them, and the parse with fewer errors inside device code wins: kernels
/// are complete even where host code does not parse. On failure (no libclang, no translation
/// unit) the model is empty and `error` says why and how to fix it; parse errors are not failures
/// (they are in the model's diagnostics). Parses are serialised in a process (libLLVM's global
/// state); the last few translation units are kept, so that a later text under the same file name
/// and flags reuses their precompiled headers (the preamble) and parses only what follows them.
stages::optimize::source_model parse_source(std::string_view text,
                                            std::string_view file_name,
                                            std::string_view language,
                                            const std::vector<std::string>& compile_flags,
                                            std::string& error);

/// Disposes of the translation units parse_source keeps (and their preambles' temporary files):
/// the next parse of any text starts cold. At exit libclang removes the preamble files itself.
void forget_parsed_units();

} // namespace rpl::workers
