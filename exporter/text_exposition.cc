#include "exporter/text_exposition.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace nvmeof {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using ExemplarSpan = std::span<const BucketExemplar>;

// Label values escape backslash, double quote and newline; HELP escapes backslash and newline.
template <bool kQuote>
void AppendEscaped(std::string_view s, std::string* out) {
  size_t done = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c != '\\' && c != '\n' && (!kQuote || c != '"')) continue;
    out->append(s.data() + done, i - done);
    out->push_back('\\');
    out->push_back(c == '\n' ? 'n' : c);
    done = i + 1;
  }
  out->append(s.data() + done, s.size() - done);
}

void AppendUnsigned(std::uint64_t v, std::string* out) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

void AppendSigned(std::int64_t v, std::string* out) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

// OpenMetrics timestamps, in seconds: 1700000000.123, the shortest digits that read back as the
// same double, never an exponent (beyond 1e63, which no clock reaches: the value's own format).
void AppendSeconds(double v, std::string* out) {
  char buf[80];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
  if (r.ec != std::errc() || !std::isfinite(v)) return AppendTextDouble(v, out);
  out->append(buf, r.ptr);
}

// One series' lines share their start: the name, then its labels. Labels are escaped once per
// series into `labels` (`a="x",b="y"`, no braces) and copied into each line.
class SeriesWriter {
 public:
  // open_metrics: timestamps in seconds (OpenMetrics), not milliseconds (text 0.0.4).
  explicit SeriesWriter(std::string* out, bool open_metrics = false)
      : out_(out), open_metrics_(open_metrics) {}

  void Start(const MetricFamily& family, const ClientMetric& metric) {
    metric_ = &metric;
    name_ = family.name;
    labels_.clear();
    for (const auto& l : metric.label) {
      if (!labels_.empty()) labels_.push_back(',');
      labels_ += l.name;
      labels_ += "=\"";
      AppendEscaped<true>(l.value, &labels_);
      labels_.push_back('"');
    }
  }

  // The name lines start with (Head), the family's unless changed (OpenMetrics' counter
  // `_created` line is named without `_total`).
  void Name(std::string_view name) { name_ = name; }

  // `name` + suffix + {labels} + ' '.
  void Head(std::string_view suffix) {
    *out_ += name_;
    *out_ += suffix;
    if (!labels_.empty()) {
      out_->push_back('{');
      *out_ += labels_;
      out_->push_back('}');
    }
    out_->push_back(' ');
  }

  // The same with one more label whose value is already text (le="...", quantile="...").
  void Head(std::string_view suffix, std::string_view extra_name, std::string_view extra_value) {
    *out_ += name_;
    *out_ += suffix;
    out_->push_back('{');
    if (!labels_.empty()) {
      *out_ += labels_;
      out_->push_back(',');
    }
    *out_ += extra_name;
    *out_ += "=\"";
    *out_ += extra_value;
    *out_ += "\"} ";
  }

  // The series' timestamp if it has one, an exemplar if given (OpenMetrics only), '\n'.
  void Tail(const Exemplar* exemplar = nullptr) {
    if (metric_->timestamp_ms != 0) {
      out_->push_back(' ');
      if (open_metrics_) {
        AppendSeconds(static_cast<double>(metric_->timestamp_ms) / 1000, out_);
      } else {
        AppendSigned(metric_->timestamp_ms, out_);
      }
    }
    if (exemplar) {  // ` # {a="b"} value[ timestamp]`
      *out_ += " # {";
      for (size_t i = 0; i < exemplar->labels.size(); ++i) {
        if (i) out_->push_back(',');
        *out_ += exemplar->labels[i].name;
        *out_ += "=\"";
        AppendEscaped<true>(exemplar->labels[i].value, out_);
        out_->push_back('"');
      }
      *out_ += "} ";
      AppendTextDouble(exemplar->value, out_);
      if (exemplar->timestamp != 0) {
        out_->push_back(' ');
        AppendSeconds(exemplar->timestamp, out_);
      }
    }
    out_->push_back('\n');
  }

