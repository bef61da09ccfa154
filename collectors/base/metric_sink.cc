#include "collectors/base/metric_sink.h"

#include <limits>

namespace nvmeof {

prometheus::ClientMetric& MetricSink::Add(std::string_view name, std::string_view help,
                                          prometheus::MetricType type, Labels labels) {
  auto [it, inserted] = index_.try_emplace(std::string(name), families_.size());
  if (inserted) {
    families_.push_back({std::string(name), std::string(help), type, {}});
  }
  auto& family = families_[it->second];
  family.metric.emplace_back();
  family.metric.back().label = std::move(labels);
  return family.metric.back();
}

void MetricSink::Gauge(std::string_view name, std::string_view help, Labels labels, double value) {
  Add(name, help, prometheus::MetricType::Gauge, std::move(labels)).gauge.value = value;
}

void MetricSink::Counter(std::string_view name, std::string_view help, Labels labels,
                         double value) {
  Add(name, help, prometheus::MetricType::Counter, std::move(labels)).counter.value = value;
}

void MetricSink::Histogram(std::string_view name, std::string_view help, Labels labels,
                           const std::vector<double>& upper_bounds,
                           const std::vector<std::uint64_t>& cumulative, std::uint64_t count,
                           double sum) {
  auto& h = Add(name, help, prometheus::MetricType::Histogram, std::move(labels)).histogram;
  h.sample_count = count;
  h.sample_sum = sum;
  h.bucket.reserve(upper_bounds.size() + 1);
  for (size_t i = 0; i < upper_bounds.size() && i < cumulative.size(); ++i) {
    h.bucket.push_back({cumulative[i], upper_bounds[i]});
  }
  h.bucket.push_back({count, std::numeric_limits<double>::infinity()});
}

std::vector<prometheus::MetricFamily> MetricSink::Take() {
  index_.clear();
  return std::move(families_);
}

void MetricSink::Append(MetricSink&& other) {
  skipped_ += other.skipped_;
  for (auto& family : other.Take()) {
    auto [it, inserted] = index_.try_emplace(family.name, families_.size());
    if (inserted) {
      families_.push_back(std::move(family));
    } else {
      auto& dst = families_[it->second].metric;
      for (auto& m : family.metric) dst.push_back(std::move(m));
    }
  }
}

const prometheus::MetricFamily* MetricSink::Find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &families_[it->second];
}

}  // namespace nvmeof
