#include "collectors/base/metric_sink.h"

#include <cmath>
#include <limits>
#include <mutex>
#include <unordered_set>

#include "collectors/base/label_value.h"
#include "collectors/base/log.h"

namespace nvmeof {
namespace {

// At most one log line per distinct source per process; sources are metric/label name pairs,
// a bounded set, but cap it anyway.
bool FirstTime(const std::string& source) {
  static std::mutex mu;
  static std::unordered_set<std::string> seen;
  std::lock_guard lock(mu);
  if (seen.size() >= 4096) return false;
  return seen.insert(source).second;
}

// Gauges may be +Inf where a collector documents it (e.g. a timeout that is "off"); no other
// non-finite value has a meaning to serve.
bool Servable(double value, prometheus::MetricType type) {
  if (std::isnan(value) || value == -std::numeric_limits<double>::infinity()) return false;
  return std::isfinite(value) || type == prometheus::MetricType::Gauge;
}

}  // namespace

prometheus::ClientMetric* MetricSink::Add(std::string_view name, std::string_view help,
                                          prometheus::MetricType type, Labels labels) {
  for (auto& label : labels) {
    if (!IsValidLabelName(label.name)) {  // names are the exporter's constants: a bug
      if (FirstTime(std::string(name) + "{" + label.name + "}!")) {
        LogError("invalid label name, series skipped",
                 Kv("metric", name) + " " + Kv("label", label.name));
      }
      ++skipped_;
      return nullptr;
    }
    if (SanitizeLabelValue(&label.value)) {
      ++sanitized_;
      if (LogEnabled(LogLevel::kDebug)) {
        const std::string source = std::string(name) + "{" + label.name + "}";
        if (FirstTime(source)) {
          LogDebug("label value sanitized (invalid UTF-8, control characters or too long)",
                   Kv("source", source) + " " + Kv("value", label.value));
        }
      }
    }
  }
  auto [it, inserted] = index_.try_emplace(std::string(name), families_.size());
  if (inserted) {
    families_.push_back({std::string(name), std::string(help), type, {}});
  }
  auto& family = families_[it->second];
  family.metric.emplace_back();
  family.metric.back().label = std::move(labels);
  return &family.metric.back();
}

void MetricSink::Gauge(std::string_view name, std::string_view help, Labels labels, double value) {
  if (!Servable(value, prometheus::MetricType::Gauge)) return Skip();
  if (auto* m = Add(name, help, prometheus::MetricType::Gauge, std::move(labels))) {
    m->gauge.value = value;
  }
}

void MetricSink::Counter(std::string_view name, std::string_view help, Labels labels,
                         double value) {
  if (!Servable(value, prometheus::MetricType::Counter)) return Skip();
  if (auto* m = Add(name, help, prometheus::MetricType::Counter, std::move(labels))) {
    m->counter.value = value;
  }
}

void MetricSink::Histogram(std::string_view name, std::string_view help, Labels labels,
                           const std::vector<double>& upper_bounds,
                           const std::vector<std::uint64_t>& cumulative, std::uint64_t count,
                           double sum) {
  if (!Servable(sum, prometheus::MetricType::Histogram)) return Skip();
  auto* m = Add(name, help, prometheus::MetricType::Histogram, std::move(labels));
  if (!m) return;
  auto& h = m->histogram;
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
  sanitized_ += other.sanitized_;
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

void MetricSink::OneHot(std::string_view name, std::string_view help, const Labels& base,
                        std::span<const StateName> states,
                        const std::optional<std::string>& current, bool unknown_all_zero) {
  const StateName* found = nullptr;
  for (const auto& s : states) {
    if (current && *current == s.kernel) found = &s;
  }
  if (!current || (!found && !unknown_all_zero)) {
    Skip();
    return;
  }
  for (const auto& s : states) {
    Labels labels = base;
    labels.push_back({"state", std::string(s.label)});
    Gauge(name, help, std::move(labels), &s == found ? 1 : 0);
  }
}

}  // namespace nvmeof
