// The model strategy and its parts on synthetic spaces: features, the cross-validated ridge
// surrogate (low_model_confidence on noise, not on a smooth landscape), the strategy's
// contract (budget, no repeats, determinism, failures survived), the converged model's confirm
// picks and the pending limit.
#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stages/search/model_strategy.hpp"

namespace rpl::stages {
namespace {

/// x in {1, 2, 4, ..., 256} × y in {0..15} × z in {"a", "b"}: 9 × 16 × 2 = 288 configurations.
std::vector<configuration> grid() {
  std::vector<configuration> out;
  for (std::int64_t x = 1; x <= 256; x *= 2)
    for (std::int64_t y = 0; y <= 15; ++y)
      for (const char* z : {"a", "b"}) {
        configuration c;
        c.params = {{"x", x}, {"y", y}, {"z", std::string(z)}};
        out.push_back(c);
      }
  return out;
}

/// A smooth landscape: a bowl in log2(x) and y, z a constant factor; its minimum at x=16, y=5, a.
double smooth(const configuration& c) {
  const double lx = std::log2(static_cast<double>(std::get<std::int64_t>(*c.find("x"))));
  const double y = static_cast<double>(std::get<std::int64_t>(*c.find("y")));
  const double z = std::get<std::string>(*c.find("z")) == "a" ? 1.0 : 1.3;
  return z * (1 + 0.1 * (lx - 4) * (lx - 4) + 0.02 * (y - 5) * (y - 5));
}

TEST(stages_space_features, scales_orders_and_one_hots_by_kind) {
  const auto f = space_features(grid());
  // Linear: log2(x) (positive, 256 times its least), y (from 0: no log), z=b; squares:
  // log2(x)^2, y^2; products: log2(x)*y.
  EXPECT_EQ(f.names,
            (std::vector<std::string>{"log2(x)", "y", "z=b", "log2(x)^2", "y^2", "log2(x)*y"}));
  EXPECT_EQ(f.linear, 3u);
  ASSERT_EQ(f.x.rows(), 288);
  // x = 1 is -1 and x = 256 is +1 on the log scale; x = 16 is 0.
  EXPECT_DOUBLE_EQ(f.x(0, 0), -1);
  EXPECT_DOUBLE_EQ(f.x(287, 0), 1);
  EXPECT_DOUBLE_EQ(f.x(4 * 32, 0), 0);
  EXPECT_DOUBLE_EQ(f.x(1, 2), 1); // z = b
}

TEST(stages_surrogate, cross_validated_r2_tells_noise_from_a_smooth_landscape) {
  const auto configs = grid();
  const auto f = space_features(configs);
  Eigen::VectorXd smooth_y(f.x.rows()), noise_y(f.x.rows());
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0, 1);
  for (Eigen::Index i = 0; i < f.x.rows(); ++i) {
    smooth_y[i] = std::log(smooth(configs[static_cast<std::size_t>(i)]));
    noise_y[i] = normal(rng);
  }
  const auto good = fit_ridge(f.x, smooth_y, 5, 1);
  EXPECT_GT(good.cv_r2, 0.9);
  const auto bad = fit_ridge(f.x, noise_y, 5, 1);
  EXPECT_LT(bad.cv_r2, 0.1);
  // In-sample R² would not have told: with as many columns as points the fit is exact, yet the
  // cross-validated R² stays low.
  Eigen::MatrixXd wide = Eigen::MatrixXd::Random(12, 12);
  const auto memorized = fit_ridge(wide, noise_y.head(12), 4, 1);
  EXPECT_LT(memorized.cv_r2, 0.5);
}

TEST(stages_tree_ensemble, fits_interactions_and_its_cross_validated_r2_tells_noise) {
  const auto configs = grid();
  const auto f = space_features(configs);
  const Eigen::MatrixXd x = f.x.leftCols(static_cast<Eigen::Index>(f.linear));
  // An interaction a linear model on the linear terms cannot take: fast only where both x and y
  // are small or both are large.
  Eigen::VectorXd y(x.rows()), noise_y(x.rows());
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal(0, 1);
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    y[i] = (x(i, 0) > 0) == (x(i, 1) > 0) ? 1.0 : 2.0 + 0.1 * x(i, 2);
    noise_y[i] = normal(rng);
  }
  EXPECT_GT(tree_ensemble_cv_r2(x, y, 5, 1), 0.9);
  EXPECT_LT(fit_ridge(x, y, 5, 1).cv_r2, 0.5); // the linear model cannot
  EXPECT_LT(tree_ensemble_cv_r2(x, noise_y, 5, 1), 0.1);
  tree_ensemble model;
  model.fit(x, y, 9);
  EXPECT_EQ(model.trees(), 32u);
  Eigen::VectorXd mean, spread;
  model.predict(x, mean, spread);
  // Fully grown trees reproduce the points they saw, and agree on them.
  EXPECT_NEAR((mean - y).cwiseAbs().maxCoeff(), 0, 1e-12);
  EXPECT_NEAR(spread.maxCoeff(), 0, 1e-6);
  // Where the trees saw nothing, they disagree: fitted on x = 1 and x = 256 alone, each tree
  // cuts somewhere between, so at x = 16 some predict as for 1 and others as for 256.
  tree_ensemble half;
  std::vector<Eigen::Index> even;
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    if (std::abs(x(i, 0)) == 1)
      even.push_back(i);
  half.fit(x(even, Eigen::all), y(even), 9);
  half.predict(x, mean, spread);
  EXPECT_GT(spread.maxCoeff(), 0.01);
  // Deterministic for a seed.
  tree_ensemble again;
  again.fit(x(even, Eigen::all), y(even), 9);
  EXPECT_EQ(again.predict(x), mean);
}

