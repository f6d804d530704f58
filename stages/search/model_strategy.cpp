#include "stages/search/model_strategy.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace rpl::stages {

model_strategy::model_strategy(const std::vector<configuration>& configs,
                               std::size_t budget,
                               std::uint64_t seed,
                               model_options options)
    : features_(space_features(configs)), budget_(std::min(budget, configs.size())),
      options_(options), rng_(seed), proposed_(configs.size(), 0) {
  const std::size_t n = configs.size();
  shuffled_.resize(n);
  std::iota(shuffled_.begin(), shuffled_.end(), std::size_t{0});
  for (std::size_t i = n; i > 1; --i)
    std::swap(shuffled_[i - 1], shuffled_[static_cast<std::size_t>(bounded_draw(rng_, i))]);
  report_.features = static_cast<std::size_t>(features_.x.cols());
  const std::size_t wanted =
      options_.seed_fraction > 0
          ? static_cast<std::size_t>(std::ceil(options_.seed_fraction * static_cast<double>(n)))
          : 4 * std::max<std::size_t>(features_.linear, 1);
  report_.seed_size =
      std::clamp<std::size_t>(wanted, std::min<std::size_t>(options_.folds, budget_),
                              std::max<std::size_t>(budget_ / 2, 1));
  if (options_.seed_fraction > 0)
    report_.seed_size = std::min(wanted, budget_);
  batch_ = options_.batch > 0 ? options_.batch : 4;
  // Neighbour groups: the configuration's values but one parameter's, as text.
  const std::size_t params = n > 0 ? configs.front().params.size() : 0;
  group_of_.assign(params, std::vector<std::size_t>(n));
  groups_.assign(params, {});
  for (std::size_t p = 0; p < params; ++p) {
    std::unordered_map<std::string, std::size_t> ids;
    for (std::size_t i = 0; i < n; ++i) {
      std::string key;
      for (std::size_t q = 0; q < params; ++q)
        if (q != p)
          key += to_string(configs[i].params[q].second) + '\x1f';
      const auto [it, added] = ids.emplace(key, groups_[p].size());
      if (added)
        groups_[p].emplace_back();
      groups_[p][it->second].push_back(i);
      group_of_[p][i] = it->second;
    }
  }
}

std::optional<std::size_t> model_strategy::random_unproposed() {
  while (shuffled_next_ < shuffled_.size()) {
    const std::size_t i = shuffled_[shuffled_next_++];
    if (!proposed_[i])
      return i;
  }
  return std::nullopt;
}

std::vector<std::size_t> model_strategy::neighbours(std::size_t index) const {
  std::vector<std::size_t> out;
  for (std::size_t p = 0; p < groups_.size(); ++p)
    for (const std::size_t j : groups_[p][group_of_[p][index]])
      if (j != index && !proposed_[j])
        out.push_back(j);
  return out;
}

void model_strategy::observe(const observation& result) {
  std::optional<double> value;
  if (result.value_ns && *result.value_ns > 0)
    value = std::log(*result.value_ns);
  results_.emplace_back(result.index, value);
  // A resumed result may not have been proposed in this session.
  if (result.index < proposed_.size() && !proposed_[result.index]) {
    proposed_[result.index] = 1;
    ++proposed_count_;
  }
}

