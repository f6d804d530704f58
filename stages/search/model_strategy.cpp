#include "stages/search/model_strategy.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace rpl::stages {

model_strategy::model_strategy(const std::vector<configuration>& configs,
                               std::size_t budget,
                               std::uint64_t seed,
                               model_options options)
    : features_(space_features(configs)), budget_(std::min(budget, configs.size())),
      options_(options), rng_(seed), proposed_(configs.size(), 0), statics_(configs.size()),
      measured_(configs.size(), 0), awaiting_(configs.size(), 0), confirm_kind_(configs.size(), 0) {
  const std::size_t n = configs.size();
  shuffled_.resize(n);
  std::iota(shuffled_.begin(), shuffled_.end(), std::size_t{0});
  for (std::size_t i = n; i > 1; --i)
    std::swap(shuffled_[i - 1], shuffled_[static_cast<std::size_t>(bounded_draw(rng_, i))]);
  report_.features = static_cast<std::size_t>(features_.x.cols());
  const std::size_t wanted =
      options_.seed_fraction > 0
          ? static_cast<std::size_t>(std::ceil(options_.seed_fraction * static_cast<double>(n)))
          : options_.seed_per_feature * std::max<std::size_t>(features_.linear, 1);
  // Between the folds (bounded by the budget) and half the budget. A budget under twice the folds
  // (GEMM at 2 %: 4) makes the lower bound the larger, where std::clamp is undefined; this is what
  // it computed there (below the lower bound: it; else above the upper: that), so the landscapes'
  // figures in bench/README.md stand.
  const std::size_t seed_low = std::min<std::size_t>(options_.folds, budget_);
  const std::size_t seed_high = std::max<std::size_t>(budget_ / 2, 1);
  report_.seed_size = wanted < seed_low ? seed_low : wanted > seed_high ? seed_high : wanted;
  if (options_.seed_fraction > 0) // asked for: at least twice the linear features, in the budget
    report_.seed_size =
        std::min(std::max(wanted, 2 * std::max<std::size_t>(features_.linear, 1)), budget_);
  batch_ = options_.batch > 0 ? options_.batch : 4;
  // Neighbour groups: the configuration's values but one parameter's, as text.
  const std::size_t params = n > 0 ? configs.front().params.size() : 0;
  value_of_.assign(params, std::vector<std::uint32_t>(n));
  value_count_.assign(params, 0);
  for (std::size_t p = 0; p < params; ++p) {
    std::unordered_map<std::string, std::uint32_t> ids;
    for (std::size_t i = 0; i < n; ++i)
      value_of_[p][i] = ids.emplace(to_string(configs[i].params[p].second),
                                    static_cast<std::uint32_t>(ids.size()))
                            .first->second;
    value_count_[p] = ids.size();
  }
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
  if (result.index < measured_.size())
    measured_[result.index] = 1;
  if (result.index < awaiting_.size() && awaiting_[result.index]) {
    awaiting_[result.index] = 0;
    --outstanding_;
  }
  if (result.static_features && result.index < statics_.size() && !statics_[result.index]) {
    statics_[result.index] = result.static_features;
    ++report_.static_known;
  }
  // A resumed result may not have been proposed in this session.
  if (result.index < proposed_.size() && !proposed_[result.index]) {
    proposed_[result.index] = 1;
    ++proposed_count_;
  }
}

