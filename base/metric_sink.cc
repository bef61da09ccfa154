#include "base/metric_sink.h"

#include <algorithm>
#include <cmath>
#include <functional>
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

bool SameLabels(const Labels& a, const Labels& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].value != b[i].value) return false;
  }
  return true;
}

// Gauges may be +Inf where a collector documents it (e.g. a timeout that is "off"); no other
// non-finite value has a meaning to serve.
bool Servable(double value, prometheus::MetricType type) {
  if (std::isnan(value) || value == -std::numeric_limits<double>::infinity()) return false;
  return std::isfinite(value) || type == prometheus::MetricType::Gauge;
}

// A created timestamp belongs on a counter or histogram, and is a time (finite, after 1970).
bool CreatedFits(prometheus::MetricType type, double unix_seconds) {
  return std::isfinite(unix_seconds) && unix_seconds > 0 &&
         (type == prometheus::MetricType::Counter || type == prometheus::MetricType::Histogram);
}

// UTF-8 characters (code points) in a valid UTF-8 string: the bytes that start one.
size_t Utf8Chars(std::string_view s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

// Order-sensitive: collectors build a family's label sets in one fixed order.
std::uint64_t LabelHash(const Labels& labels) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  auto mix = [&h](std::string_view s) {
    h ^= std::hash<std::string_view>{}(s) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  };
  for (const auto& l : labels) {
    mix(l.name);
    mix(l.value);
  }
  return h;
}

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
    side_.emplace_back();
    seen_.emplace_back();
  }
  if (!Unique(it->second, labels)) {
    Duplicate(name);
    return nullptr;
  }
  auto& family = families_[it->second];
  if (!side_[it->second].empty()) side_[it->second].emplace_back();
  family.metric.emplace_back();
  family.metric.back().label = std::move(labels);
  last_.family = it->second;
  last_.metric = family.metric.size() - 1;
  return &family.metric.back();
}

void MetricSink::Gauge(std::string_view name, std::string_view help, Labels labels, double value) {
  Asked(prometheus::MetricType::Gauge);
  if (!Servable(value, prometheus::MetricType::Gauge)) return Skip();
  if (auto* m = Add(name, help, prometheus::MetricType::Gauge, std::move(labels))) {
    m->gauge.value = value;
  }
}

void MetricSink::Counter(std::string_view name, std::string_view help, Labels labels,
                         double value) {
  Asked(prometheus::MetricType::Counter);
  if (!Servable(value, prometheus::MetricType::Counter)) return Skip();
  if (auto* m = Add(name, help, prometheus::MetricType::Counter, std::move(labels))) {
    m->counter.value = value;
  }
}

void MetricSink::Histogram(std::string_view name, std::string_view help, Labels labels,
                           const std::vector<double>& upper_bounds,
                           const std::vector<std::uint64_t>& cumulative, std::uint64_t count,
                           double sum, std::shared_ptr<const NativeHistogram> native) {
  Asked(prometheus::MetricType::Histogram);
  if (!Servable(sum, prometheus::MetricType::Histogram)) return Skip();
  auto* m = Add(name, help, prometheus::MetricType::Histogram, std::move(labels));
  if (!m) return;
  if (native) LastSide().native = std::move(native);
  auto& h = m->histogram;
  h.sample_count = count;
  h.sample_sum = sum;
  h.bucket.reserve(upper_bounds.size() + 1);
  for (size_t i = 0; i < upper_bounds.size() && i < cumulative.size(); ++i) {
    h.bucket.push_back({cumulative[i], upper_bounds[i]});
  }
  h.bucket.push_back({count, std::numeric_limits<double>::infinity()});
}

void MetricSink::Exemplars(std::vector<Exemplar> exemplars) {
  if (exemplars.empty()) return;
  if (last_.type != prometheus::MetricType::Histogram) {
    Anomaly("exemplar_without_histogram", exemplars.size());
    return;
  }
  if (last_.family == kNone) return;  // the histogram was skipped or dropped: counted there
  const auto& buckets = families_[last_.family].metric[last_.metric].histogram.bucket;
  const SeriesSide* before = SideOf(last_.family, last_.metric);
  std::vector<BucketExemplar> merged;
  if (before && before->exemplars) merged = *before->exemplars;
  for (auto& e : exemplars) {
    if (!ExemplarOk(&e)) continue;
    size_t b = 0;  // the first bucket whose bound is >= the value; the last is +Inf
    while (b + 1 < buckets.size() && !(buckets[b].upper_bound >= e.value)) ++b;
    auto it = std::lower_bound(merged.begin(), merged.end(), b,
                               [](const BucketExemplar& x, size_t v) { return x.bucket < v; });
    if (it == merged.end() || it->bucket != b) {
      merged.insert(it, {b, std::move(e)});
    } else if (e.value > it->exemplar.value) {
      it->exemplar = std::move(e);
    }
  }
  if (merged.empty()) return;
  LastSide().exemplars = std::make_shared<const std::vector<BucketExemplar>>(std::move(merged));
}