  void Value(double v) {
    AppendTextDouble(v, out_);
    Tail();
  }
  void Count(std::uint64_t v, const Exemplar* exemplar = nullptr) {
    AppendUnsigned(v, out_);
    Tail(exemplar);
  }
  // A timestamp sample's value (OpenMetrics `_created`), in seconds.
  void Seconds(double v) {
    AppendSeconds(v, out_);
    Tail();
  }

  // A bound as label text, cached by bucket position: a family's series almost always share
  // one layout, so each bound is formatted once per family, not once per series.
  std::string_view Bound(size_t i, double bound) {
    if (i >= bounds_.size()) bounds_.resize(i + 1);
    auto& [value, text] = bounds_[i];
    if (text.empty() || std::memcmp(&value, &bound, sizeof(bound)) != 0) {
      value = bound;
      text.clear();
      AppendTextDouble(bound, &text);
    }
    return text;
  }

 private:
  std::string* out_;
  bool open_metrics_;
  const ClientMetric* metric_ = nullptr;
  std::string_view name_;
  std::string labels_;
  std::vector<std::pair<double, std::string>> bounds_;
};

const char* TypeName(MetricType t) {
  switch (t) {
    case MetricType::Counter:
      return "counter";
    case MetricType::Gauge:
      return "gauge";
    case MetricType::Summary:
      return "summary";
    case MetricType::Histogram:
      return "histogram";
    default:
      return "untyped";
  }
}

// A histogram's buckets, +Inf last (added as the count where the family has none), each with
// its exemplar, if any (`exemplars`: ascending by bucket; OpenMetrics only).
void AppendBuckets(SeriesWriter& w, const prometheus::ClientMetric::Histogram& h,
                   std::span<const BucketExemplar> exemplars) {
  bool inf = false;
  size_t next = 0;
  for (size_t i = 0; i < h.bucket.size(); ++i) {
    const auto& b = h.bucket[i];
    while (next < exemplars.size() && exemplars[next].bucket < i) ++next;
    const bool has = next < exemplars.size() && exemplars[next].bucket == i;
    w.Head("_bucket", "le", w.Bound(i, b.upper_bound));
    w.Count(b.cumulative_count, has ? &exemplars[next].exemplar : nullptr);
    inf = b.upper_bound == INFINITY;
  }
  if (!inf) {
    w.Head("_bucket", "le", "+Inf");
    w.Count(h.sample_count);
  }
}

// OpenMetrics names a counter family without its `_total`, which only its samples carry. The
// metric model gives every counter that suffix; a counter without it would change its series'
// name, so it goes out as `unknown`, under its own name.
bool OpenMetricsCounter(const MetricFamily& family) {
  constexpr std::string_view kTotal = "_total";
  return family.type == MetricType::Counter && family.name.size() > kTotal.size() &&
         std::string_view(family.name).ends_with(kTotal);
}

// A series' sample lines. Text 0.0.4 has TextSerializer's order (_count, _sum, then quantiles
// or buckets); OpenMetrics puts quantiles or buckets first, then _sum and _count, and adds the
// side data (`side`, null for text 0.0.4): exemplars on buckets, `_created` last.
void AppendSamples(SeriesWriter& w, const MetricFamily& family, const ClientMetric& metric,
                   const SeriesSide* side, bool open_metrics, std::string* quantile) {
  const MetricType type = family.type;
  const double created = side && !side->created_protobuf_only ? side->created : 0;
  auto count_and_sum = [&](std::uint64_t count, double sum) {
    if (!open_metrics) {
      w.Head("_count");
      w.Count(count);
    }
    w.Head("_sum");
    w.Value(sum);
    if (open_metrics) {
      w.Head("_count");
      w.Count(count);
    }
  };
  switch (type) {
    case MetricType::Counter:
      w.Head("");
      w.Value(metric.counter.value);
      if (created != 0 && open_metrics && OpenMetricsCounter(family)) {
        w.Name(std::string_view(family.name).substr(0, family.name.size() - 6));  // no _total
        w.Head("_created");
        w.Seconds(created);
      }
      break;
    case MetricType::Gauge:
      w.Head("");
      w.Value(metric.gauge.value);
      break;
    case MetricType::Summary: {
      const auto& s = metric.summary;
      if (!open_metrics) count_and_sum(s.sample_count, s.sample_sum);
      for (const auto& q : s.quantile) {
        quantile->clear();
        AppendTextDouble(q.quantile, quantile);
        w.Head("", "quantile", *quantile);
        w.Value(q.value);
      }
      if (open_metrics) count_and_sum(s.sample_count, s.sample_sum);
      break;
    }
    case MetricType::Histogram: {
      const auto& h = metric.histogram;
      if (!open_metrics) count_and_sum(h.sample_count, h.sample_sum);
      // +Inf from the count where missing, as TextSerializer does
      AppendBuckets(w, h, side && side->exemplars ? *side->exemplars : ExemplarSpan());
      if (open_metrics) count_and_sum(h.sample_count, h.sample_sum);
      if (created != 0) {
        w.Head("_created");
        w.Seconds(created);
      }
      break;
    }
    default:
      w.Head("");
      w.Value(metric.untyped.value);
      break;
  }
}

}  // namespace

