#include "exporter/protobuf_exposition.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

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

// Fields of upstream client_model (0.6) that Debian's 0.3.0, whose generated classes name the
// others, does not have yet: created timestamps (Counter 3, Histogram 15) and the native
// histogram's exemplars (Histogram 16), all messages.
constexpr std::uint32_t kCounterCreatedTimestamp = 3;
constexpr std::uint32_t kHistogramCreatedTimestamp = 15;
constexpr std::uint32_t kHistogramExemplars = 16;

// google.protobuf.Timestamp from unix seconds: whole seconds (floor) and the fraction rounded
// to the microsecond (a double near today's epoch resolves 0.24 us: finer digits are its error,
// and 1733500000.123 must reach Prometheus' milliseconds as .123, not .122999907), carried into
// the seconds at 1 s; each left out when 0 (proto3). The seconds are clamped to the message's
// range, years 1 to 9999 (NaN to its start).
void WriteTimestamp(std::uint32_t field, double t, Encoder* e) {
  constexpr double kMin = -62135596800.0, kMax = 253402300799.0;
  if (!(t > kMin)) t = kMin;
  if (t > kMax) t = kMax;
  const double whole = std::floor(t);
  auto seconds = static_cast<std::int64_t>(whole);
  auto micros = static_cast<std::int64_t>(std::llround((t - whole) * 1e6));
  if (micros >= 1000000) {
    ++seconds;
    micros -= 1000000;
  }
  const std::int64_t nanos = micros * 1000;
  const size_t body = e->Begin(field);
  if (seconds != 0) e->Int(1, seconds);  // google.protobuf.Timestamp.seconds
  if (nanos != 0) e->Int(2, nanos);      // .nanos
  e->End(body);
}

// io.prometheus.client.Exemplar: labels, value, and a timestamp where it has one.
void WriteExemplar(std::uint32_t field, const Exemplar& x, Encoder* e) {
  const size_t body = e->Begin(field);
  for (const auto& l : x.labels) {
    const size_t pair = e->Begin(pb::Exemplar::kLabelFieldNumber);
    e->String(pb::LabelPair::kNameFieldNumber, l.name);
    e->String(pb::LabelPair::kValueFieldNumber, l.value);
    e->End(pair);
  }
  e->Double(pb::Exemplar::kValueFieldNumber, x.value);
  if (x.timestamp != 0) WriteTimestamp(pb::Exemplar::kTimestampFieldNumber, x.timestamp, e);
  e->End(body);
}

// The native fields of io.prometheus.client.Histogram (5-13).
void WriteNative(const NativeHistogram& native, Encoder* e) {
  using H = pb::Histogram;
  e->Sint32(H::kSchemaFieldNumber, native.schema);
  e->Double(H::kZeroThresholdFieldNumber, native.zero_threshold);
  e->Uint(H::kZeroCountFieldNumber, native.zero_count);
  for (const auto& s : native.positive_span) {
    const size_t span = e->Begin(H::kPositiveSpanFieldNumber);
    e->Sint32(pb::BucketSpan::kOffsetFieldNumber, s.offset);
    e->Uint(pb::BucketSpan::kLengthFieldNumber, s.length);
    e->End(span);
  }
  for (auto d : native.positive_delta) e->Sint64(H::kPositiveDeltaFieldNumber, d);
}

// io.prometheus.client.Histogram. Native histograms carry schema, zero bucket, spans and
// deltas, and their classic buckets only if with_classic; the others their classic buckets.
// A classic bucket carries its exemplar; an infinite bound (+Inf: sample_count) is left out
// unless it has one. A native histogram without classic buckets carries the exemplars that have
// a timestamp in `exemplars` (with classic buckets, Prometheus takes those of the buckets).
void WriteHistogram(const prometheus::ClientMetric::Histogram& in, const SeriesSide* side,
                    Encoder* e) {
  using H = pb::Histogram;
  const NativeHistogram* native = side ? side->native.get() : nullptr;
  const std::span<const BucketExemplar> exemplars =
      side && side->exemplars ? *side->exemplars : std::span<const BucketExemplar>();
  e->Uint(H::kSampleCountFieldNumber, in.sample_count);
  e->Double(H::kSampleSumFieldNumber, in.sample_sum);
  if (!native || native->with_classic) {
    size_t next = 0;
    for (size_t i = 0; i < in.bucket.size(); ++i) {
      const auto& b = in.bucket[i];
      while (next < exemplars.size() && exemplars[next].bucket < i) ++next;
      const bool has = next < exemplars.size() && exemplars[next].bucket == i;
      if (std::isinf(b.upper_bound) && !has) continue;
      const size_t bucket = e->Begin(H::kBucketFieldNumber);
      e->Uint(pb::Bucket::kCumulativeCountFieldNumber, b.cumulative_count);
      e->Double(pb::Bucket::kUpperBoundFieldNumber, b.upper_bound);
      if (has) WriteExemplar(pb::Bucket::kExemplarFieldNumber, exemplars[next].exemplar, e);
      e->End(bucket);
    }
  }
  if (native) WriteNative(*native, e);
  if (side && side->created != 0) WriteTimestamp(kHistogramCreatedTimestamp, side->created, e);
  if (native && !native->with_classic) {
    for (const auto& x : exemplars) {
      if (x.bucket < in.bucket.size() && x.exemplar.timestamp != 0) {
        WriteExemplar(kHistogramExemplars, x.exemplar, e);
      }
    }
  }
}

// io.prometheus.client.Metric; fields in field-number order, as libprotobuf writes them.
void WriteMetric(MetricType type, const prometheus::ClientMetric& m, const SeriesSide* side,
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
      if (side && side->created != 0) WriteTimestamp(kCounterCreatedTimestamp, side->created, e);
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
    WriteHistogram(m.histogram, side, e);
    e->End(body);
  }
}

}  // namespace

void AppendProtobuf(std::span<const prometheus::MetricFamily> families, const NativeLookup& native,
                    std::string* out) {
  if (!native) return AppendProtobuf(families, SideLookup(), out);
  SeriesSide side;  // a view: the native buckets are the lookup's, not owned
  AppendProtobuf(
      families,
      [&](size_t f, size_t m) -> const SeriesSide* {
        const NativeHistogram* n = native(f, m);
        if (!n) return nullptr;
        side.native = std::shared_ptr<const NativeHistogram>(std::shared_ptr<void>(), n);
        return &side;
      },
      out);
}

void AppendProtobuf(std::span<const prometheus::MetricFamily> families, const SideLookup& side,
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
    const bool sides = (in.type == MetricType::Histogram || in.type == MetricType::Counter) && side;
    for (size_t m = 0; m < in.metric.size(); ++m) {
      const size_t metric = e.Begin(F::kMetricFieldNumber);
      WriteMetric(in.type, in.metric[m], sides ? side(f, m) : nullptr, &e);
      e.End(metric);
    }
    e.End(family);
  }
  e.Finish();
}

std::string SerializeProtobuf(const MetricSink& sink) {
  std::string out;
  AppendProtobuf(
      sink.families(), [&sink](size_t f, size_t m) { return sink.SideOf(f, m); }, &out);
  return out;
}

}  // namespace nvmeof
