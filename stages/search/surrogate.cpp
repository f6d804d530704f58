#include "stages/search/surrogate.hpp"

#include <numeric>
#include <random>
#include <vector>

#include "stages/search/strategy.hpp"

namespace rpl::stages {

namespace {

constexpr double penalties[] = {1e-4, 1e-3, 1e-2, 0.1, 1, 10};

/// Ridge with an unpenalized intercept: the columns and y centered, (XᵀX + λnI) w = Xᵀy.
ridge_model solve(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, double lambda) {
  ridge_model m;
  const Eigen::RowVectorXd mean_x = x.colwise().mean();
  const double mean_y = y.mean();
  const Eigen::MatrixXd xc = x.rowwise() - mean_x;
  const Eigen::VectorXd yc = y.array() - mean_y;
  Eigen::MatrixXd a = xc.transpose() * xc;
  a.diagonal().array() += lambda * static_cast<double>(x.rows());
  m.weights = a.ldlt().solve(xc.transpose() * yc);
  m.intercept = mean_y - mean_x.dot(m.weights);
  m.lambda = lambda;
  return m;
}

} // namespace

ridge_model fit_ridge(const Eigen::MatrixXd& x,
                      const Eigen::VectorXd& y,
                      std::size_t folds,
                      std::uint64_t seed) {
  const auto n = static_cast<std::size_t>(x.rows());
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937_64 rng(seed);
  for (std::size_t i = n; i > 1; --i)
    std::swap(order[i - 1], order[static_cast<std::size_t>(bounded_draw(rng, i))]);
  std::vector<std::size_t> fold_of(n);
  for (std::size_t i = 0; i < n; ++i)
    fold_of[order[i]] = i % folds;
  const double mean_y = y.mean();
  const double total = (y.array() - mean_y).square().sum();

  double best_error = HUGE_VAL, best_lambda = penalties[0];
  for (const double lambda : penalties) {
    double error = 0;
    for (std::size_t f = 0; f < folds; ++f) {
      std::vector<Eigen::Index> train, test;
      for (std::size_t i = 0; i < n; ++i)
        (fold_of[i] == f ? test : train).push_back(static_cast<Eigen::Index>(i));
      if (train.empty() || test.empty())
        continue;
      const ridge_model m = solve(x(train, Eigen::all), y(train), lambda);
      error += (m.predict(x(test, Eigen::all)) - y(test)).squaredNorm();
    }
    if (error < best_error) {
      best_error = error;
      best_lambda = lambda;
    }
  }
  ridge_model out = solve(x, y, best_lambda);
  out.cv_r2 = total > 0 ? 1 - best_error / total : 0;
  out.folds = folds;
  return out;
}

} // namespace rpl::stages