struct search_result {
  std::vector<std::size_t> order;
  model_report report;
  nlohmann::json unmeasured;
};

using statics_fn =
    std::function<std::optional<std::array<double, 4>>(const configuration&, std::size_t)>;

search_result run(const std::vector<configuration>& configs,
                  const std::function<std::optional<double>(const configuration&)>& value,
                  std::size_t budget,
                  std::uint64_t seed,
                  const statics_fn& statics = nullptr,
                  const model_options& options = {}) {
  model_strategy s(configs, budget, seed, options);
  search_result out;
  const auto finish = [&] {
    out.report = s.report();
    out.unmeasured = s.unmeasured();
  };
  while (const auto i = s.next()) {
    out.order.push_back(*i);
    observation o;
    o.index = *i;
    o.config = &configs[*i];
    o.value_ns = value(configs[*i]);
    if (statics)
      o.static_features = statics(configs[*i], out.order.size());
    if (!o.value_ns)
      o.failure = "RuntimeFailedConfig";
    s.observe(o);
  }
  finish();
  return out;
}

TEST(stages_model_strategy, finds_the_bowls_bottom_and_trusts_its_model) {
  const auto configs = grid();
  const auto r = run(configs, smooth, 40, 3);
  EXPECT_EQ(r.order.size(), 40u);
  EXPECT_EQ(std::set<std::size_t>(r.order.begin(), r.order.end()).size(), 40u); // no repeats
  double best = HUGE_VAL;
  for (const auto i : r.order)
    best = std::min(best, smooth(configs[i]));
  EXPECT_DOUBLE_EQ(best, 1.0); // x = 16, y = 5, z = a, in 40 of 288
  ASSERT_TRUE(r.report.cv_r2.has_value());
  EXPECT_FALSE(r.report.low_model_confidence) << *r.report.cv_r2;
  EXPECT_EQ(r.report.seed_size, 6u); // twice the 3 linear features
  // Every configuration left out says why: the trusted model predicts most of the bowl slower
  // than its bottom by more than the margin, and the ratios come in ascending order.
  EXPECT_EQ(r.unmeasured["count"], 288 - 40);
  EXPECT_EQ(r.unmeasured["candidates"].size(), 288u - 40u);
  EXPECT_EQ(r.unmeasured["unranked"], 0);
  EXPECT_GT(r.unmeasured["pruned"].get<int>(), 200);
  EXPECT_EQ(r.unmeasured["pruned"].get<int>() + r.unmeasured["unconfirmed"].get<int>(), 248);
  double previous = 0;
  for (const auto& row : r.unmeasured["candidates"]) {
    EXPECT_GE(row["predicted_ratio"].get<double>(), previous);
    previous = row["predicted_ratio"].get<double>();
    const auto reason = row["reason"].get<std::string>();
    EXPECT_TRUE(reason.rfind(previous > 1.05 ? "pruned: " : "unconfirmed: ", 0) == 0) << reason;
  }
  // The same seed and results give the same sequence.
  EXPECT_EQ(run(configs, smooth, 40, 3).order, r.order);
}

