#pragma once
/// `--strategy model`: a seeded random sample, then a surrogate (surrogate.hpp: ridge regression on
/// space_features.hpp, log of the objective) refitted after every batch of results, each batch
/// taken from the configurations it predicts fastest and from the one-parameter neighbours of the
/// best measured ones. When the surrogate's cross-validated R² is under the confidence threshold
/// (`low_model_confidence`), the search widens instead of trusting it: the neighbours in a random
/// order and random configurations take the model's places. Failed configurations count as slower
/// than the slowest measured one. Deterministic for a given space, budget, seed and sequence of
/// results; configurations already proposed are never proposed again.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "stages/search/space_features.hpp"
#include "stages/search/strategy.hpp"
#include "stages/search/surrogate.hpp"

namespace rpl::stages {

struct model_options {
  /// The seed sample as a fraction of the space; 0: four times the number of linear features
  /// (twice the columns of the first fit, chosen on bench/search: 17 of 20 seeds within 1 % on the
  /// harder convolution landscape against 14 with twice), at most half the budget. Every fit uses
  /// at most half as many features as it has points: squares and interactions join as results come
  /// in.
  double seed_fraction = 0;
  /// Below this cross-validated R², the model is not trusted (low_model_confidence).
  double confidence_r2 = 0.75;
  /// Results between refits; 0: the budget / 40, at least 4.
  std::size_t batch = 0;
  std::size_t folds = 5;
};

/// The model's state for reports.
struct model_report {
  std::size_t features = 0;
  std::size_t columns = 0; ///< the features the last fit used (at most half its points)
  std::size_t seed_size = 0;
  std::size_t refits = 0;
  std::optional<double> cv_r2;       ///< of the last fit
  bool low_model_confidence = false; ///< the last fit was under the threshold
  std::size_t low_confidence_fits = 0;
};

class model_strategy final : public strategy {
public:
  model_strategy(const std::vector<configuration>& configs,
                 std::size_t budget,
                 std::uint64_t seed,
                 model_options options = {});

  std::optional<std::size_t> next() override;
  void observe(const observation& result) override;
  std::size_t planned() const override { return budget_; }
  std::string_view name() const override { return "model"; }

  const model_report& report() const { return report_; }
  /// {features, columns, seed_size, refits, cv_r2, confidence_r2, low_model_confidence,
  /// low_confidence_fits}.
  nlohmann::json summary() const override;

private:
  void refit();
  std::vector<std::size_t> neighbours(std::size_t index) const;
  std::optional<std::size_t> random_unproposed();

  feature_matrix features_;
  std::size_t budget_;
  model_options options_;
  std::mt19937_64 rng_;
  std::vector<std::size_t> shuffled_; ///< a seeded permutation: the seed sample, then the reserve
  std::size_t shuffled_next_ = 0;
  std::vector<char> proposed_;
  std::size_t proposed_count_ = 0;
  std::vector<std::pair<std::size_t, std::optional<double>>> results_; ///< index, log(value)
  std::size_t results_at_fit_ = 0;
  std::vector<std::size_t> queue_;
  std::size_t batch_ = 4;
  /// One-parameter neighbours: per parameter, the configurations that agree on all the others.
  std::vector<std::vector<std::size_t>> group_of_;            ///< [parameter][config] -> group id
  std::vector<std::vector<std::vector<std::size_t>>> groups_; ///< [parameter][group] -> configs
  model_report report_;
};

} // namespace rpl::stages
