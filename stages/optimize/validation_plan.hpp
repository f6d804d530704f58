#pragma once
/// What a candidate kernel must reproduce before it is timed: the original kernel's outputs (not
/// a reference's), on fresh random inputs, at the launch file's problem size and at two others —
/// one smaller (every size halved) and one odd-sized (every size cut to an odd number near three
/// quarters) — with two input seeds at the launch size, one after the other in the same lane
/// process, so that a kernel that caches results across calls or computes only the benchmark's
/// size is caught. Output buffers start from random "poison" rather than zeros, so that a kernel
/// which leaves an output (or part of one) unwritten, hoping it still holds a previous result,
/// fails: the original and the candidate start from the same poison, so a kernel that
/// legitimately reads its output (C += A * B) compares equal. Two more cases where the original
/// supports them: a size under one block (every size cut to at most 7), and the odd size with
/// every buffer 4 bytes past its aligned start, so that misaligned paths (a vector rewrite's
/// alignment check) run on the GPU.

#include <cstdint>
#include <string>
#include <vector>

#include "stages/search/launch_spec.hpp"

namespace rpl::stages::optimize {

/// Which size a case runs at: what a failure of it is named by (validation:launch_size, ...).
enum class validation_size { launch, smaller, odd, tiny, misaligned };

struct validation_case {
  std::string label; ///< "launch size M=2048 N=2048 K=2048, seed 1"
  launch_spec spec;  ///< the launch file with this case's problem sizes and seeds
  validation_size size = validation_size::launch;
  /// Every buffer starts this far past its aligned start (the misaligned case: 4).
  std::uint32_t offset_bytes = 0;
  /// A case the original kernel may not support (a size under one block, misaligned buffers):
  /// where the original fails it, it is dropped for every candidate, with a note.
  bool optional = false;
};

/// The cases for `spec`, seeds derived from `seed` (a run's own, so a rerun uses new inputs only
/// when asked). A launch file without problem sizes has one size: its cases differ by seed only,
/// and the plan says so in the labels.
std::vector<validation_case> validation_cases(const launch_spec& spec, std::uint64_t seed);

/// The problem size of `value` in the smaller, the odd and the tiny case (exposed for tests).
std::int64_t smaller_size(std::int64_t value);
std::int64_t odd_size(std::int64_t value);
std::int64_t tiny_size(std::int64_t value);

/// The sanitizer pass's racecheck and synccheck slow every shared-memory access and barrier by
/// orders of magnitude, and a hazard lives inside one block: they run at this case, every size
/// cut to the odd size and at most hazard_size_limit (a 64-wide tile and an odd tail; several
/// tiles of a k loop), with the odd case's seeds.
validation_case hazard_case(const launch_spec& spec, std::uint64_t seed);
std::int64_t hazard_size(std::int64_t value);
inline constexpr std::int64_t hazard_size_limit = 97;

/// The largest size of the tiny case: under one block of any common geometry (32 to 1024
/// threads, 8x8 and larger tiles), odd, so that every tail path runs.
inline constexpr std::int64_t tiny_size_limit = 7;

} // namespace rpl::stages::optimize
