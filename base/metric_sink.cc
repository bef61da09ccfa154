#include "base/metric_sink.h"

#include <cmath>
#include <limits>
#include <mutex>
#include <unordered_set>

#include "base/label_value.h"
#include "base/log.h"

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

std::string LabelKey(const Labels& labels) {
  std::string key;
  for (const auto& l : labels) {
    key += l.name;
    key += '\xff';  // never in a sanitized value (valid UTF-8) nor in a label name
    key += l.value;
    key += '\xff';
  }
  return key;
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
  bool sanitized = false;
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
      sanitized = true;
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
    native_.emplace_back();
    seen_.emplace_back();
  }
  if (!Unique(it->second, labels, sanitized)) {
    if (FirstTime(std::string(name) + "{}!dup")) {
      LogDebug("duplicate series after label sanitizing, skipped", Kv("metric", name));
    }
    ++skipped_;
    return nullptr;
  }
  auto& family = families_[it->second];
  if (!native_[it->second].empty()) native_[it->second].emplace_back();
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
                           double sum, std::shared_ptr<const NativeHistogram> native) {
  if (!Servable(sum, prometheus::MetricType::Histogram)) return Skip();
  auto* m = Add(name, help, prometheus::MetricType::Histogram, std::move(labels));
  if (!m) return;
  if (native) {
    const size_t f = index_.at(std::string(name));
    auto& side = native_[f];
    side.resize(families_[f].metric.size());
    side.back() = std::move(native);
  }
  auto& h = m->histogram;
  h.sample_count = count;
  h.sample_sum = sum;
  h.bucket.reserve(upper_bounds.size() + 1);
  for (size_t i = 0; i < upper_bounds.size() && i < cumulative.size(); ++i) {
    h.bucket.push_back({cumulative[i], upper_bounds[i]});
  }
  h.bucket.push_back({count, std::numeric_limits<double>::infinity()});
}

bool MetricSink::Unique(size_t f, const Labels& labels, bool sanitized) {
  auto& seen = seen_[f];
  if (!seen) {
    if (!sanitized) return true;
    seen.emplace();
    for (const auto& m : families_[f].metric) seen->insert(LabelKey(m.label));
  }
  return seen->insert(LabelKey(labels)).second;
}

std::vector<prometheus::MetricFamily> MetricSink::Take() {
  index_.clear();
  native_.clear();
  seen_.clear();
  return std::move(families_);
}

const NativeHistogram* MetricSink::NativeOf(size_t family, size_t metric) const {
  if (family >= native_.size() || metric >= native_[family].size()) return nullptr;
  return native_[family][metric].get();
}

void MetricSink::Append(MetricSink&& other) {
  skipped_ += other.skipped_;
  sanitized_ += other.sanitized_;
  auto native = std::move(other.native_);
  auto seen = std::move(other.seen_);
  auto families = other.Take();
  for (size_t f = 0; f < families.size(); ++f) {
    auto& family = families[f];
    auto& side = native[f];
    auto [it, inserted] = index_.try_emplace(family.name, families_.size());
    if (inserted) {
      families_.push_back(std::move(family));
      native_.push_back(std::move(side));
      seen_.push_back(std::move(seen[f]));
      continue;
    }
    const size_t d = it->second;
    auto& dst = families_[d].metric;
    auto& dst_side = native_[d];
    const bool native_any = !side.empty() || !dst_side.empty();
    if (native_any) {
      dst_side.resize(dst.size());
      side.resize(family.metric.size());
    }
    // Either half holding a sanitized value makes the merged family's label sets checked.
    const bool check = seen[f].has_value() || seen_[d].has_value();
    for (size_t m = 0; m < family.metric.size(); ++m) {
      if (check && !Unique(d, family.metric[m].label, true)) {
        ++skipped_;
        continue;
      }
      dst.push_back(std::move(family.metric[m]));
      if (native_any) dst_side.push_back(std::move(side[m]));
    }
  }
}

void SetNativeBuckets(NativeHistogram* h, std::int32_t first, const std::uint64_t* counts,
                      size_t n) {
  h->positive_span.clear();
  h->positive_delta.clear();
  std::int64_t previous = 0;
  std::int32_t next_index = 0;  // index just past the last span
  size_t i = 0;
  while (i < n) {
    if (counts[i] == 0) {
      ++i;
      continue;
    }
    // A new span starts at i; it ends where a gap of 3 or more empty buckets begins.
    size_t end = i + 1;
    while (end < n) {
      if (counts[end] != 0) {
        ++end;
        continue;
      }
      size_t gap = end;
      while (gap < n && counts[gap] == 0) ++gap;
      if (gap == n || gap - end > 2) break;
      end = gap;
    }
    const std::int32_t start = first + static_cast<std::int32_t>(i);
    h->positive_span.push_back({h->positive_span.empty() ? start : start - next_index,
                                static_cast<std::uint32_t>(end - i)});
    for (size_t k = i; k < end; ++k) {
      const auto c = static_cast<std::int64_t>(counts[k]);
      h->positive_delta.push_back(c - previous);
      previous = c;
    }
    next_index = first + static_cast<std::int32_t>(end);
    i = end;
  }
  if (h->positive_span.empty()) h->positive_span.push_back({0, 0});
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