Eigen::MatrixXd model_strategy::tree_inputs(std::size_t valid_results) {
  const auto linear = static_cast<Eigen::Index>(std::max<std::size_t>(features_.linear, 1));
  const auto n = static_cast<Eigen::Index>(statics_.size());
  // The static features join when the screen read them for at least four in five of the
  // results (a lane without a screen gives none), and for enough points to impute from.
  report_.static_features = report_.static_known >= std::max<std::size_t>(options_.folds, 2) &&
                            5 * report_.static_known >= 4 * valid_results;
  if (!report_.static_features)
    return features_.x.leftCols(linear);
  std::vector<Eigen::Index> known;
  for (Eigen::Index i = 0; i < n; ++i)
    if (statics_[static_cast<std::size_t>(i)])
      known.push_back(i);
  Eigen::MatrixXd out(n, linear + static_cast<Eigen::Index>(static_feature_names.size()));
  out.leftCols(linear) = features_.x.leftCols(linear);
  const Eigen::MatrixXd known_x = features_.x(known, Eigen::seqN(0, linear));
  for (std::size_t f = 0; f < static_feature_names.size(); ++f) {
    // Scaled to about [0, 1]: registers over 256, bytes on a log scale, occupancy as it is.
    auto scale = [f](double v) {
      return f == 0 ? v / 256 : f == 3 ? v : std::log2(1 + std::max(v, 0.0)) / 18;
    };
    Eigen::VectorXd y(static_cast<Eigen::Index>(known.size()));
    for (std::size_t k = 0; k < known.size(); ++k)
      y[static_cast<Eigen::Index>(k)] = scale((*statics_[static_cast<std::size_t>(known[k])])[f]);
    const auto column = static_cast<Eigen::Index>(linear + static_cast<Eigen::Index>(f));
    if (y.maxCoeff() == y.minCoeff()) {
      out.col(column).setConstant(y[0]);
      continue;
    }
    // Unknown where nothing was built yet: imputed by trees from the parameters.
    tree_ensemble impute;
    tree_ensemble_options few;
    few.trees = 8;
    impute.fit(known_x, y, 17 + f, few);
    out.col(column) = impute.predict(features_.x.leftCols(linear));
    for (std::size_t k = 0; k < known.size(); ++k)
      out(known[k], column) = y[static_cast<Eigen::Index>(k)];
  }
  return out;
}

namespace {

/// Per configuration, lower first: the expected improvement below the best measured log time
/// (Jones, Schonlau and Welch 1998), negated: the mean's gain weighted by how likely it is, plus
/// the spread's chance. Confirming, the mean alone (exploit).
Eigen::VectorXd expected_improvement_score(const Eigen::VectorXd& mean,
                                           const Eigen::VectorXd& spread,
                                           double best,
                                           bool confirming) {
  Eigen::VectorXd score(mean.size());
  for (Eigen::Index i = 0; i < mean.size(); ++i) {
    const double s = spread[i];
    if (confirming) {
      score[i] = mean[i]; // exploit: the mean alone
      continue;
    }
    if (s <= 0) {
      score[i] = -std::max(best - mean[i], 0.0);
      continue;
    }
    const double z = (best - mean[i]) / s;
    const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
    score[i] = -((best - mean[i]) * cdf + s * pdf);
  }
  return score;
}

} // namespace

void model_strategy::refit() {
  results_at_fit_ = results_.size();
  batch_ = options_.batch > 0 ? options_.batch : std::max<std::size_t>(1, results_.size() / 10);
  // The confirm phase, the budget's last part: no exploration, only the best predictions and
  // the neighbours of the best measured configuration; at least one proposal per parameter
  // (while the best measured has that many unproposed neighbours), so that a small budget's
  // confirm can step each parameter once.
  std::size_t confirm =
      static_cast<std::size_t>(std::ceil(options_.confirm_fraction * static_cast<double>(budget_)));
  if (const auto best = best_measured())
    confirm = std::max(confirm, std::min(neighbours(*best).size(), groups_.size()));
  const bool confirming = proposed_count_ + confirm >= budget_;
  if (confirming)
    batch_ = std::min(batch_, std::max<std::size_t>(budget_ - proposed_count_, 1));
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
  surrogate_scores scores;
  if (usable)
    scores = fit_surrogates(rows, y, confirming);
  const bool trusted = usable && !report_.low_model_confidence;
  // Even a model under the threshold ranks the neighbours better than chance while it predicts
  // better than the mean (cv R² > 0); the widened search still draws random configurations.
  const bool guided = usable && report_.cv_r2 && *report_.cv_r2 > 0;
  if (usable)
    note_convergence(trusted);
  if (confirming && guided && report_.converged) {
    queue_converged_picks(y.minCoeff());
    if (!queue_.empty())
      return;
  }
  const std::vector<std::size_t> near =
      neighbour_picks(local_search_centres(confirming), guided, scores.chosen);
  const std::vector<std::size_t> global = guided ? model_picks(scores) : std::vector<std::size_t>{};
  queue_picks(global, near, confirming, trusted, guided);
}

