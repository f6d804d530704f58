#pragma once
/// Search strategies: the order in which configurations of the space are tried.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "messages/wire.hpp"
#include "stages/search/param_value.hpp"

namespace rpl::stages {

/// What a strategy learns about one configuration it proposed: the configuration itself and its
/// measured result (the objective value, or why there is none). On --resume the engine replays the
/// stored results of earlier sessions through the same call, never a made-up verdict.
struct observation {
  std::size_t index = 0;                 ///< into space.configurations
  const configuration* config = nullptr; ///< the parameter values; valid during the call only
  std::optional<double> value_ns;        ///< the objective (median GPU or run time), when valid
  std::string failure;                   ///< why there is no value (build, crash, timeout...)
  std::optional<messages::verdict_kind> verdict; ///< the acceptance decision, when one was made
  bool resumed = false; ///< measured in an earlier session, read from the store
  /// What the static screen read from the built kernel, when it read anything: in the order of
  /// static_feature_names.
  std::optional<std::array<double, 4>> static_features;
};

/// The static screen's features of a built kernel, in observation::static_features's order.
inline constexpr std::array<const char*, 4> static_feature_names = {
    "registers",            // per thread (NVIDIA) or VGPRs per lane (AMD)
    "shared_bytes",         // static + dynamic shared memory (LDS) per block
    "spill_bytes",          // spill stores + loads (NVIDIA), scratch per lane (AMD)
    "theoretical_occupancy" // 0..1, of the occupancy model
};

/// Picks configurations one at a time. Deterministic for a given name, space size, budget and
/// seed, so an interrupted run can be resumed by replaying the same sequence.
class strategy {
public:
  virtual ~strategy() = default;
  /// The next index into space.configurations, or nullopt when done.
  virtual std::optional<std::size_t> next() = 0;
  /// The result of a configuration next() returned (or, on resume, one an earlier session
  /// measured); strategies that adapt learn from it.
  virtual void observe(const observation& result) = 0;
  /// How many indices next() returns in total.
  virtual std::size_t planned() const = 0;
  /// The name make_strategy() knows it by.
  virtual std::string_view name() const = 0;
  /// What the strategy learned, for the result (the model strategy: its fits); null for none.
  virtual nlohmann::json summary() const;
};

/// Creates a strategy by name:
///   - "exhaustive": 0, 1, 2, ... up to min(budget, space_size);
///   - "random": min(budget, space_size) distinct indices in a seeded random order (budget defaults
///     to the whole space); the sequence depends only on the seed, never on the standard library.
/// Throws std::invalid_argument for an unknown name, listing the known ones.
std::unique_ptr<strategy> make_strategy(std::string_view name,
                                        std::size_t space_size,
                                        std::optional<std::size_t> budget,
                                        std::uint64_t seed);

/// "exhaustive" over the indices in `order` (a permutation of the space, e.g. prior_first_order()),
/// the first min(budget, size) of them.
std::unique_ptr<strategy> make_exhaustive_in_order(std::vector<std::size_t> order,
                                                   std::optional<std::size_t> budget);

struct model_options;

/// The same, and "model" (model_strategy.hpp, with `model` as its settings; null: the defaults),
/// which needs the configurations themselves.
std::unique_ptr<strategy> make_strategy(std::string_view name,
                                        const std::vector<configuration>& configurations,
                                        std::optional<std::size_t> budget,
                                        std::uint64_t seed,
                                        const model_options* model = nullptr);

/// A uniform integer in [0, bound) from `rng`, by rejection sampling, so the result is the same on
/// every standard library (std::uniform_int_distribution's algorithm is unspecified). bound > 0.
template <class Engine> std::uint64_t bounded_draw(Engine& rng, std::uint64_t bound) {
  // 2^64 mod bound: draws below it would make small results more likely than large ones.
  const std::uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const std::uint64_t draw = rng();
    if (draw >= threshold) {
      return draw % bound;
    }
  }
}

} // namespace rpl::stages
