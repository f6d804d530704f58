#include "stages/optimize/validation_plan.hpp"

#include <algorithm>
#include <variant>

namespace rpl::stages::optimize {

std::int64_t smaller_size(std::int64_t value) {
  return value >= 2 ? value / 2 : value;
}

std::int64_t odd_size(std::int64_t value) {
  if (value <= 2) {
    return value;
  }
  std::int64_t odd = std::max<std::int64_t>(1, value * 3 / 4);
  if (odd % 2 == 0) {
    ++odd;
  }
  if (odd == value) {
    odd -= 2;
  }
  return std::max<std::int64_t>(1, odd);
}

std::int64_t hazard_size(std::int64_t value) {
  return std::min(odd_size(value), hazard_size_limit);
}

std::int64_t tiny_size(std::int64_t value) {
  return std::min(value, tiny_size_limit);
}

namespace {

/// splitmix64: a portable way to derive distinct seeds.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

launch_spec reseed(const launch_spec& base, std::uint64_t seed) {
  launch_spec spec = base;
  std::uint64_t state = seed;
  for (auto& arg : spec.args) {
    if (arg.kind != messages::kernel_arg_kind::buffer) {
      continue;
    }
    state = mix(state);
    if (arg.output && arg.init.fill == messages::buffer_fill::zeros) {
      // Poison: a kernel must write what it claims to compute.
      arg.init.fill = messages::buffer_fill::random;
      arg.init.min = -1000.0;
      arg.init.max = 1000.0;
    }
    if (arg.init.fill == messages::buffer_fill::random) {
      arg.init.seed = state;
    }
  }
  return spec;
}

using size_rule = std::int64_t (*)(std::int64_t);

launch_spec resize(const launch_spec& base, size_rule rule, std::string& sizes) {
  launch_spec spec = base;
  for (auto& [name, value] : spec.problem) {
    if (const auto* integer = std::get_if<std::int64_t>(&value)) {
      value = rule(*integer);
    }
    sizes += (sizes.empty() ? "" : " ") + name + "=" +
             std::visit([](auto v) { return std::to_string(v); }, value);
  }
  return spec;
}

} // namespace

validation_case hazard_case(const launch_spec& spec, std::uint64_t seed) {
  std::string sizes;
  launch_spec sized = resize(spec, hazard_size, sizes);
  return {"hazard size" + (sizes.empty() ? std::string(" (the launch file has no problem sizes)")
                                         : " " + sizes),
          reseed(sized, mix(seed ^ 4)), validation_size::odd};
}

std::vector<validation_case> validation_cases(const launch_spec& spec, std::uint64_t seed) {
  std::vector<validation_case> cases;
  const auto add = [&](const std::string& what, size_rule rule, std::uint64_t case_seed,
                       validation_size size) {
    std::string sizes;
    launch_spec sized = resize(
        spec, rule != nullptr ? rule : [](std::int64_t v) { return v; }, sizes);
    cases.push_back({what +
                         (sizes.empty() ? " (the launch file has no problem sizes)" : " " + sizes) +
                         ", seed " + std::to_string(case_seed),
                     reseed(sized, mix(seed ^ case_seed)), size});
  };
  add("launch size", nullptr, 1, validation_size::launch);
  add("launch size", nullptr, 2, validation_size::launch);
  if (!spec.problem.empty()) {
    add("smaller size", smaller_size, 3, validation_size::smaller);
    add("odd size", odd_size, 4, validation_size::odd);
    add("tiny size", tiny_size, 5, validation_size::tiny);
    cases.back().optional = true;
  }
  add(spec.problem.empty() ? "launch size" : "odd size", spec.problem.empty() ? nullptr : odd_size,
      6, validation_size::misaligned);
  cases.back().label += ", buffers 4 bytes off their alignment";
  cases.back().offset_bytes = 4;
  cases.back().optional = true;
  return cases;
}

} // namespace rpl::stages::optimize
