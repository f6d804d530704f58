#include "workers/compilers/nvcc/nvcc_resource_usage.hpp"

#include <regex>
#include <sstream>

#include "workers/compilers/nvcc/nvcc_rules.hpp"

namespace rpl::workers {

namespace {

std::uint64_t number_before(const std::string& line, const std::regex& pattern) {
  std::smatch match;
  return std::regex_search(line, match, pattern) ? std::stoull(match[1].str()) : 0;
}

} // namespace

std::vector<messages::kernel_resource_usage> parse_ptxas_resource_usage(std::string_view output) {
  static const std::regex compiling(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex properties(R"(Function properties for (\S+))");
  static const std::regex stack(R"((\d+) bytes stack frame)");
  static const std::regex spill_stores(R"((\d+) bytes spill stores)");
  static const std::regex spill_loads(R"((\d+) bytes spill loads)");
  static const std::regex registers(R"(Used (\d+) registers)");
  static const std::regex barriers(R"(used (\d+) barriers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  static const std::regex lmem(R"((\d+) bytes lmem)");

  std::vector<messages::kernel_resource_usage> kernels;
  auto current = [&](const std::string& name) -> messages::kernel_resource_usage& {
    for (auto it = kernels.rbegin(); it != kernels.rend(); ++it) {
      if (it->name == name) {
        return *it;
      }
    }
    kernels.push_back({});
    kernels.back().name = name;
    return kernels.back();
  };
  std::string active; // the function the following lines describe
  std::istringstream in{std::string(output)};
  std::string line;
  std::smatch match;
  while (std::getline(in, line)) {
    if (std::regex_search(line, match, compiling)) {
      active = match[1].str();
      current(active).arch = match[2].str();
    } else if (std::regex_search(line, match, properties)) {
      active = match[1].str();
      current(active);
    } else if (!active.empty() && line.find("bytes stack frame") != std::string::npos) {
      auto& k = current(active);
      k.stack_bytes = number_before(line, stack);
      k.spill_store_bytes = number_before(line, spill_stores);
      k.spill_load_bytes = number_before(line, spill_loads);
    } else if (!active.empty() && std::regex_search(line, match, registers)) {
      auto& k = current(active);
      k.registers = static_cast<std::uint32_t>(std::stoul(match[1].str()));
      k.barriers = static_cast<std::uint32_t>(number_before(line, barriers));
      k.shared_bytes = number_before(line, smem);
      k.local_bytes = number_before(line, lmem);
    }
  }
  return kernels;
}

} // namespace rpl::workers
