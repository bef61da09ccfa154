#include "exporter/protobuf_exposition.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "io/prometheus/client/metrics.pb.h"

namespace nvmeof {
namespace {

namespace pb = io::prometheus::client;

pb::MetricType TypeOf(prometheus::MetricType t) {
  switch (t) {
    case prometheus::MetricType::Counter:
      return pb::COUNTER;
    case prometheus::MetricType::Gauge:
      return pb::GAUGE;
    case prometheus::MetricType::Summary:
      return pb::SUMMARY;
    case prometheus::MetricType::Histogram:
      return pb::HISTOGRAM;
    default:
      return pb::UNTYPED;
  }
}

void FillHistogram(const prometheus::ClientMetric::Histogram& in, const NativeHistogram* native,
                   pb::Histogram* out) {
  out->set_sample_count(in.sample_count);
  out->set_sample_sum(in.sample_sum);
  if (!native || native->with_classic) {
    for (const auto& b : in.bucket) {
      if (std::isinf(b.upper_bound)) continue;  // +Inf is optional: sample_count
      auto* pb_bucket = out->add_bucket();
      pb_bucket->set_cumulative_count(b.cumulative_count);
      pb_bucket->set_upper_bound(b.upper_bound);
    }
  }
  if (!native) return;
  out->set_schema(native->schema);
  out->set_zero_threshold(native->zero_threshold);
  out->set_zero_count(native->zero_count);
  for (const auto& s : native->positive_span) {
    auto* span = out->add_positive_span();
    span->set_offset(s.offset);
    span->set_length(s.length);
  }
  for (auto d : native->positive_delta) out->add_positive_delta(d);
}

}  // namespace

std::string SerializeProtobuf(const MetricSink& sink) {
  std::string out;
  pb::MetricFamily family;
  std::string message;
  const auto& families = sink.families();
  for (size_t f = 0; f < families.size(); ++f) {
    const auto& in = families[f];
    if (in.metric.empty()) continue;
    family.Clear();
    family.set_name(in.name);
    if (!in.help.empty()) family.set_help(in.help);
    family.set_type(TypeOf(in.type));
    for (size_t m = 0; m < in.metric.size(); ++m) {
      const auto& src = in.metric[m];
      auto* dst = family.add_metric();
      for (const auto& l : src.label) {
        auto* pair = dst->add_label();
        pair->set_name(l.name);
        pair->set_value(l.value);
      }
      switch (in.type) {
        case prometheus::MetricType::Counter:
          dst->mutable_counter()->set_value(src.counter.value);
          break;
        case prometheus::MetricType::Gauge:
          dst->mutable_gauge()->set_value(src.gauge.value);
          break;
        case prometheus::MetricType::Histogram:
          FillHistogram(src.histogram, sink.NativeOf(f, m), dst->mutable_histogram());
          break;
        case prometheus::MetricType::Summary: {
          auto* s = dst->mutable_summary();
          s->set_sample_count(src.summary.sample_count);
          s->set_sample_sum(src.summary.sample_sum);
          for (const auto& q : src.summary.quantile) {
            auto* pq = s->add_quantile();
            pq->set_quantile(q.quantile);
            pq->set_value(q.value);
          }
          break;
        }
        default:
          dst->mutable_untyped()->set_value(src.untyped.value);
          break;
      }
      if (src.timestamp_ms != 0) dst->set_timestamp_ms(src.timestamp_ms);
    }
    message.clear();
    family.SerializeToString(&message);
    // The varint length prefix (encoding=delimited), as protobuf's SerializeDelimitedTo writes it.
    std::uint64_t n = message.size();
    while (n >= 0x80) {
      out.push_back(static_cast<char>((n & 0x7f) | 0x80));
      n >>= 7;
    }
    out.push_back(static_cast<char>(n));
    out += message;
  }
  return out;
}

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool PrefersProtobuf(const char* accept) {
  if (!accept) return false;
  std::string_view s(accept);
  double proto_q = 0, text_q = 0;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    std::string_view type = Trim(item.substr(0, item.find(';')));
    double q = 1;
    bool proto_ok = false, delimited = false;
    std::string_view params =
        item.find(';') == std::string_view::npos ? std::string_view() : item.substr(item.find(';'));
    while (!params.empty()) {
      params.remove_prefix(1);  // ';'
      const size_t semi = params.find(';');
      std::string_view p = Trim(params.substr(0, semi));
      params = semi == std::string_view::npos ? std::string_view() : params.substr(semi);
      const size_t eq = p.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view key = Trim(p.substr(0, eq)), value = Trim(p.substr(eq + 1));
      if (EqualsNoCase(key, "q")) q = std::strtod(std::string(value).c_str(), nullptr);
      if (key == "proto") proto_ok = value == "io.prometheus.client.MetricFamily";
      if (key == "encoding") delimited = value == "delimited";
    }
    if (EqualsNoCase(type, "application/vnd.google.protobuf") && proto_ok && delimited) {
      proto_q = std::max(proto_q, q);
    } else if (EqualsNoCase(type, "text/plain") || type == "*/*") {
      text_q = std::max(text_q, q);
    }
  }
  return proto_q > 0 && proto_q >= text_q;
}

}  // namespace nvmeof