void AppendTextDouble(double v, std::string* out) {
  if (std::isnan(v)) {
    *out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    *out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buf[32];
  char* end;
  if (v == 0) {
    end = std::signbit(v) ? std::strcpy(buf, "-0") + 2 : std::strcpy(buf, "0") + 1;
  } else if (std::fabs(v) < 1e16 && v == std::trunc(v)) {
    // Exact in an int64, and the digits %.16g would print: counters stay readable.
    end = std::to_chars(buf, buf + sizeof(buf), static_cast<std::int64_t>(v)).ptr;
  } else {
    // Shortest round trip, in %g style (exponent below 1e-4 and from 1e16 on).
    end = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general).ptr;
  }
  out->append(buf, end);
}

void AppendText(std::span<const MetricFamily> families, std::string* out) {
  SeriesWriter w(out);
  std::string quantile;
  for (const auto& family : families) {
    if (!family.help.empty()) {
      *out += "# HELP ";
      *out += family.name;
      out->push_back(' ');
      AppendEscaped<false>(family.help, out);
      out->push_back('\n');
    }
    *out += "# TYPE ";
    *out += family.name;
    out->push_back(' ');
    *out += TypeName(family.type);
    out->push_back('\n');
    for (const auto& metric : family.metric) {
      w.Start(family, metric);
      AppendSamples(w, family, metric, nullptr, false, &quantile);
    }
  }
}

void AppendOpenMetrics(std::span<const MetricFamily> families, std::string* out) {
  AppendOpenMetrics(families, SideLookup(), out);
}

void AppendOpenMetrics(std::span<const MetricFamily> families, const SideLookup& side,
                       std::string* out) {
  SeriesWriter w(out, true);
  std::string quantile;
  for (size_t f = 0; f < families.size(); ++f) {
    const auto& family = families[f];
    std::string_view name = family.name;
    const char* type = "unknown";
    switch (family.type) {
      case MetricType::Counter:
        if (OpenMetricsCounter(family)) {
          name.remove_suffix(6);
          type = "counter";
        }
        break;
      case MetricType::Gauge:
        type = "gauge";
        break;
      case MetricType::Summary:
        type = "summary";
        break;
      case MetricType::Histogram:
        type = "histogram";
        break;
      default:
        break;
    }
    *out += "# TYPE ";
    *out += name;
    out->push_back(' ');
    *out += type;
    out->push_back('\n');
    if (!family.help.empty()) {
      *out += "# HELP ";
      *out += name;
      out->push_back(' ');
      AppendEscaped<true>(family.help, out);  // OpenMetrics escapes '"' in HELP too
      out->push_back('\n');
    }
    for (size_t m = 0; m < family.metric.size(); ++m) {
      w.Start(family, family.metric[m]);
      AppendSamples(w, family, family.metric[m], side ? side(f, m) : nullptr, true, &quantile);
    }
  }
  *out += "# EOF\n";
}

}  // namespace nvmeof
