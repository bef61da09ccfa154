#include "exporter/protobuf_exposition.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "io/prometheus/client/metrics.pb.h"

namespace nvmeof {
namespace {

namespace pb = io::prometheus::client;
using prometheus::MetricType;

// Wire types (protobuf encoding): the field numbers come from the generated classes.
enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2 };

// Writes protobuf wire format straight into one string: no message objects, no per-series
// allocation. The string is grown ahead (doubling) and written through a pointer, then cut to
// length by Finish(). A nested message gets a one-byte length placeholder that End() widens
// (moving the body) in the rare case it is 128 bytes or more, so the output is the canonical
// encoding, byte for byte what libprotobuf writes for the same messages
// (tests/unit/exposition_test.cc, tests/fuzz/writers_fuzz.cc).
class Encoder {
 public:
  explicit Encoder(std::string* out) : out_(out), len_(out->size()) {}
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;
  void Finish() { out_->resize(len_); }

  void Uint(std::uint32_t field, std::uint64_t v) {
    Need(20);
    Put(field << 3 | kVarint);
    Put(v);
  }
  // int32/int64/enum: negative values as ten-byte two's complement, as protobuf does.
  void Int(std::uint32_t field, std::int64_t v) { Uint(field, static_cast<std::uint64_t>(v)); }
  void Sint32(std::uint32_t field, std::int32_t v) {
    Uint(field, (static_cast<std::uint32_t>(v) << 1) ^ static_cast<std::uint32_t>(v >> 31));
  }
  void Sint64(std::uint32_t field, std::int64_t v) {
    Uint(field, (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
  }
  void Double(std::uint32_t field, double v) {
    Need(18);
    Put(field << 3 | kFixed64);
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    for (int i = 0; i < 8; ++i) buf_[len_++] = static_cast<char>(bits >> (8 * i));  // LE
  }
  void String(std::uint32_t field, std::string_view s) {
    Need(20 + s.size());
    Put(field << 3 | kLen);
    Put(s.size());
    std::memcpy(buf_ + len_, s.data(), s.size());
    len_ += s.size();
  }
  // A nested message: returns where its body starts, for End().
  size_t Begin(std::uint32_t field) {
    Need(11);
    Put(field << 3 | kLen);
    return Placeholder();
  }
  // A top-level delimited message (no tag): the same.
  size_t Placeholder() {
    Need(1);
    buf_[len_++] = 0;
    return len_;
  }
  void End(size_t body) {
    const size_t len = len_ - body;
    if (len < 0x80) {
      buf_[body - 1] = static_cast<char>(len);
      return;
    }
    size_t n = 1;
    for (size_t v = len; v >= 0x80; v >>= 7) ++n;
    Need(n - 1);
    std::memmove(buf_ + body + n - 1, buf_ + body, len);
    len_ += n - 1;
    const size_t saved = len_;
    len_ = body - 1;
    Put(len);
    len_ = saved;
  }

 private:
  // Room for n more bytes.
  void Need(size_t n) {
    if (len_ + n <= cap_) return;
    cap_ = std::max({len_ + n, 2 * out_->size() + 4096, out_->capacity()});
    out_->resize(cap_);
    buf_ = out_->data();
  }
  void Put(std::uint64_t v) {  // a varint; room already made
    while (v >= 0x80) {
      buf_[len_++] = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    buf_[len_++] = static_cast<char>(v);
  }

  std::string* out_;
  size_t len_;      // bytes written
  size_t cap_ = 0;  // bytes out_ holds (forces the first Need to size it)
  char* buf_ = nullptr;
};

pb::MetricType TypeOf(MetricType t) {
  switch (t) {
    case MetricType::Counter:
      return pb::COUNTER;
    case MetricType::Gauge:
      return pb::GAUGE;
    case MetricType::Summary:
      return pb::SUMMARY;
    case MetricType::Histogram:
      return pb::HISTOGRAM;
    default:
      return pb::UNTYPED;
  }
}

// io.prometheus.client.Histogram. Native histograms carry schema, zero bucket, spans and
// deltas, and their classic buckets only if with_classic; the others their classic buckets.
void WriteHistogram(const prometheus::ClientMetric::Histogram& in, const NativeHistogram* native,
                    Encoder* e) {
  using H = pb::Histogram;
  e->Uint(H::kSampleCountFieldNumber, in.sample_count);
  e->Double(H::kSampleSumFieldNumber, in.sample_sum);
  if (!native || native->with_classic) {
    for (const auto& b : in.bucket) {
      if (std::isinf(b.upper_bound)) continue;  // +Inf is optional: sample_count
      const size_t bucket = e->Begin(H::kBucketFieldNumber);
      e->Uint(pb::Bucket::kCumulativeCountFieldNumber, b.cumulative_count);
      e->Double(pb::Bucket::kUpperBoundFieldNumber, b.upper_bound);
      e->End(bucket);
    }
  }
  if (!native) return;
  e->Sint32(H::kSchemaFieldNumber, native->schema);
  e->Double(H::kZeroThresholdFieldNumber, native->zero_threshold);
  e->Uint(H::kZeroCountFieldNumber, native->zero_count);
  for (const auto& s : native->positive_span) {
    const size_t span = e->Begin(H::kPositiveSpanFieldNumber);
    e->Sint32(pb::BucketSpan::kOffsetFieldNumber, s.offset);
    e->Uint(pb::BucketSpan::kLengthFieldNumber, s.length);
    e->End(span);
  }
  for (auto d : native->positive_delta) e->Sint64(H::kPositiveDeltaFieldNumber, d);
}

// io.prometheus.client.Metric; fields in field-number order, as libprotobuf writes them.
void WriteMetric(MetricType type, const prometheus::ClientMetric& m, const NativeHistogram* native,
                 Encoder* e) {
  using M = pb::Metric;
  for (const auto& l : m.label) {
    const size_t pair = e->Begin(M::kLabelFieldNumber);
    e->String(pb::LabelPair::kNameFieldNumber, l.name);
    e->String(pb::LabelPair::kValueFieldNumber, l.value);
    e->End(pair);
  }
  size_t body;
  switch (type) {
    case MetricType::Counter:
      body = e->Begin(M::kCounterFieldNumber);
      e->Double(pb::Counter::kValueFieldNumber, m.counter.value);
      e->End(body);
      break;
    case MetricType::Gauge:
      body = e->Begin(M::kGaugeFieldNumber);
      e->Double(pb::Gauge::kValueFieldNumber, m.gauge.value);
      e->End(body);
      break;
    case MetricType::Summary:
      body = e->Begin(M::kSummaryFieldNumber);
      e->Uint(pb::Summary::kSampleCountFieldNumber, m.summary.sample_count);
      e->Double(pb::Summary::kSampleSumFieldNumber, m.summary.sample_sum);
      for (const auto& q : m.summary.quantile) {
        const size_t quantile = e->Begin(pb::Summary::kQuantileFieldNumber);
        e->Double(pb::Quantile::kQuantileFieldNumber, q.quantile);
        e->Double(pb::Quantile::kValueFieldNumber, q.value);
        e->End(quantile);
      }
      e->End(body);
      break;
    case MetricType::Histogram:
      break;  // field 7, after timestamp_ms (6)
    default:
      body = e->Begin(M::kUntypedFieldNumber);
      e->Double(pb::Untyped::kValueFieldNumber, m.untyped.value);
      e->End(body);
      break;
  }
  if (m.timestamp_ms != 0) e->Int(M::kTimestampMsFieldNumber, m.timestamp_ms);
  if (type == MetricType::Histogram) {
    body = e->Begin(M::kHistogramFieldNumber);
    WriteHistogram(m.histogram, native, e);
    e->End(body);
  }
}

}  // namespace

void AppendProtobuf(std::span<const prometheus::MetricFamily> families, const NativeLookup& native,
                    std::string* out) {
  Encoder e(out);
  using F = pb::MetricFamily;
  for (size_t f = 0; f < families.size(); ++f) {
    const auto& in = families[f];
    if (in.metric.empty()) continue;
    const size_t family = e.Placeholder();  // the varint length prefix (encoding=delimited)
    e.String(F::kNameFieldNumber, in.name);
    if (!in.help.empty()) e.String(F::kHelpFieldNumber, in.help);
    e.Int(F::kTypeFieldNumber, TypeOf(in.type));
    const bool histograms = in.type == MetricType::Histogram && native;
    for (size_t m = 0; m < in.metric.size(); ++m) {
      const size_t metric = e.Begin(F::kMetricFieldNumber);
      WriteMetric(in.type, in.metric[m], histograms ? native(f, m) : nullptr, &e);
      e.End(metric);
    }
    e.End(family);
  }
  e.Finish();
}

std::string SerializeProtobuf(const MetricSink& sink) {
  std::string out;
  AppendProtobuf(
      sink.families(), [&sink](size_t f, size_t m) { return sink.NativeOf(f, m); }, &out);
  return out;
}

}  // namespace nvmeof
