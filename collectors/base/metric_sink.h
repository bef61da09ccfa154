// MetricSink: collectors append samples by family name; families keep first-seen order.
// It is the one place series are built, so it is where untrusted input is made safe: every label
// value goes through SanitizeLabelValue (collectors/base/label_value.h), label names are checked,
// and values that cannot be served (NaN, -Inf; +Inf outside gauges) are skipped, not written.
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace nvmeof {

using Labels = std::vector<prometheus::ClientMetric::Label>;

// A state's kernel spelling and its label value (the same unless the kernel's has spaces).
struct StateName {
  std::string_view kernel;
  std::string_view label;
};

class MetricSink {
 public:
  void Gauge(std::string_view name, std::string_view help, Labels labels, double value);
  void Counter(std::string_view name, std::string_view help, Labels labels, double value);
  // Buckets are cumulative counts for the given upper bounds (without +Inf; count is +Inf).
  void Histogram(std::string_view name, std::string_view help, Labels labels,
                 const std::vector<double>& upper_bounds,
                 const std::vector<std::uint64_t>& cumulative, std::uint64_t count, double sum);

  // A state as one-hot gauges: one series per entry of `states` (label "state"), 1 for the one
  // whose kernel spelling is `current`. Unreadable (nullopt) is a skipped series; so is a state
  // not listed, unless unknown_all_zero, which serves every listed state as 0.
  void OneHot(std::string_view name, std::string_view help, const Labels& base,
              std::span<const StateName> states, const std::optional<std::string>& current,
              bool unknown_all_zero = false);

  // A series the collector could not produce (unreadable file, "N/A (no PMA)", odd value).
  // Counted into nvmeof_exporter_collector_skipped_series instead of emitting a false 0.
  void Skip(size_t n = 1) { skipped_ += n; }
  size_t skipped() const { return skipped_; }
  // Label values SanitizeLabelValue changed (invalid UTF-8, controls, over-long); counted into
  // nvmeof_exporter_label_values_sanitized_total. Each distinct metric/label pair is logged once
  // per process at debug level.
  size_t sanitized() const { return sanitized_; }

  // Moves everything collected so far out, in insertion order.
  std::vector<prometheus::MetricFamily> Take();
  void Append(MetricSink&& other);
  bool Empty() const { return families_.empty(); }
  // Lookup for tests: the family by name, or nullptr.
  const prometheus::MetricFamily* Find(std::string_view name) const;

 private:
  // The new series, or nullptr when it was skipped (an invalid label name).
  prometheus::ClientMetric* Add(std::string_view name, std::string_view help,
                                prometheus::MetricType type, Labels labels);

  std::vector<prometheus::MetricFamily> families_;
  std::unordered_map<std::string, size_t> index_;
  size_t skipped_ = 0;
  size_t sanitized_ = 0;
};

}  // namespace nvmeof