TEST(stages_model_strategy, static_features_join_the_trees_when_most_results_have_them) {
  // Registers grow with y and occupancy falls with x * registers; the time follows occupancy
  // (a kernel that is latency-bound), with its best at x = 16, y = 5 as in `smooth`.
  const auto configs = grid();
  auto statics = [](const configuration& c, std::size_t) -> std::optional<std::array<double, 4>> {
    const double x = static_cast<double>(std::get<std::int64_t>(*c.find("x")));
    const double y = static_cast<double>(std::get<std::int64_t>(*c.find("y")));
    const double registers = 32 + 8 * y;
    return std::array<double, 4>{registers, 1024 * x, 0, std::min(1.0, 2048 / (x * registers))};
  };
  const auto r = run(configs, smooth, 60, 4, statics);
  EXPECT_TRUE(r.report.static_features);
  EXPECT_EQ(r.report.static_known, 60u);
  double best = HUGE_VAL;
  for (const auto i : r.order)
    best = std::min(best, smooth(configs[i]));
  EXPECT_DOUBLE_EQ(best, 1.0);
  // Read for only every other result (a lane without a screen for the rest): left out.
  auto half = [&](const configuration& c, std::size_t k) {
    return k % 2 == 0 ? statics(c, k) : std::nullopt;
  };
  const auto h = run(configs, smooth, 60, 4, half);
  EXPECT_FALSE(h.report.static_features);
  EXPECT_EQ(h.report.static_known, 30u);
}

TEST(stages_model_strategy, pure_noise_raises_low_model_confidence_and_failures_are_survived) {
  const auto configs = grid();
  std::map<std::string, double> noise;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> uniform(1, 2);
  for (const auto& c : configs)
    noise[to_string(*c.find("x")) + "," + to_string(*c.find("y")) + "," + to_string(*c.find("z"))] =
        uniform(rng);
  auto value = [&](const configuration& c) -> std::optional<double> {
    // Every configuration with y = 3 fails.
    if (std::get<std::int64_t>(*c.find("y")) == 3)
      return std::nullopt;
    return noise.at(to_string(*c.find("x")) + "," + to_string(*c.find("y")) + "," +
                    to_string(*c.find("z")));
  };
  const auto r = run(configs, value, 100, 5);
  EXPECT_EQ(r.order.size(), 100u);
  EXPECT_EQ(std::set<std::size_t>(r.order.begin(), r.order.end()).size(), 100u);
  EXPECT_TRUE(r.report.low_model_confidence) << r.report.cv_r2.value_or(-99);
  EXPECT_GT(r.report.low_confidence_fits, 0u);
  // An untrusted model leaves nothing out on its predictions.
  EXPECT_EQ(r.unmeasured["unranked"], 288 - 100);
  EXPECT_EQ(r.unmeasured["pruned"], 0);
  // A budget over the space stops at the space.
  EXPECT_EQ(run(configs, smooth, 1000, 1).order.size(), configs.size());
}

/// A landscape the ridge fits well (log-linear: faster with x and y, z=b 30 % slower) but for
/// one configuration: (x=256, y=7, a), 10 % faster than the corner (256, 15, a) the model
/// predicts best. It is one of the corner's 24 one-parameter neighbours, one a model monotone in
/// y ranks eighth of the corner's y steps.
double corner_with_a_dip(const configuration& c) {
  const double lx = std::log2(static_cast<double>(std::get<std::int64_t>(*c.find("x"))));
  const auto y = std::get<std::int64_t>(*c.find("y"));
  const bool a = std::get<std::string>(*c.find("z")) == "a";
  const double t = std::exp(-0.1 * lx - 0.02 * static_cast<double>(y)) * (a ? 1.0 : 1.3);
  return lx == 8 && y == 7 && a ? 0.9 * std::exp(-0.8 - 0.3) : t;
}

bool at(const configuration& c, std::int64_t x, std::int64_t y) {
  return std::get<std::int64_t>(*c.find("x")) == x && std::get<std::int64_t>(*c.find("y")) == y &&
         std::get<std::string>(*c.find("z")) == "a";
}

/// One parameter apart.
bool neighbours(const configuration& a, const configuration& b) {
  std::size_t differ = 0;
  for (std::size_t p = 0; p < a.params.size(); ++p)
    differ += !(a.params[p].second == b.params[p].second);
  return differ == 1;
}