std::optional<std::size_t> model_strategy::best_measured() const {
  std::optional<std::size_t> best;
  double best_log = HUGE_VAL;
  for (const auto& [index, value] : results_)
    if (value && *value < best_log) {
      best_log = *value;
      best = index;
    }
  return best;
}

void model_strategy::note_convergence(bool trusted) {
  // The predicted best over the whole space, when the fit is trusted and it is measured: the
  // model then expects nothing unmeasured to beat what was measured.
  std::optional<std::size_t> best;
  if (trusted && predicted_log_.size() == static_cast<Eigen::Index>(proposed_.size())) {
    Eigen::Index at = 0;
    predicted_log_.minCoeff(&at);
    if (measured_[static_cast<std::size_t>(at)])
      best = static_cast<std::size_t>(at);
  }
  stable_fits_ = !best ? 0 : best == predicted_best_ ? stable_fits_ + 1 : 1;
  predicted_best_ = best;
  // Once converged, the model stays so for the rest of the search.
  report_.converged = report_.converged ||
                      (best && stable_fits_ >= std::max<std::size_t>(options_.converge_fits, 1));
}

void model_strategy::queue_converged_picks(double best_log) {
  const auto n = static_cast<Eigen::Index>(proposed_.size());
  auto by_mean = [this](std::size_t a, std::size_t b) {
    return std::tie(predicted_log_[static_cast<Eigen::Index>(a)], a) <
           std::tie(predicted_log_[static_cast<Eigen::Index>(b)], b);
  };
  std::vector<char> listed(proposed_.size(), 0);
  auto add = [&](std::vector<std::size_t>& to, std::size_t i) {
    if (!proposed_[i] && !listed[i]) {
      listed[i] = 1;
      to.push_back(i);
    }
  };
  // First the best measured one's neighbours: it is about to be named, so each one-parameter
  // step from it is measured (by the model's order) before anything else.
  std::vector<std::size_t> near;
  if (const auto best = best_measured())
    for (const std::size_t j : neighbours(*best))
      add(near, j);
  std::stable_sort(near.begin(), near.end(), by_mean);
  // Then the predicted best few, measured or not, and their neighbours: one step around the
  // model's optimum absorbs its bias (a tile size ranked at a corner of its range).
  std::vector<std::size_t> top(proposed_.size());
  std::iota(top.begin(), top.end(), std::size_t{0});
  const std::size_t k = std::min(options_.confirm_top, top.size());
  std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(k), top.end(), by_mean);
  top.resize(k);
  std::vector<std::size_t> around;
  for (const std::size_t c : top) {
    add(around, c);
    for (const std::size_t j : neighbours(c))
      add(around, j);
  }
  std::stable_sort(around.begin(), around.end(), by_mean);
  near.insert(near.end(), around.begin(), around.end());
  // The most uncertain predictions (the trees' spread) that could still beat the best measured.
  std::vector<std::size_t> unsure;
  if (options_.uncertain_every > 0 && trees_spread_.size() == n) {
    for (Eigen::Index i = 0; i < n; ++i)
      if (trees_mean_[i] - 2 * trees_spread_[i] < best_log)
        add(unsure, static_cast<std::size_t>(i));
    std::stable_sort(unsure.begin(), unsure.end(), [this](std::size_t a, std::size_t b) {
      return trees_spread_[static_cast<Eigen::Index>(a)] >
             trees_spread_[static_cast<Eigen::Index>(b)];
    });
  }
  if (!report_.converged_at)
    report_.converged_at = proposed_count_;
  std::size_t a = 0, u = 0;
  while (queue_.size() < batch_ && (a < near.size() || u < unsure.size())) {
    const bool uncertain_turn =
        options_.uncertain_every > 0 &&
        confirm_turn_ % options_.uncertain_every == options_.uncertain_every - 1;
    ++confirm_turn_;
    if ((uncertain_turn && u < unsure.size()) || a >= near.size()) {
      queue_.push_back(unsure[u]);
      confirm_kind_[unsure[u++]] = 2;
    } else {
      queue_.push_back(near[a]);
      confirm_kind_[near[a++]] = 1;
    }
  }
  std::reverse(queue_.begin(), queue_.end()); // taken from the back
}