bool MetricSink::ExemplarOk(Exemplar* e) {
  bool ok = std::isfinite(e->value) && std::isfinite(e->timestamp) && e->timestamp >= 0;
  size_t chars = 0;
  for (size_t i = 0; i < e->labels.size(); ++i) {
    auto& label = e->labels[i];
    ok = ok && IsValidLabelName(label.name);
    for (size_t j = 0; j < i; ++j) ok = ok && e->labels[j].name != label.name;
    if (SanitizeLabelValue(&label.value)) ++sanitized_;
    chars += Utf8Chars(label.name) + Utf8Chars(label.value);
  }
  if (!ok) {
    Anomaly("exemplar_invalid");
    return false;
  }
  if (chars > kMaxExemplarLabelChars) {
    Anomaly("exemplar_too_long");
    return false;
  }
  return true;
}

void MetricSink::Created(double unix_seconds) {
  if (last_.family == kNone || !CreatedFits(last_.type, unix_seconds)) return;
  LastSide().created = unix_seconds;
}

void MetricSink::SetCreated(size_t family, size_t metric, double unix_seconds) {
  if (family >= families_.size() || metric >= families_[family].metric.size() ||
      !CreatedFits(families_[family].type, unix_seconds)) {
    return;
  }
  auto& side = side_[family];
  side.resize(families_[family].metric.size());
  side[metric].created = unix_seconds;
  side[metric].created_protobuf_only = false;
}

void MetricSink::CreatedForAll(double unix_seconds) {
  for (size_t f = 0; f < families_.size(); ++f) {
    if (!CreatedFits(families_[f].type, unix_seconds)) continue;
    auto& side = side_[f];
    side.resize(families_[f].metric.size());
    for (auto& s : side) {
      if (s.created != 0) continue;
      s.created = unix_seconds;
      s.created_protobuf_only = true;
    }
  }
}

bool MetricSink::Unique(size_t f, const Labels& labels) {
  if (seen_[f].insert(LabelHash(labels)).second) return true;
  for (const auto& m : families_[f].metric) {
    if (SameLabels(m.label, labels)) return false;
  }
  return true;  // a hash collision of two distinct label sets: both are served
}

void MetricSink::Duplicate(std::string_view name) {
  ++skipped_;
  Anomaly("duplicate_series");
  // Once per family per process: a duplicate comes from the source's layout or a collector
  // bug, and it repeats on every scrape.
  if (FirstTime(std::string(name) + "{}!dup")) {
    LogWarn("duplicate series (same name and labels) dropped; the first one is served",
            Kv("metric", name));
  }
}

void MetricSink::Anomaly(std::string_view reason, size_t n) {
  auto it = anomalies_.find(reason);
  if (it == anomalies_.end()) it = anomalies_.emplace(std::string(reason), 0).first;
  it->second += n;
}

std::vector<prometheus::MetricFamily> MetricSink::Take() {
  index_.clear();
  side_.clear();
  seen_.clear();
  last_ = {};
  return std::move(families_);
}

const SeriesSide* MetricSink::SideOf(size_t family, size_t metric) const {
  if (family >= side_.size() || metric >= side_[family].size()) return nullptr;
  return &side_[family][metric];
}

const NativeHistogram* MetricSink::NativeOf(size_t family, size_t metric) const {
  const SeriesSide* side = SideOf(family, metric);
  return side ? side->native.get() : nullptr;
}

SeriesSide& MetricSink::LastSide() {
  auto& side = side_[last_.family];
  side.resize(families_[last_.family].metric.size());
  return side[last_.metric];
}

size_t MetricSink::Append(MetricSink&& other) {
  skipped_ += other.skipped_;
  sanitized_ += other.sanitized_;
  for (const auto& [reason, n] : other.anomalies_) Anomaly(reason, n);
  auto sides = std::move(other.side_);
  auto seen = std::move(other.seen_);
  auto families = other.Take();
  last_ = {};
  size_t dropped = 0;
  for (size_t f = 0; f < families.size(); ++f) {
    auto& family = families[f];
    auto& side = sides[f];
    auto [it, inserted] = index_.try_emplace(family.name, families_.size());
    if (inserted) {
      families_.push_back(std::move(family));
      side_.push_back(std::move(side));
      seen_.push_back(std::move(seen[f]));
      continue;
    }
    // The same family from two sinks (two collectors, or the scraper's own series): the label
    // sets of both halves are checked against each other.
    const size_t d = it->second;
    auto& dst = families_[d].metric;
    auto& dst_side = side_[d];
    const bool side_any = !side.empty() || !dst_side.empty();
    if (side_any) {
      dst_side.resize(dst.size());
      side.resize(family.metric.size());
    }
    for (size_t m = 0; m < family.metric.size(); ++m) {
      if (!Unique(d, family.metric[m].label)) {
        Duplicate(family.name);
        ++dropped;
        continue;
      }
      dst.push_back(std::move(family.metric[m]));
      if (side_any) dst_side.push_back(std::move(side[m]));
    }
  }
  return dropped;
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
  if (!found) Anomaly("unknown_state");
  for (const auto& s : states) {
    Labels labels = base;
    labels.push_back({"state", std::string(s.label)});
    Gauge(name, help, std::move(labels), &s == found ? 1 : 0);
  }
}

}  // namespace nvmeof