TEST(stages_model_strategy, a_converged_model_confirms_the_neighbours_of_its_best) {
  // Everything but the corner's neighbours and a few others measured in an earlier session (as
  // --resume replays them): the trusted model predicts the corner, measured, best, so it has
  // converged, and the 12 proposals left are all confirm picks.
  const auto configs = grid();
  std::size_t corner = 0, dip = 0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    corner = at(configs[i], 256, 15) ? i : corner;
    dip = at(configs[i], 256, 7) ? i : dip;
  }
  model_options options;
  options.batch = 1; // a fit per result, so that convergence is seen at once
  options.uncertain_every = 0;
  std::size_t resumed = 0;
  std::vector<observation> earlier;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const bool open = i == corner ? false
                      : neighbours(configs[i], configs[corner])
                          ? true
                          : std::get<std::int64_t>(*configs[i].find("y")) == 1;
    if (open)
      continue;
    observation o;
    o.index = i;
    o.config = &configs[i];
    o.value_ns = corner_with_a_dip(configs[i]);
    o.resumed = true;
    earlier.push_back(o);
    ++resumed;
  }
  model_strategy s(configs, resumed + 12, 1, options);
  for (const auto& o : earlier)
    s.observe(o);
  std::vector<std::size_t> picks;
  std::optional<std::size_t> best_at_pick; // the best measured when each pick was made
  std::size_t best = corner;
  while (const auto i = s.next()) {
    picks.push_back(*i);
    const std::size_t since = picks.size() - 1 + resumed;
    if (s.report().converged_at && since >= *s.report().converged_at) {
      // A converged pick: a neighbour of the best measured while it has unmeasured ones.
      EXPECT_TRUE(neighbours(configs[*i], configs[best]))
          << "pick " << picks.size() << ": " << to_string(*configs[*i].find("x")) << ","
          << to_string(*configs[*i].find("y"));
    }
    observation o;
    o.index = *i;
    o.config = &configs[*i];
    o.value_ns = corner_with_a_dip(configs[*i]);
    s.observe(o);
    if (corner_with_a_dip(configs[*i]) < corner_with_a_dip(configs[best]))
      best = *i;
  }
  ASSERT_TRUE(s.report().converged);
  ASSERT_TRUE(s.report().converged_at.has_value());
  EXPECT_LE(*s.report().converged_at, resumed + 1); // the second fit
  EXPECT_GT(s.report().confirm_neighbours, 9u);
  // The dip, which the model ranked low, was measured and is the best.
  EXPECT_NE(std::find(picks.begin(), picks.end(), dip), picks.end());
  EXPECT_EQ(best, dip);
}

TEST(stages_model_strategy, a_converged_model_also_tries_its_most_uncertain_predictions) {
  // The bowl: its model converges; every third converged pick is the trees' most uncertain
  // prediction that could still beat the best measured, none with uncertain_every = 0.
  const auto configs = grid();
  model_options options;
  options.confirm_fraction = 0.5;
  const auto r = run(configs, smooth, 60, 3, nullptr, options);
  ASSERT_TRUE(r.report.converged);
  EXPECT_GT(r.report.confirm_uncertain, 0u);
  EXPECT_GE(r.report.confirm_neighbours, 2 * r.report.confirm_uncertain);
  options.uncertain_every = 0;
  const auto none = run(configs, smooth, 60, 3, nullptr, options);
  EXPECT_EQ(none.report.confirm_uncertain, 0u);
  EXPECT_EQ(none.order.size(), 60u);
}

TEST(stages_model_strategy, past_the_seed_it_waits_for_results_beyond_max_pending) {
  const auto configs = grid();
  model_options options;
  options.max_pending = 2;
  model_strategy s(configs, 30, 5, options);
  std::vector<std::size_t> pending;
  // The seed sample (6) is proposed without waiting.
  for (std::size_t k = 0; k < s.report().seed_size + 3; ++k)
    if (const auto i = s.next())
      pending.push_back(*i);
  EXPECT_EQ(pending.size(), s.report().seed_size);
  std::size_t proposed = pending.size();
  while (!pending.empty()) {
    observation o;
    o.index = pending.front();
    o.config = &configs[o.index];
    o.value_ns = smooth(configs[o.index]);
    pending.erase(pending.begin());
    s.observe(o);
    // One result in: at most one new proposal while two are pending.
    while (pending.size() < 2)
      if (const auto i = s.next()) {
        pending.push_back(*i);
        ++proposed;
      } else {
        break;
      }
    EXPECT_FALSE(s.next().has_value() && pending.size() >= 2);
  }
  EXPECT_EQ(proposed, 30u); // the whole budget, once results came back
}

} // namespace
} // namespace rpl::stages
