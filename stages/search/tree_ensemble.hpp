#pragma once
/// An extremely randomized trees ensemble (Geurts, Ernst and Wehenkel, "Extremely randomized
/// trees", Machine Learning 63, 2006) for regression on Eigen matrices: every tree sees all the
/// points; each split draws one random cut per feature between the node's least and greatest
/// value and keeps the cut that lowers the squared error most. The trees' spread at a point is the
/// surrogate's uncertainty there (mean ± standard deviation over trees), which an acquisition rule
/// (model_strategy) trades against the mean. Tuning landscapes are rugged and full of
/// interactions (a tile size that only pays with a given block size); trees take those without
/// the product columns a linear model needs.

#include <cstddef>
#include <cstdint>
#include <vector>

#include <Eigen/Dense>

namespace rpl::stages {

struct tree_ensemble_options {
  std::size_t trees = 32;
  /// A node with fewer points is a leaf (Geurts et al.'s n_min; 2 grows the trees fully, which
  /// their regression experiments favour on noise-free targets).
  std::size_t min_split = 2;
};

class tree_ensemble {
public:
  /// Fits `y` on `x` (one row per point); deterministic for a seed.
  void fit(const Eigen::MatrixXd& x,
           const Eigen::VectorXd& y,
           std::uint64_t seed,
           tree_ensemble_options options = {});

  /// The mean and the standard deviation over the trees, per row of `x`.
  void predict(const Eigen::MatrixXd& x, Eigen::VectorXd& mean, Eigen::VectorXd& spread) const;
  Eigen::VectorXd predict(const Eigen::MatrixXd& x) const;

  std::size_t trees() const { return roots_.size(); }

private:
  /// A flat node: a split (feature >= 0; rows with x[feature] < cut go to `left`, the others to
  /// `left + 1`) or a leaf (feature < 0) with its value.
  struct node {
    int feature = -1;
    std::uint32_t left = 0;
    double value = 0; ///< the cut of a split, the mean of a leaf
  };
  double predict_one(std::size_t tree, const Eigen::MatrixXd& x, Eigen::Index row) const;

  std::vector<node> nodes_;
  std::vector<std::uint32_t> roots_;
};

/// k-fold cross-validated R² of the ensemble (1 − Σ(y − ŷ_cv)² / Σ(y − ȳ)²): each point predicted
/// by an ensemble fitted without its fold, the points dealt to folds in a seeded order.
double tree_ensemble_cv_r2(const Eigen::MatrixXd& x,
                           const Eigen::VectorXd& y,
                           std::size_t folds,
                           std::uint64_t seed,
                           tree_ensemble_options options = {});

} // namespace rpl::stages
