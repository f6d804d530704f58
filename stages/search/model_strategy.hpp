#pragma once
/// `--strategy model`: a seeded random sample, then a surrogate of the log of the objective
/// refitted after every batch of results: of a ridge regression on space_features.hpp
/// (surrogate.hpp) and an extremely randomized trees ensemble on the linear features
/// (tree_ensemble.hpp), the one with the higher k-fold cross-validated R². Picks alternate the
/// surrogate's (the ridge's fastest predictions; the trees' greatest expected improvement over the
/// best measured, from their mean and spread; the other surrogate's interleaved) and the
/// one-parameter neighbours of local-search centres (the best three measured, and the best
/// measured with each value of every two-valued switch). When the surrogate's cross-validated R²
/// is under the confidence threshold (`low_model_confidence`), the search widens instead of
/// trusting it: random configurations take half the model's places, all of them (and the
/// neighbours come in random order) when the model is no better than the mean. The budget's last
/// tenth (at least one proposal per parameter) confirms: the best predicted means and the best
/// measured one's neighbours; once the model has converged (a trusted fit whose predicted best
/// is measured, the same in converge_fits fits in a row), the best measured one's neighbours
/// first, then the predicted best few's, every few picks the most uncertain prediction that
/// could still beat the best measured. Failed configurations are left out of the fit.
/// Deterministic for a given space, budget, seed and sequence of results; configurations
/// already proposed are never proposed again.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "stages/search/space_features.hpp"
#include "stages/search/strategy.hpp"
#include "stages/search/surrogate.hpp"
#include "stages/search/tree_ensemble.hpp"

namespace rpl::stages {

struct model_options {
  /// The seed sample as a fraction of the space; 0: seed_per_feature times the number of linear
  /// features, at most half the budget. Every ridge fit uses at most half as many features as it
  /// has points: squares and interactions join as results come in.
  double seed_fraction = 0;
  /// With seed_fraction 0: the seed sample is this many times the linear features (the least the
  /// design allows; chosen on bench/search with the tree ensemble: the dedispersion landscape's
  /// median evaluations to 1 % of the best 20 against 30 with three times and 45 with four; the
  /// other development landscapes no worse).
  std::size_t seed_per_feature = 2;
  /// Below this cross-validated R², the model is not trusted (low_model_confidence).
  double confidence_r2 = 0.75;
  /// Results between refits; 0: a tenth of the results so far, at least 1 (refits then cost
  /// O(log budget) fits, which keeps a 10,000-configuration search near a second; batches of one
  /// while results are few took the GEMM ground truth from 24 to 29 of 30 seeds against 2).
  std::size_t batch = 0;
  /// The confirm phase, this fraction of the budget at its end, or one proposal per parameter
  /// when that is more (and the best measured configuration has that many unproposed
  /// one-parameter neighbours): the GEMM ground truth's 183 configurations at a budget of 18
  /// confirm 5, not 2 (bench/search, 300 seeds: 292 within 1 % against 284). Before the model
  /// has converged: its best predictions and the neighbours of the best measured configuration,
  /// no random picks. Converged: see converge_fits.
  double confirm_fraction = 0.1;
  /// Converged: this many trusted fits in a row (cv R² at least confidence_r2) predicted the
  /// same best configuration, and it is measured: the model expects nothing unmeasured to beat
  /// what was measured. Its confirm picks are then the unproposed neighbours of the best
  /// measured, then the confirm_top best predicted (measured or not) and their neighbours, by
  /// predicted mean, every uncertain_every-th pick the one of greatest spread over the trees
  /// among those whose mean - 2 spread is under the best measured.
  std::size_t converge_fits = 2;
  std::size_t confirm_top = 3;
  std::size_t uncertain_every = 3; ///< 0: no uncertain picks
  /// Past the seed sample, next() proposes nothing (nullopt) while this many proposals await
  /// their results (the caller must observe every index next() returned, failures and stored
  /// results too); 0: no limit. The engine sets lanes + 1 (one measured, one compiling, per
  /// lane): with four candidates in flight on one lane, each pick of a budget of 18 missed the
  /// last three results, and the GEMM ground truth's seeds within 1 % fell from 91 to 72 in 100
  /// (bench/search --space examples/cuda/space.json --in-flight 4 --noise 0.01).
  std::size_t max_pending = 0;
  /// An unmeasured configuration the trusted model predicts slower than the best measured by more
  /// than this is `pruned`; within it, `unconfirmed` (the confirm budget ended first).
  double prune_margin = 0.05;
  /// The trees of the ensemble surrogate; 0: ridge regression alone.
  std::size_t trees = 32;
  std::size_t folds = 5;
};

/// The model's state for reports.
struct model_report {
  std::size_t features = 0;
  std::size_t columns = 0; ///< the features the last fit used (at most half its points)
  std::size_t seed_size = 0;
  std::size_t refits = 0;
  std::optional<double> cv_r2;       ///< of the last fit's chosen surrogate
  std::optional<double> cv_r2_ridge; ///< of the last fit's ridge regression
  std::optional<double> cv_r2_trees; ///< of the last fit's tree ensemble
  /// The last fit's trees also saw the static screen's features (observation::static_features):
  /// measured where the screen read them, imputed elsewhere from the parameters.
  bool static_features = false;
  std::size_t static_known = 0;      ///< configurations whose static features were read
  std::string surrogate;             ///< the last fit's choice: "ridge" or "extra_trees"
  bool low_model_confidence = false; ///< the last fit was under the threshold
  std::size_t low_confidence_fits = 0;
  bool converged = false; ///< see model_options::converge_fits
  /// Proposals made when the converged model's confirm picks began; nullopt: they never did.
  std::optional<std::size_t> converged_at;
  std::size_t confirm_neighbours = 0; ///< converged confirm proposals: neighbours, predicted best
  std::size_t confirm_uncertain = 0;  ///< and the most uncertain ones
};

class model_strategy final : public strategy {
public:
  model_strategy(const std::vector<configuration>& configs,
                 std::size_t budget,
                 std::uint64_t seed,
                 model_options options = {});

