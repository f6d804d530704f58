#include "stages/search/tree_ensemble.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "stages/search/strategy.hpp"

namespace rpl::stages {

namespace {

/// A double in [0, 1) from the top 53 bits: the same on every platform (unlike
/// std::uniform_real_distribution).
double unit_draw(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

std::vector<std::size_t> fold_assignment(std::size_t n, std::size_t folds, std::uint64_t seed) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937_64 rng(seed);
  for (std::size_t i = n; i > 1; --i)
    std::swap(order[i - 1], order[static_cast<std::size_t>(bounded_draw(rng, i))]);
  std::vector<std::size_t> fold_of(n);
  for (std::size_t i = 0; i < n; ++i)
    fold_of[order[i]] = i % folds;
  return fold_of;
}

} // namespace

void tree_ensemble::fit(const Eigen::MatrixXd& x,
                        const Eigen::VectorXd& y,
                        std::uint64_t seed,
                        tree_ensemble_options options) {
  nodes_.clear();
  roots_.clear();
  const auto n = static_cast<std::size_t>(x.rows());
  const auto d = static_cast<int>(x.cols());
  if (n == 0)
    return;
  std::mt19937_64 rng(seed);
  std::vector<Eigen::Index> rows(n);
  struct pending {
    std::uint32_t node;
    std::size_t begin, end;
  };
  std::vector<pending> stack;
  for (std::size_t t = 0; t < options.trees; ++t) {
    std::iota(rows.begin(), rows.end(), Eigen::Index{0});
    roots_.push_back(static_cast<std::uint32_t>(nodes_.size()));
    nodes_.emplace_back();
    stack.push_back({roots_.back(), 0, n});
    while (!stack.empty()) {
      const pending p = stack.back();
      stack.pop_back();
      const std::size_t count = p.end - p.begin;
      double sum = 0;
      for (std::size_t i = p.begin; i < p.end; ++i)
        sum += y[rows[i]];
      const double mean = sum / static_cast<double>(count);
      bool constant = true;
      for (std::size_t i = p.begin; i < p.end && constant; ++i)
        constant = y[rows[i]] == y[rows[p.begin]];
      int best_feature = -1;
      double best_cut = 0, best_score = -HUGE_VAL;
      if (count >= options.min_split && !constant) {
        for (int f = 0; f < d; ++f) {
          double lo = HUGE_VAL, hi = -HUGE_VAL;
          for (std::size_t i = p.begin; i < p.end; ++i) {
            lo = std::min(lo, x(rows[i], f));
            hi = std::max(hi, x(rows[i], f));
          }
          if (!(hi > lo))
            continue;
          // A cut strictly inside (lo, hi]: both sides keep at least one point.
          double cut = lo + unit_draw(rng) * (hi - lo);
          if (cut <= lo)
            cut = std::nextafter(lo, hi);
          double left_sum = 0;
          std::size_t left_count = 0;
          for (std::size_t i = p.begin; i < p.end; ++i)
            if (x(rows[i], f) < cut) {
              left_sum += y[rows[i]];
              ++left_count;
            }
          const double right_sum = sum - left_sum;
          const auto right_count = static_cast<double>(count - left_count);
          // The squared error a split removes, up to a constant: Σ_side (Σy)² / n.
          const double score = left_sum * left_sum / static_cast<double>(left_count) +
                               right_sum * right_sum / right_count;
          if (score > best_score) {
            best_score = score;
            best_feature = f;
            best_cut = cut;
          }
        }
      }
      if (best_feature < 0) {
        nodes_[p.node].feature = -1;
        nodes_[p.node].value = mean;
        continue;
      }
      const auto middle = static_cast<std::size_t>(
          std::partition(rows.begin() + static_cast<std::ptrdiff_t>(p.begin),
                         rows.begin() + static_cast<std::ptrdiff_t>(p.end),
                         [&](Eigen::Index r) { return x(r, best_feature) < best_cut; }) -
          rows.begin());
      const auto left = static_cast<std::uint32_t>(nodes_.size());
      nodes_.emplace_back();
      nodes_.emplace_back();
      nodes_[p.node].feature = best_feature;
      nodes_[p.node].left = left;
      nodes_[p.node].value = best_cut;
      stack.push_back({left, p.begin, middle});
      stack.push_back({left + 1, middle, p.end});
    }
  }
}

double
tree_ensemble::predict_one(std::size_t tree, const Eigen::MatrixXd& x, Eigen::Index row) const {
  const node* n = &nodes_[roots_[tree]];
  while (n->feature >= 0)
    n = &nodes_[n->left + (x(row, n->feature) < n->value ? 0 : 1)];
  return n->value;
}

void tree_ensemble::predict(const Eigen::MatrixXd& x,
                            Eigen::VectorXd& mean,
                            Eigen::VectorXd& spread) const {
  mean = Eigen::VectorXd::Zero(x.rows());
  spread = Eigen::VectorXd::Zero(x.rows());
  if (roots_.empty())
    return;
  const auto t = static_cast<double>(roots_.size());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    double sum = 0, square = 0;
    for (std::size_t k = 0; k < roots_.size(); ++k) {
      const double v = predict_one(k, x, r);
      sum += v;
      square += v * v;
    }
    mean[r] = sum / t;
    spread[r] = std::sqrt(std::max(0.0, square / t - mean[r] * mean[r]));
  }
}

Eigen::VectorXd tree_ensemble::predict(const Eigen::MatrixXd& x) const {
  Eigen::VectorXd mean, spread;
  predict(x, mean, spread);
  return mean;
}

double tree_ensemble_cv_r2(const Eigen::MatrixXd& x,
                           const Eigen::VectorXd& y,
                           std::size_t folds,
                           std::uint64_t seed,
                           tree_ensemble_options options) {
  const auto n = static_cast<std::size_t>(x.rows());
  if (n < 2 || folds < 2)
    return 0;
  const auto fold_of = fold_assignment(n, folds, seed);
  const double total = (y.array() - y.mean()).square().sum();
  double error = 0;
  for (std::size_t f = 0; f < folds; ++f) {
    std::vector<Eigen::Index> train, test;
    for (std::size_t i = 0; i < n; ++i)
      (fold_of[i] == f ? test : train).push_back(static_cast<Eigen::Index>(i));
    if (train.empty() || test.empty())
      continue;
    tree_ensemble model;
    model.fit(x(train, Eigen::all), y(train), seed + f + 1, options);
    error += (model.predict(x(test, Eigen::all)) - y(test)).squaredNorm();
  }
  return total > 0 ? 1 - error / total : 0;
}

} // namespace rpl::stages
