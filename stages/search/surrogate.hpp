#pragma once
/// The surrogate of the model strategy: a ridge regression (Eigen), its regularization chosen by
/// k-fold cross-validation, and the cross-validated R² as its honest quality: each point is
/// predicted by a model that did not see it, so a model that only memorizes scores near or below 0
/// (a 27-term polynomial on 10 points has an in-sample R² of 1; python-prototype-study §3.13).

#include <cstddef>
#include <cstdint>

#include <Eigen/Dense>

namespace rpl::stages {

struct ridge_model {
  Eigen::VectorXd weights;
  double intercept = 0;
  double lambda = 0; ///< the penalty chosen, per point
  /// 1 − Σ(y − ŷ_cv)² / Σ(y − ȳ)², ŷ_cv from the fold that left each point out; can be negative.
  double cv_r2 = 0;
  std::size_t folds = 0;

  Eigen::VectorXd predict(const Eigen::MatrixXd& x) const {
    return (x * weights).array() + intercept;
  }
};

/// Fits `y` on `x` (one row per point). The penalty is the one of {1e-4, 1e-3, 1e-2, 0.1, 1, 10}
/// (times the number of points) with the least cross-validated error over `folds` folds, the
/// points dealt to folds in a seeded order. Needs at least `folds` points.
ridge_model fit_ridge(const Eigen::MatrixXd& x,
                      const Eigen::VectorXd& y,
                      std::size_t folds,
                      std::uint64_t seed);

} // namespace rpl::stages