model_strategy::surrogate_scores model_strategy::fit_surrogates(
    const std::vector<Eigen::Index>& rows, const Eigen::VectorXd& y, bool confirming) {
  Eigen::VectorXd score;
  Eigen::VectorXd other;
  Eigen::VectorXd trees_mean;
  // As many columns as half the points: the linear terms first, the squares and the
  // interactions as the results allow.
  const auto columns = static_cast<Eigen::Index>(
      std::clamp<std::size_t>(rows.size() / 2, 1, static_cast<std::size_t>(features_.x.cols())));
  const auto seed = static_cast<std::uint64_t>(rows.size());
  const ridge_model ridge =
      fit_ridge(features_.x(rows, Eigen::seqN(0, columns)), y, options_.folds, seed);
  report_.columns = static_cast<std::size_t>(columns);
  report_.cv_r2_ridge = ridge.cv_r2;
  report_.cv_r2_trees.reset();
  trees_mean_.resize(0);
  trees_spread_.resize(0);
  report_.cv_r2 = ridge.cv_r2;
  report_.surrogate = "ridge";
  if (options_.trees > 0) {
    tree_ensemble_options trees;
    trees.trees = options_.trees;
    const Eigen::MatrixXd inputs = tree_inputs(rows.size());
    const Eigen::MatrixXd x = inputs(rows, Eigen::all);
    report_.cv_r2_trees = tree_ensemble_cv_r2(x, y, options_.folds, seed, trees);
    if (*report_.cv_r2_trees > ridge.cv_r2 || ridge.cv_r2 > 0) {
      tree_ensemble model;
      model.fit(x, y, seed, trees);
      Eigen::VectorXd mean, spread;
      model.predict(inputs, mean, spread);
      trees_mean = mean;
      trees_mean_ = mean;
      trees_spread_ = spread;
      score = expected_improvement_score(mean, spread, y.minCoeff(), confirming);
    }
    if (*report_.cv_r2_trees > ridge.cv_r2) {
      report_.cv_r2 = report_.cv_r2_trees;
      report_.surrogate = "extra_trees";
      predicted_log_ = trees_mean;
      if (ridge.cv_r2 > 0)
        other = ridge.predict(features_.x.leftCols(columns));
    } else {
      if (*report_.cv_r2_trees > 0)
        other = std::move(score);
      score = ridge.predict(features_.x.leftCols(columns));
      predicted_log_ = score;
    }
  } else {
    score = ridge.predict(features_.x.leftCols(columns));
    predicted_log_ = score;
  }
  ++report_.refits;
  report_.low_model_confidence = *report_.cv_r2 < options_.confidence_r2;
  report_.low_confidence_fits += report_.low_model_confidence;
  return {std::move(score), std::move(other)};
}

std::vector<std::vector<std::size_t>> model_strategy::local_search_centres(bool confirming) const {
  // The best measured configurations, for their neighbours.
  std::vector<std::pair<double, std::size_t>> measured;
  for (std::size_t k = 0; k < results_.size(); ++k)
    if (results_[k].second)
      measured.emplace_back(*results_[k].second, results_[k].first);
  std::sort(measured.begin(), measured.end());
  // Local search centres: the best three measured (the best alone when confirming) and, for
  // every parameter of two values (a switch), the best measured with each of its values: the best
  // of another basin (no shared memory, when the best so far uses it) keeps its neighbours in
  // the search although the model, fitted mostly on the leading basin, ranks them low.
  std::vector<std::vector<std::size_t>> centres(1);
  std::vector<std::size_t> all_centres;
  auto add_centre = [&](std::size_t i, std::vector<std::size_t>& to) {
    if (std::find(all_centres.begin(), all_centres.end(), i) == all_centres.end()) {
      all_centres.push_back(i);
      to.push_back(i);
    }
  };
  for (std::size_t k = 0; k < std::min<std::size_t>(confirming ? 1 : 3, measured.size()); ++k)
    add_centre(measured[k].second, centres.front());
  if (!confirming)
    for (std::size_t p = 0; p < value_of_.size(); ++p) {
      if (value_count_[p] != 2)
        continue;
      std::vector<char> seen(value_count_[p], 0);
      for (const auto& [value, index] : measured)
        if (!seen[value_of_[p][index]]) {
          seen[value_of_[p][index]] = 1;
          centres.emplace_back();
          add_centre(index, centres.back());
        }
    }
  return centres;
}