  std::optional<std::size_t> next() override;
  /// At most `pending` proposals awaiting results past the seed sample (model_options).
  void set_max_pending(std::size_t pending) { options_.max_pending = pending; }
  void observe(const observation& result) override;
  std::size_t planned() const override { return budget_; }
  std::string_view name() const override { return "model"; }

  const model_report& report() const { return report_; }
  /// {features, columns, seed_size, refits, surrogate, cv_r2, cv_r2_ridge, cv_r2_trees,
  /// static_features, static_known, confidence_r2, low_model_confidence, low_confidence_fits,
  /// converged, converged_at, confirm_neighbours, confirm_uncertain, unmeasured}.
  nlohmann::json summary() const override;
  /// Why each configuration never proposed was left out, from the last fit's predictions:
  /// {count, prune_margin, pruned, unconfirmed, unranked, candidates: [{space_index,
  /// predicted_ratio (to the best measured; null without a fit), reason}]}, by predicted ratio.
  /// `pruned`: the trusted model predicts it more than prune_margin slower than the best
  /// measured; `unconfirmed`: within it, but the budget ended first; `unranked`: no fit, or one
  /// under the confidence threshold, so its prediction was not used to leave it out.
  nlohmann::json unmeasured() const;

private:
  /// One fit's scores per configuration, lower first.
  struct surrogate_scores {
    /// The chosen surrogate's: the ridge's prediction, or the trees' expected improvement,
    /// negated (their mean alone when confirming).
    Eigen::VectorXd chosen;
    Eigen::VectorXd other; ///< the other surrogate's, where it too beats the mean; else empty
  };

  void refit();
  /// Fits the ridge and the trees on the valid results (`rows`, log times `y`), keeps the one
  /// with the higher cross-validated R² (report_, predicted_log_).
  surrogate_scores
  fit_surrogates(const std::vector<Eigen::Index>& rows, const Eigen::VectorXd& y, bool confirming);
  /// Groups of local-search centres, the best measured first.
  std::vector<std::vector<std::size_t>> local_search_centres(bool confirming) const;
  /// Up to a batch of the centres' unproposed neighbours, taken in turn from each group.
  std::vector<std::size_t> neighbour_picks(const std::vector<std::vector<std::size_t>>& centres,
                                           bool guided,
                                           const Eigen::VectorXd& predicted);
  /// The surrogates' best unproposed configurations, the chosen one's and the other's in turn.
  std::vector<std::size_t> model_picks(const surrogate_scores& scores) const;
  /// Fills queue_ with a batch: model picks (or random ones) and neighbours in turn.
  void queue_picks(const std::vector<std::size_t>& global,
                   const std::vector<std::size_t>& near,
                   bool confirming,
                   bool trusted,
                   bool guided);
  std::vector<std::size_t> neighbours(std::size_t index) const;
  /// The best measured configuration, if any valid result came in.
  std::optional<std::size_t> best_measured() const;
  /// Updates report_.converged from the last fit (trusted: its cv R² reached the threshold).
  void note_convergence(bool trusted);
  /// Fills queue_ with a batch of the converged model's confirm picks (converge_fits);
  /// `best_log` is the best measured log time.
  void queue_converged_picks(double best_log);
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
  std::size_t batch_ = 4; ///< of the current round
  std::size_t turn_ = 0;  ///< whose pick is next: the model's (even) or a neighbour's (odd)
  /// One-parameter neighbours: per parameter, the configurations that agree on all the others.
  std::vector<std::vector<std::size_t>> group_of_;            ///< [parameter][config] -> group id
  std::vector<std::vector<std::vector<std::size_t>>> groups_; ///< [parameter][group] -> configs
  std::vector<std::vector<std::uint32_t>> value_of_;          ///< [parameter][config] -> value id
  std::vector<std::size_t> value_count_;                      ///< [parameter] -> distinct values
  model_report report_;
  /// The trees' inputs: the linear space features, then the static features when the screen gave
  /// them for most results (static_columns()); measured where read, imputed elsewhere.
  Eigen::MatrixXd tree_inputs(std::size_t valid_results);
  std::vector<std::optional<std::array<double, 4>>> statics_; ///< [config]
  Eigen::VectorXd predicted_log_; ///< the last fit's chosen surrogate: log time per configuration
  Eigen::VectorXd trees_mean_;    ///< the last fit's trees, when fitted: log time per configuration
  Eigen::VectorXd trees_spread_;  ///< and the spread over the trees
  std::optional<std::size_t> predicted_best_; ///< of the last trusted fit, when measured
  std::size_t stable_fits_ = 0;               ///< trusted fits in a row predicting it
  std::size_t confirm_turn_ = 0;              ///< converged picks so far (the uncertain turn)
  std::vector<char> measured_;                ///< [config]: a result came in
  std::vector<char> awaiting_;                ///< [config]: proposed by next(), no result yet
  std::size_t outstanding_ = 0;               ///< how many are awaiting
  std::vector<char> confirm_kind_; ///< [config]: queued as a converged pick (1: near, 2: unsure)
};

} // namespace rpl::stages
