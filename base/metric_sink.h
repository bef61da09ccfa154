// MetricSink: collectors append samples by family name; families keep first-seen order.
// It is the one place series are built, so it is where untrusted input is made safe: every label
// value goes through SanitizeLabelValue (base/label_value.h), label names are checked,
// and values that cannot be served (NaN, -Inf; +Inf outside gauges) are skipped, not written.
// Every family's label sets are checked, and a second series with the same name and labels is
// dropped, counted as skipped and as anomaly "duplicate_series": a scrape with one is rejected
// whole by Prometheus. Sanitizing can make two distinct raw values equal (a netdev name with and
// without a control character), and a kernel can show one object in two places (a namespace
// under its subsystem and its controller), so "unique by construction" does not hold.
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace nvmeof {

using Labels = std::vector<prometheus::ClientMetric::Label>;

// A state's kernel spelling and its label value (the same unless the kernel's has spaces).
struct StateName {
  std::string_view kernel;
  std::string_view label;
};

// The native (sparse, exponential) buckets of one histogram series, as the protobuf exposition
// carries them (io.prometheus.client.Histogram fields 5-13). prometheus::ClientMetric has no
// place for them, so MetricSink keeps them beside it (see NativeOf). Only protobuf scrapes
// serve them; the text format serves the classic buckets of the same series.
struct NativeHistogram {
  struct Span {
    std::int32_t offset;  // gap to the previous span's end; the first span's start index
    std::uint32_t length;
  };
  std::int32_t schema = 3;
  double zero_threshold = 0;
  std::uint64_t zero_count = 0;
  std::vector<Span> positive_span;
  std::vector<std::int64_t> positive_delta;  // each count minus the previous one (first: itself)
  // Protobuf scrapes also carry the series' classic buckets ("both"; Prometheus'
  // scrape_classic_histograms). Otherwise they carry count, sum and the native buckets only.
  bool with_classic = false;
};

// Native buckets from absolute counts of consecutive buckets starting at index `first`:
// empty buckets split spans (a gap of 1 or 2 empty buckets costs less as zero deltas in one
// span than as a new span, so gaps up to 2 stay inside the span, as client_golang does).
// An empty histogram gets one span of length 0, which marks it native for Prometheus.
void SetNativeBuckets(NativeHistogram* h, std::int32_t first, const std::uint64_t* counts,
                      size_t n);

class MetricSink {
 public:
  void Gauge(std::string_view name, std::string_view help, Labels labels, double value);
  void Counter(std::string_view name, std::string_view help, Labels labels, double value);
  // Buckets are cumulative counts for the given upper bounds (without +Inf; count is +Inf).
  void Histogram(std::string_view name, std::string_view help, Labels labels,
                 const std::vector<double>& upper_bounds,
                 const std::vector<std::uint64_t>& cumulative, std::uint64_t count, double sum,
                 std::shared_ptr<const NativeHistogram> native = nullptr);

  // The native buckets of families()[f].metric[m], or nullptr (not a histogram, or classic
  // only). Valid until the next change to the sink; families_ and native_ stay in step.
  const NativeHistogram* NativeOf(size_t family, size_t metric) const;

  // A state as one-hot gauges: one series per entry of `states` (label "state"), 1 for the one
  // whose kernel spelling is `current`. Unreadable (nullopt) is a skipped series; so is a state
  // not listed, unless unknown_all_zero, which serves every listed state as 0 and counts anomaly
  // "unknown_state" (a one-hot that sums to 0 is never silent).
  void OneHot(std::string_view name, std::string_view help, const Labels& base,
              std::span<const StateName> states, const std::optional<std::string>& current,
              bool unknown_all_zero = false);

  // A series the collector could not produce (unreadable file, "N/A (no PMA)", odd value).
  // Counted into nvmeof_exporter_collector_skipped_series instead of emitting a false 0.
  void Skip(size_t n = 1) { skipped_ += n; }
  size_t skipped() const { return skipped_; }
  // Something odd in the source that the series served do not show by themselves (a state whose
  // number and name disagree, a duplicate series dropped), by reason; served as
  // nvmeof_exporter_collector_anomalies{reason}. Reasons are the exporter's constants.
  void Anomaly(std::string_view reason, size_t n = 1);
  const std::map<std::string, size_t, std::less<>>& anomalies() const { return anomalies_; }
  // Why Collect returned false, for the scraper's warning (e.g. "/proc/net/snmp: No such file
  // or directory"). The first reason given wins: it is usually the cause of the rest. False, for
  // `return out.Fail(...)` from Collect.
  bool Fail(std::string reason) {
    if (failure_.empty()) failure_ = std::move(reason);
    return false;
  }
  const std::string& failure() const { return failure_; }
  // Label values SanitizeLabelValue changed (invalid UTF-8, controls, over-long); counted into
  // nvmeof_exporter_label_values_sanitized_total. Each distinct metric/label pair is logged once
  // per process at debug level.
  size_t sanitized() const { return sanitized_; }

  // Moves everything collected so far out, in insertion order (without native buckets).
  std::vector<prometheus::MetricFamily> Take();
  // Everything collected so far, in insertion order; NativeOf indexes it.
  const std::vector<prometheus::MetricFamily>& families() const { return families_; }
  // Moves `other`'s series in; a series already here is dropped. Returns how many were
  // dropped (counted here as skipped and as anomaly "duplicate_series").
  size_t Append(MetricSink&& other);
  bool Empty() const { return families_.empty(); }
  // Lookup for tests: the family by name, or nullptr.
  const prometheus::MetricFamily* Find(std::string_view name) const;

 private:
  // The new series, or nullptr when it was skipped (an invalid label name).
  prometheus::ClientMetric* Add(std::string_view name, std::string_view help,
                                prometheus::MetricType type, Labels labels);

  std::vector<prometheus::MetricFamily> families_;
  // native_[f][m] belongs to families_[f].metric[m]; native_[f] is empty while the family has
  // no native histogram (most families), else as long as its metric list. Shared and
  // immutable, so the scraper's copy of a run's sink copies pointers, not buckets.
  std::vector<std::vector<std::shared_ptr<const NativeHistogram>>> native_;
  std::unordered_map<std::string, size_t> index_;
  // seen_[f]: a 64-bit hash of each label set of families_[f]. A hash seen before is checked
  // against the family's series (rare: only real duplicates and hash collisions get there), so
  // the check costs a hash and a set insert per series, not a string key.
  std::vector<std::unordered_set<std::uint64_t>> seen_;
  // Records `labels` in families_[f]; false when the family holds that label set already.
  bool Unique(size_t f, const Labels& labels);
  void Duplicate(std::string_view name);
  size_t skipped_ = 0;
  size_t sanitized_ = 0;
  std::map<std::string, size_t, std::less<>> anomalies_;
  std::string failure_;
};

}  // namespace nvmeof