std::vector<std::size_t>
model_strategy::neighbour_picks(const std::vector<std::vector<std::size_t>>& centres,
                                bool guided,
                                const Eigen::VectorXd& predicted) {
  // The unproposed neighbours of each group of centres in order (guided: by the score; else at
  // random), taken in turn from each group: the best three's first.
  std::vector<std::vector<std::size_t>> around;
  for (const auto& group : centres) {
    std::vector<std::size_t> list;
    for (const std::size_t centre : group)
      for (const std::size_t j : neighbours(centre))
        if (std::find(list.begin(), list.end(), j) == list.end())
          list.push_back(j);
    if (guided) {
      std::stable_sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) {
        return predicted[static_cast<Eigen::Index>(a)] < predicted[static_cast<Eigen::Index>(b)];
      });
    } else {
      for (std::size_t i = list.size(); i > 1; --i)
        std::swap(list[i - 1], list[static_cast<std::size_t>(bounded_draw(rng_, i))]);
    }
    around.push_back(std::move(list));
  }
  std::vector<std::size_t> near;
  std::vector<char> taken(proposed_.size(), 0);
  for (std::size_t depth = 0, added = 1; added > 0 && near.size() < batch_; ++depth) {
    added = 0;
    for (const auto& list : around)
      if (depth < list.size()) {
        ++added;
        if (!taken[list[depth]]) {
          taken[list[depth]] = 1;
          near.push_back(list[depth]);
        }
      }
  }
  return near;
}

std::vector<std::size_t> model_strategy::model_picks(const surrogate_scores& scores) const {
  // The chosen surrogate's best picks, interleaved with the other's where it too is better
  // than the mean: two different views of the landscape, each catching what the other misses.
  std::vector<std::size_t> open;
  for (std::size_t i = 0; i < proposed_.size(); ++i)
    if (!proposed_[i])
      open.push_back(i);
  auto best_of = [&](const Eigen::VectorXd& by) {
    std::vector<std::size_t> ranked = open;
    const std::size_t keep = std::min(ranked.size(), batch_);
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep),
                      ranked.end(), [&](std::size_t a, std::size_t b) {
                        return std::tie(by[static_cast<Eigen::Index>(a)], a) <
                               std::tie(by[static_cast<Eigen::Index>(b)], b);
                      });
    ranked.resize(keep);
    return ranked;
  };
  const auto first = best_of(scores.chosen);
  const auto second = scores.other.size() > 0 ? best_of(scores.other) : std::vector<std::size_t>{};
  std::vector<std::size_t> global;
  for (std::size_t k = 0; k < std::max(first.size(), second.size()); ++k)
    for (const auto* list : {&first, &second})
      if (k < list->size() && std::find(global.begin(), global.end(), (*list)[k]) == global.end())
        global.push_back((*list)[k]);
  return global;
}

void model_strategy::queue_picks(const std::vector<std::size_t>& global,
                                 const std::vector<std::size_t>& near,
                                 bool confirming,
                                 bool trusted,
                                 bool guided) {
  // Trusted, the picks alternate the model's and the neighbours of the centres. Untrusted, the
  // search widens: every other model pick becomes a random configuration (drawn when it is
  // taken, in next()), and all of them do when the model is no better than the mean. The turn
  // carries over from batch to batch, so batches of one alternate too.
  constexpr std::size_t random_pick = static_cast<std::size_t>(-1);
  std::size_t g = 0, m = 0, idle = 0;
  while (queue_.size() < batch_ && idle < 4) {
    const std::size_t turn = turn_++;
    const std::size_t before = queue_.size();
    if (turn % 2 == 0) {
      const bool widen = !confirming && !trusted && (!guided || turn % 4 == 2);
      if (widen)
        queue_.push_back(random_pick);
      else if (g < global.size())
        queue_.push_back(global[g++]);
    } else if (m < near.size()) {
      queue_.push_back(near[m++]);
    }
    idle = queue_.size() == before ? idle + 1 : 0;
  }
  for (auto& i : queue_)
    if (i == random_pick)
      i = proposed_.size();
  std::reverse(queue_.begin(), queue_.end()); // taken from the back
}