void model_strategy::refit() {
  results_at_fit_ = results_.size();
  queue_.clear();
  std::vector<Eigen::Index> rows;
  std::vector<double> values;
  double worst = -HUGE_VAL;
  for (const auto& [index, value] : results_)
    if (value)
      worst = std::max(worst, *value);
  if (!std::isfinite(worst))
    return; // nothing valid yet: keep sampling at random
  // Failed configurations are left out of the fit: their time is not a time, and a made-up one
  // bends the model around them; being proposed once, they are never proposed again.
  for (const auto& [index, value] : results_) {
    if (!value)
      continue;
    rows.push_back(static_cast<Eigen::Index>(index));
    values.push_back(*value);
  }
  const Eigen::VectorXd y =
      Eigen::Map<const Eigen::VectorXd>(values.data(), static_cast<Eigen::Index>(values.size()));
  const bool usable =
      rows.size() >= std::max<std::size_t>(options_.folds, 2) && features_.x.cols() > 0;
  std::optional<ridge_model> model;
  if (usable) {
    // As many columns as half the points: the linear terms first, the squares and the
    // interactions as the results allow.
    const auto columns = static_cast<Eigen::Index>(
        std::clamp<std::size_t>(rows.size() / 2, 1, static_cast<std::size_t>(features_.x.cols())));
    model = fit_ridge(features_.x(rows, Eigen::seqN(0, columns)), y, options_.folds,
                      static_cast<std::uint64_t>(rows.size()));
    report_.columns = static_cast<std::size_t>(columns);
    ++report_.refits;
    report_.cv_r2 = model->cv_r2;
    report_.low_model_confidence = model->cv_r2 < options_.confidence_r2;
    report_.low_confidence_fits += report_.low_model_confidence;
  }
  const bool trusted = model && !report_.low_model_confidence;
  Eigen::VectorXd predicted;
  if (model)
    predicted = model->predict(features_.x.leftCols(static_cast<Eigen::Index>(report_.columns)));

  // The best measured configurations, for their neighbours.
  std::vector<std::pair<double, std::size_t>> measured;
  for (std::size_t k = 0; k < results_.size(); ++k)
    if (results_[k].second)
      measured.emplace_back(*results_[k].second, results_[k].first);
  std::sort(measured.begin(), measured.end());
  std::vector<std::size_t> near;
  for (std::size_t k = 0; k < std::min<std::size_t>(3, measured.size()); ++k)
    for (const std::size_t j : neighbours(measured[k].second))
      if (std::find(near.begin(), near.end(), j) == near.end())
        near.push_back(j);
  if (trusted) {
    std::stable_sort(near.begin(), near.end(), [&](std::size_t a, std::size_t b) {
      return predicted[static_cast<Eigen::Index>(a)] < predicted[static_cast<Eigen::Index>(b)];
    });
  } else {
    for (std::size_t i = near.size(); i > 1; --i)
      std::swap(near[i - 1], near[static_cast<std::size_t>(bounded_draw(rng_, i))]);
  }
  std::vector<std::size_t> global;
  if (trusted) {
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < proposed_.size(); ++i)
      if (!proposed_[i])
        open.push_back(i);
    const std::size_t keep = std::min(open.size(), batch_);
    std::partial_sort(open.begin(), open.begin() + static_cast<std::ptrdiff_t>(keep), open.end(),
                      [&](std::size_t a, std::size_t b) {
                        return std::tie(predicted[static_cast<Eigen::Index>(a)], a) <
                               std::tie(predicted[static_cast<Eigen::Index>(b)], b);
                      });
    open.resize(keep);
    global = std::move(open);
  }
  // Alternate: the model's best (or, untrusted, random picks, taken in next()) and the
  // neighbours of the best measured.
  std::size_t g = 0, m = 0;
  while (queue_.size() < batch_ && (g < global.size() || m < near.size() || !trusted)) {
    if (trusted) {
      if (g < global.size())
        queue_.push_back(global[g++]);
    } else {
      queue_.push_back(proposed_.size()); // a random configuration, drawn when it is taken
    }
    if (queue_.size() < batch_ && m < near.size())
      queue_.push_back(near[m++]);
    if (!trusted && m >= near.size() && queue_.size() >= batch_ / 2)
      break;
  }
  std::reverse(queue_.begin(), queue_.end()); // taken from the back
}

std::optional<std::size_t> model_strategy::next() {
  if (proposed_count_ >= budget_)
    return std::nullopt;
  std::optional<std::size_t> pick;
  if (proposed_count_ < report_.seed_size) {
    pick = random_unproposed();
  } else {
    if (queue_.empty() || results_.size() >= results_at_fit_ + batch_)
      refit();
    while (!pick && !queue_.empty()) {
      const std::size_t i = queue_.back();
      queue_.pop_back();
      if (i == proposed_.size())
        pick = random_unproposed();
      else if (!proposed_[i])
        pick = i;
    }
    if (!pick)
      pick = random_unproposed();
  }
  if (pick) {
    proposed_[*pick] = 1;
    ++proposed_count_;
  }
  return pick;
}

nlohmann::json model_strategy::summary() const {
  return {{"features", report_.features},
          {"columns", report_.columns},
          {"seed_size", report_.seed_size},
          {"refits", report_.refits},
          {"cv_r2", report_.cv_r2 ? nlohmann::json(*report_.cv_r2) : nlohmann::json(nullptr)},
          {"confidence_r2", options_.confidence_r2},
          {"low_model_confidence", report_.low_model_confidence},
          {"low_confidence_fits", report_.low_confidence_fits}};
}

} // namespace rpl::stages
