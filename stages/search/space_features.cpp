#include "stages/search/space_features.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <variant>

namespace rpl::stages {

namespace {

bool numeric(const param_value& v) {
  return !std::holds_alternative<std::string>(v);
}

double as_double(const param_value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v))
    return static_cast<double>(*i);
  return std::get<double>(v);
}

} // namespace

feature_matrix space_features(const std::vector<configuration>& configs) {
  feature_matrix out;
  const std::size_t n = configs.size();
  if (n == 0)
    return out;
  const std::size_t params = configs.front().params.size();
  std::vector<Eigen::VectorXd> columns, squares;
  std::vector<std::string> square_names;
  std::vector<Eigen::VectorXd> scaled; // the numeric parameters, for their products
  std::vector<std::string> scaled_names;
  for (std::size_t p = 0; p < params; ++p) {
    const std::string& name = configs.front().params[p].first;
    bool all_numeric = true;
    std::map<std::string, int> distinct;
    for (const auto& c : configs) {
      all_numeric = all_numeric && numeric(c.params[p].second);
      distinct.emplace(to_string(c.params[p].second), 0);
    }
    if (distinct.size() < 2)
      continue;
    if (all_numeric) {
      double lo = HUGE_VAL, hi = -HUGE_VAL;
      for (const auto& c : configs) {
        lo = std::min(lo, as_double(c.params[p].second));
        hi = std::max(hi, as_double(c.params[p].second));
      }
      const bool logarithmic = lo > 0 && hi >= 4 * lo;
      auto transform = [&](double v) { return logarithmic ? std::log2(v) : v; };
      const double a = transform(lo), b = transform(hi);
      Eigen::VectorXd z(static_cast<Eigen::Index>(n));
      for (std::size_t i = 0; i < n; ++i)
        z[static_cast<Eigen::Index>(i)] =
            2 * (transform(as_double(configs[i].params[p].second)) - a) / (b - a) - 1;
      const std::string shown = logarithmic ? "log2(" + name + ")" : name;
      columns.push_back(z);
      out.names.push_back(shown);
      if (distinct.size() > 2) {
        squares.push_back(z.array().square().matrix());
        square_names.push_back(shown + "^2");
      }
      scaled.push_back(z);
      scaled_names.push_back(shown);
    } else {
      int column = 0;
      for (auto& [text, index] : distinct)
        index = column++;
      for (std::size_t v = 1; v < distinct.size(); ++v) {
        Eigen::VectorXd one_hot = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(n));
        for (std::size_t i = 0; i < n; ++i)
          if (distinct.at(to_string(configs[i].params[p].second)) == static_cast<int>(v))
            one_hot[static_cast<Eigen::Index>(i)] = 1;
        columns.push_back(one_hot);
        auto it = distinct.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(v));
        out.names.push_back(name + "=" + it->first);
      }
    }
  }
  out.linear = columns.size();
  columns.insert(columns.end(), squares.begin(), squares.end());
  out.names.insert(out.names.end(), square_names.begin(), square_names.end());
  for (std::size_t a = 0; a < scaled.size(); ++a)
    for (std::size_t b = a + 1; b < scaled.size(); ++b) {
      columns.push_back(scaled[a].cwiseProduct(scaled[b]));
      out.names.push_back(scaled_names[a] + "*" + scaled_names[b]);
    }
  out.x.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(columns.size()));
  for (std::size_t c = 0; c < columns.size(); ++c)
    out.x.col(static_cast<Eigen::Index>(c)) = columns[c];
  return out;
}

} // namespace rpl::stages