std::optional<std::size_t> model_strategy::next() {
  if (proposed_count_ >= budget_)
    return std::nullopt;
  // Past the seed sample, a pick waits for results while max_pending are outstanding: each
  // finished candidate asks again.
  if (options_.max_pending > 0 && proposed_count_ >= report_.seed_size &&
      outstanding_ >= options_.max_pending)
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
    // Counted when proposed: a refit may drop what it queued.
    report_.confirm_neighbours += confirm_kind_[*pick] == 1;
    report_.confirm_uncertain += confirm_kind_[*pick] == 2;
    proposed_[*pick] = 1;
    ++proposed_count_;
    awaiting_[*pick] = 1;
    ++outstanding_;
  }
  return pick;
}

namespace {

nlohmann::json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

} // namespace

nlohmann::json model_strategy::summary() const {
  return {{"features", report_.features},
          {"columns", report_.columns},
          {"seed_size", report_.seed_size},
          {"refits", report_.refits},
          {"surrogate",
           report_.surrogate.empty() ? nlohmann::json(nullptr) : nlohmann::json(report_.surrogate)},
          {"cv_r2", optional_json(report_.cv_r2)},
          {"cv_r2_ridge", optional_json(report_.cv_r2_ridge)},
          {"cv_r2_trees", optional_json(report_.cv_r2_trees)},
          {"static_features", report_.static_features},
          {"static_known", report_.static_known},
          {"confidence_r2", options_.confidence_r2},
          {"low_model_confidence", report_.low_model_confidence},
          {"low_confidence_fits", report_.low_confidence_fits},
          {"converged", report_.converged},
          {"converged_at",
           report_.converged_at ? nlohmann::json(*report_.converged_at) : nlohmann::json(nullptr)},
          {"confirm_neighbours", report_.confirm_neighbours},
          {"confirm_uncertain", report_.confirm_uncertain},
          {"unmeasured", unmeasured()}};
}

nlohmann::json model_strategy::unmeasured() const {
  double best = HUGE_VAL;
  for (const auto& [index, value] : results_)
    if (value)
      best = std::min(best, *value);
  const bool fitted = predicted_log_.size() == static_cast<Eigen::Index>(proposed_.size()) &&
                      std::isfinite(best) && report_.cv_r2;
  std::vector<std::pair<double, std::size_t>> open; // predicted ratio to the best, index
  for (std::size_t i = 0; i < proposed_.size(); ++i)
    if (!proposed_[i])
      open.emplace_back(
          fitted ? std::exp(predicted_log_[static_cast<Eigen::Index>(i)] - best) : HUGE_VAL, i);
  std::sort(open.begin(), open.end());
  std::size_t pruned = 0, unconfirmed = 0, unranked = 0;
  nlohmann::json candidates = nlohmann::json::array();
  char text[160];
  for (const auto& [ratio, index] : open) {
    nlohmann::json row = {{"space_index", index}};
    if (!fitted) {
      ++unranked;
      row["predicted_ratio"] = nullptr;
      row["reason"] = "unranked: no model was fitted before the budget ended";
    } else if (report_.low_model_confidence) {
      ++unranked;
      row["predicted_ratio"] = ratio;
      std::snprintf(text, sizeof text,
                    "unranked: the model was not trusted (cv_r2 %.2f < %.2f); predicted %.2fx "
                    "the best measured",
                    *report_.cv_r2, options_.confidence_r2, ratio);
      row["reason"] = text;
    } else if (ratio > 1 + options_.prune_margin) {
      ++pruned;
      row["predicted_ratio"] = ratio;
      std::snprintf(text, sizeof text, "pruned: predicted %.2fx the best measured (%s, cv_r2 %.2f)",
                    ratio, report_.surrogate.c_str(), *report_.cv_r2);
      row["reason"] = text;
    } else {
      ++unconfirmed;
      row["predicted_ratio"] = ratio;
      std::snprintf(text, sizeof text,
                    "unconfirmed: predicted %.2fx the best measured, within %.0f %%; the confirm "
                    "budget ended first",
                    ratio, 100 * options_.prune_margin);
      row["reason"] = text;
    }
    candidates.push_back(std::move(row));
  }
  return {{"count", open.size()}, {"prune_margin", options_.prune_margin},
          {"pruned", pruned},     {"unconfirmed", unconfirmed},
          {"unranked", unranked}, {"candidates", std::move(candidates)}};
}

} // namespace rpl::stages
