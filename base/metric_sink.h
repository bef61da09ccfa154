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
#include <functional>
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

// An example observation of a histogram series (OpenMetrics exemplar): which I/O it was, its
// value, when. Served on the classic bucket it falls in (OpenMetrics text, protobuf Bucket) and,
// with a timestamp, on the native histogram (protobuf Histogram.exemplars); text 0.0.4 has none.
struct Exemplar {
  Labels labels;         // e.g. {{"command", "h-123456789"}}; names+values <= 128 UTF-8 chars
  double value = 0;      // the observed value (seconds)
  double timestamp = 0;  // unix seconds; 0 = none
};

// One exemplar on classic bucket `bucket` (an index into ClientMetric::Histogram::bucket).
struct BucketExemplar {
  size_t bucket = 0;
  Exemplar exemplar;
};

// What a series carries beside prometheus::ClientMetric, which has no place for it: native
// buckets, exemplars, a created timestamp. Shared and immutable parts are held by pointer, so the
// scraper's copy of a run's sink copies pointers, not buckets.
struct SeriesSide {
  std::shared_ptr<const NativeHistogram> native;
  // Ascending by bucket, at most one per bucket; nullptr or empty: none.
  std::shared_ptr<const std::vector<BucketExemplar>> exemplars;
  double created = 0;  // unix seconds (counters, histograms); 0 = none
  // Served in protobuf only, not as OpenMetrics' `_created`, which a Prometheus without
  // created-timestamp ingestion stores as a series of its own (2.x): set for every series of a
  // collector that knows when its counts began (CreatedForAll), not only where it matters.
  bool created_protobuf_only = false;
};

// The side data of families[family].metric[metric], or nullptr (none): what the writers take.
using SideLookup = std::function<const SeriesSide*(size_t family, size_t metric)>;

// A 64-bit hash of a label set, order-sensitive (collectors build a family's label sets in one
// fixed order).
std::uint64_t LabelHash(const Labels& labels);

// The longest exemplar label set OpenMetrics allows: names and values, in UTF-8 characters.
inline constexpr size_t kMaxExemplarLabelChars = 128;

class MetricSink {
 public:
  void Gauge(std::string_view name, std::string_view help, Labels labels, double value);
  void Counter(std::string_view name, std::string_view help, Labels labels, double value);
  // Buckets are cumulative counts for the given upper bounds (without +Inf; count is +Inf).
  void Histogram(std::string_view name, std::string_view help, Labels labels,
                 const std::vector<double>& upper_bounds,
                 const std::vector<std::uint64_t>& cumulative, std::uint64_t count, double sum,
                 std::shared_ptr<const NativeHistogram> native = nullptr);

  // Attaches exemplars to the series added last, which must be a histogram (else they are
  // dropped and counted as anomaly "exemplar_without_histogram"; after a histogram that was
  // itself dropped, e.g. a duplicate, they are dropped silently). Each goes on the first classic
  // bucket whose upper bound is >= its value (+Inf otherwise); at most one per bucket, the larger
  // value wins (also against exemplars attached before). Label values are sanitized as series'
  // are; an exemplar whose labels exceed kMaxExemplarLabelChars is dropped (anomaly
  // "exemplar_too_long"), one with a NaN or infinite value, a negative or non-finite timestamp
  // or an invalid label name too (anomaly "exemplar_invalid").
  void Exemplars(std::vector<Exemplar> exemplars);
  // Sets the created timestamp (unix seconds) of the series added last (counter or histogram;
  // ignored otherwise, and for a value that is not finite and positive).
  void Created(double unix_seconds);
  // The same for families()[family].metric[metric] (exporter/counter_resets.h), in every
  // exposition that has a place for it.
  void SetCreated(size_t family, size_t metric, double unix_seconds);
  // Sets `unix_seconds` as the created timestamp of every counter and histogram series added so
  // far that has none, in protobuf only: for a collector whose every count began at a known
  // time (the bpf collector's programs counting since they were loaded).
  void CreatedForAll(double unix_seconds);

  // The native buckets of families()[f].metric[m], or nullptr (not a histogram, or classic
  // only). Valid until the next change to the sink; families_ and side_ stay in step.
  const NativeHistogram* NativeOf(size_t family, size_t metric) const;
  // Everything families()[f].metric[m] carries beside the model, or nullptr (nothing, as an
  // empty SeriesSide says too). Valid until the next change to the sink.
  const SeriesSide* SideOf(size_t family, size_t metric) const;

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

  // Moves everything collected so far out, in insertion order (without the side data).
  std::vector<prometheus::MetricFamily> Take();
  // Everything collected so far, in insertion order; NativeOf and SideOf index it.
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

  // The series a Gauge, Counter or Histogram call asked for last, for Exemplars and Created:
  // its type (Untyped before any), and where it went (family kNone: skipped or dropped).
  static constexpr size_t kNone = static_cast<size_t>(-1);
  struct Last {
    prometheus::MetricType type = prometheus::MetricType::Untyped;
    size_t family = kNone;
    size_t metric = 0;
  };
  // Starts a Gauge, Counter or Histogram call: nothing added yet.
  void Asked(prometheus::MetricType type) { last_ = {type}; }
  // The side data of the series added last (the family's side list made as long as its series).
  SeriesSide& LastSide();
  // Sanitizes an exemplar's label values; false (counted as an anomaly) if it cannot be served.
  bool ExemplarOk(Exemplar* e);

  std::vector<prometheus::MetricFamily> families_;
  // side_[f][m] belongs to families_[f].metric[m]; side_[f] is empty while no series of the
  // family has side data (most families), else as long as its metric list.
  std::vector<std::vector<SeriesSide>> side_;
  Last last_;
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
