#pragma once
/// Gathers launch_samples from dispatch rows as a scan hands them over (the report's own pass,
/// build_profile_report_and_timeline's `also`): per kernel name and (grid, block), every
/// duration, split by run. Runtime helper kernels (ROCclr's blits and fills) are left out: they
/// are not the user's work. A name's entry is found by its storage's address first (the reader
/// hands out the same storage for every dispatch of a kernel), so a million dispatches cost no
/// string hashing.

#include <array>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "stages/compare/launch_samples.hpp"
#include "stages/trace/rocpd_reader.hpp"

namespace rpl::stages::compare {

class launch_collector {
public:
  /// `run_of_database[d]`: the run of the row's `database` d (all 0 for one run).
  explicit launch_collector(std::vector<std::size_t> run_of_database);

  void add(const rocpd::dispatch_row& row);
  /// The launches in first-seen order; with several runs, each with its runs' medians.
  std::vector<launch_samples> finish() const;

private:
  struct shape {
    launch_dim grid{};
    launch_dim block{};
    std::vector<std::vector<double>> by_run;
  };
  struct name_entry {
    std::string name;
    bool helper = false;
    std::vector<shape> shapes;
    std::size_t last = 0; ///< the shape the previous dispatch used
  };
  struct slot {
    const char* data = nullptr;
    std::size_t index = 0;
  };
  name_entry& entry_of(std::string_view name);

  std::vector<std::size_t> run_of_database_;
  std::size_t runs_ = 1;
  std::vector<name_entry> names_;
  std::unordered_map<std::string, std::size_t> index_;
  std::array<slot, 4096> slots_{};
};

} // namespace rpl::stages::compare
