#include "stages/search/strategy.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "stages/search/model_strategy.hpp"

namespace rpl::stages {

namespace {

/// Every index in order.
class exhaustive_strategy final : public strategy {
public:
  explicit exhaustive_strategy(std::size_t count) : count_(count) {}

  std::optional<std::size_t> next() override {
    if (next_ >= count_) {
      return std::nullopt;
    }
    return next_++;
  }
  void observe(const observation&) override {}
  std::size_t planned() const override { return count_; }
  std::string_view name() const override { return "exhaustive"; }

private:
  std::size_t count_;
  std::size_t next_ = 0;
};

/// The indices of a given order, one at a time: a seeded random order, or a prior run's.
class ordered_strategy final : public strategy {
public:
  ordered_strategy(std::vector<std::size_t> order, std::string name)
      : order_(std::move(order)), name_(std::move(name)) {}

  std::optional<std::size_t> next() override {
    if (next_ >= order_.size()) {
      return std::nullopt;
    }
    return order_[next_++];
  }
  void observe(const observation&) override {}
  std::size_t planned() const override { return order_.size(); }
  std::string_view name() const override { return name_; }

private:
  std::vector<std::size_t> order_;
  std::string name_;
  std::size_t next_ = 0;
};

/// `count` distinct indices of [0, space_size) in a seeded random order: a partial Fisher-Yates
/// shuffle of std::mt19937_64's output (fixed by the standard) through bounded_draw, so the same
/// permutation on every platform.
std::vector<std::size_t>
random_order(std::size_t space_size, std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> pool(space_size);
  std::iota(pool.begin(), pool.end(), std::size_t{0});
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t j = i + static_cast<std::size_t>(bounded_draw(rng, space_size - i));
    std::swap(pool[i], pool[j]);
  }
  pool.resize(count);
  return pool;
}

} // namespace

nlohmann::json strategy::summary() const {
  return nullptr;
}

std::unique_ptr<strategy> make_strategy(std::string_view name,
                                        std::size_t space_size,
                                        std::optional<std::size_t> budget,
                                        std::uint64_t seed) {
  const std::size_t count = std::min(space_size, budget.value_or(space_size));
  if (name == "exhaustive") {
    return std::make_unique<exhaustive_strategy>(count);
  }
  if (name == "random") {
    return std::make_unique<ordered_strategy>(random_order(space_size, count, seed), "random");
  }
  if (name == "model")
    throw std::invalid_argument("the model strategy needs the space's configurations; fix: call "
                                "make_strategy with them");
  throw std::invalid_argument("unknown strategy '" + std::string(name) +
                              "'; known: exhaustive, random, model; fix: pass one of the known "
                              "names");
}

std::unique_ptr<strategy> make_exhaustive_in_order(std::vector<std::size_t> order,
                                                   std::optional<std::size_t> budget) {
  if (budget && *budget < order.size())
    order.resize(*budget);
  return std::make_unique<ordered_strategy>(std::move(order), "exhaustive");
}

std::unique_ptr<strategy> make_strategy(std::string_view name,
                                        const std::vector<configuration>& configurations,
                                        std::optional<std::size_t> budget,
                                        std::uint64_t seed,
                                        const model_options* model) {
  if (name == "model")
    return std::make_unique<model_strategy>(
        configurations, std::min(configurations.size(), budget.value_or(configurations.size())),
        seed, model ? *model : model_options{});
  return make_strategy(name, configurations.size(), budget, seed);
}

} // namespace rpl::stages
