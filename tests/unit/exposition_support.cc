#include "tests/unit/exposition_support.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/timestamp.pb.h>
#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <charconv>
#include <cmath>
#include <cstring>

#include "io/prometheus/client/metrics.pb.h"

namespace nvmeof::test {
namespace {

namespace pb = io::prometheus::client;
using prometheus::MetricType;

bool IsNameStart(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}
bool IsNameChar(char c, bool colon) { return IsNameStart(c, colon) || (c >= '0' && c <= '9'); }

// Reads a metric name (colon) or label name (no colon) at the front of `s`.
std::optional<std::string> TakeName(std::string_view* s, bool colon) {
  if (s->empty() || !IsNameStart(s->front(), colon)) return std::nullopt;
  size_t n = 1;
  while (n < s->size() && IsNameChar((*s)[n], colon)) ++n;
  std::string name(s->substr(0, n));
  s->remove_prefix(n);
  return name;
}

// Unescapes up to the closing quote (label values) or the end (HELP); strict escapes.
std::optional<std::string> Unescape(std::string_view* s, bool quoted) {
  std::string out;
  while (!s->empty()) {
    const char c = s->front();
    if (quoted && c == '"') return out;  // the caller takes the quote
    if (c == '\n') return std::nullopt;
    s->remove_prefix(1);
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (s->empty()) return std::nullopt;
    const char e = s->front();
    s->remove_prefix(1);
    if (e == 'n') {
      out.push_back('\n');
    } else if (e == '\\' || (quoted && e == '"')) {
      out.push_back(e);
    } else {
      return std::nullopt;  // no other escape exists in 0.0.4
    }
  }
  if (quoted) return std::nullopt;  // no closing quote
  return out;
}

bool SameDouble(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof(a)) == 0;
}

std::string Show(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

bool SuffixAllowed(const std::string& type, std::string_view suffix) {
  if (suffix.empty()) return type != "histogram";
  if (suffix == "_count" || suffix == "_sum") return type == "summary" || type == "histogram";
  if (suffix == "_bucket") return type == "histogram";
  return false;
}

}  // namespace

std::optional<double> ParseTextValue(std::string_view s) {
  if (s == "NaN") return std::nan("");
  if (s == "+Inf") return INFINITY;
  if (s == "-Inf") return -INFINITY;
  // -?digits(.digits)?(e[+-]?digits)?
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i > start;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (!digits()) return std::nullopt;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) return std::nullopt;
  }
  if (i < s.size() && s[i] == 'e') {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::vector<TextFamily>> ParseText(std::string_view text, std::string* error) {
  std::vector<TextFamily> out;
  size_t line_no = 0;
  auto fail = [&](const std::string& why) {
    *error = "line " + std::to_string(line_no) + ": " + why;
    return std::nullopt;
  };
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return fail("no newline at the end");
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    if (line.substr(0, 7) == "# HELP " || line.substr(0, 7) == "# TYPE ") {
      const bool help = line[2] == 'H';
      line.remove_prefix(7);
      auto name = TakeName(&line, true);
      if (!name || line.empty() || line.front() != ' ') return fail("bad name in comment");
      line.remove_prefix(1);
      if (help) {
        if (!out.empty() && out.back().name == *name) return fail("family " + *name + " twice");
        auto doc = Unescape(&line, false);
        if (!doc) return fail("bad escape in HELP");
        out.push_back({*name, std::move(*doc), "", {}});
        continue;
      }
      if (line != "counter" && line != "gauge" && line != "summary" && line != "histogram" &&
          line != "untyped") {
        return fail("unknown type " + std::string(line));
      }
      if (out.empty() || out.back().name != *name) {
        out.push_back({*name, std::nullopt, "", {}});
      } else if (!out.back().type.empty() || !out.back().samples.empty()) {
        return fail("TYPE after samples or twice");
      }
      out.back().type = std::string(line);
      continue;
    }
    if (!line.empty() && line.front() == '#') return fail("comment that is not HELP or TYPE");
    if (out.empty() || out.back().type.empty()) return fail("sample before its TYPE");
    TextFamily& family = out.back();
    TextSample sample;
    auto name = TakeName(&line, true);
    if (!name) return fail("bad metric name");
    sample.name = *name;
    if (sample.name.compare(0, family.name.size(), family.name) != 0 ||
        !SuffixAllowed(family.type, std::string_view(sample.name).substr(family.name.size()))) {
      return fail(sample.name + " is not a sample of " + family.type + " " + family.name);
    }
    if (!line.empty() && line.front() == '{') {
      line.remove_prefix(1);
      while (!line.empty() && line.front() != '}') {
        if (!sample.labels.empty()) {
          if (line.front() != ',') return fail("no comma between labels");
          line.remove_prefix(1);
        }
        auto lname = TakeName(&line, false);
        if (!lname || line.substr(0, 2) != "=\"") return fail("bad label name");
        line.remove_prefix(2);
        auto value = Unescape(&line, true);
        if (!value || line.empty()) return fail("bad label value");
        line.remove_prefix(1);  // closing quote
        for (const auto& [n, v] : sample.labels) {
          if (n == *lname) return fail("label " + n + " twice");
        }
        sample.labels.emplace_back(std::move(*lname), std::move(*value));
      }
      if (line.empty()) return fail("no closing brace");
      line.remove_prefix(1);
    }
    if (line.empty() || line.front() != ' ') return fail("no space before the value");
    line.remove_prefix(1);
    const size_t space = line.find(' ');
    sample.value = std::string(line.substr(0, space));
    if (!ParseTextValue(sample.value)) return fail("bad value " + sample.value);
    if (space != std::string_view::npos) {
      const std::string_view ts = line.substr(space + 1);
      std::int64_t t = 0;
      const auto r = std::from_chars(ts.data(), ts.data() + ts.size(), t);
      if (ts.empty() || r.ec != std::errc() || r.ptr != ts.data() + ts.size()) {
        return fail("bad timestamp");
      }
      sample.timestamp_ms = t;
    }
    family.samples.push_back(std::move(sample));
  }
  return out;
}

namespace {

// Reference copy, on purpose: the oracle the writer under test is compared with must not share
// its code (exporter/text_exposition.cc has the same table).
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

// Checks one parsed sample against the model's line; "" when equal.
class TextChecker {
 public:
  TextChecker(const TextFamily& got, const prometheus::MetricFamily& want)
      : got_(got), want_(want) {}

  std::string Line(const prometheus::ClientMetric& m, const std::string& suffix,
                   const char* extra_name, std::optional<double> extra, std::optional<double> d,
                   std::optional<std::uint64_t> count) {
    const std::string where = want_.name + suffix + " series " + std::to_string(series_);
    if (next_ >= got_.samples.size()) return where + ": missing";
    const TextSample& s = got_.samples[next_++];
    if (s.name != want_.name + suffix) return where + ": got name " + s.name;
    const size_t n = m.label.size() + (extra_name ? 1 : 0);
    if (s.labels.size() != n) return where + ": " + std::to_string(s.labels.size()) + " labels";
    for (size_t i = 0; i < m.label.size(); ++i) {
      if (s.labels[i].first != m.label[i].name || s.labels[i].second != m.label[i].value) {
        return where + ": label " + std::to_string(i) + " is " + s.labels[i].first + "=" +
               s.labels[i].second;
      }
    }
    if (extra_name) {
      const auto& [name, text] = s.labels.back();
      const auto v = ParseTextValue(text);
      if (name != extra_name || !v || !SameDouble(*v, *extra)) {
        return where + ": " + name + "=\"" + text + "\", want " + Show(*extra);
      }
    }
    if (d) {
      const auto v = ParseTextValue(s.value);
      if (!v || !SameDouble(*v, *d)) return where + ": value " + s.value + ", want " + Show(*d);
    } else {
      std::uint64_t v = 0;
      const auto r = std::from_chars(s.value.data(), s.value.data() + s.value.size(), v);
      if (r.ec != std::errc() || r.ptr != s.value.data() + s.value.size() || v != *count) {
        return where + ": count " + s.value + ", want " + std::to_string(*count);
      }
    }
    const std::optional<std::int64_t> ts =
        m.timestamp_ms ? std::optional<std::int64_t>(m.timestamp_ms) : std::nullopt;
    if (s.timestamp_ms != ts) return where + ": timestamp differs";
    return "";
  }

  std::string Series(const prometheus::ClientMetric& m) {
    std::string e;
    auto line = [&](const std::string& suffix, const char* extra_name, std::optional<double> extra,
                    std::optional<double> d, std::optional<std::uint64_t> count) {
      if (e.empty()) e = Line(m, suffix, extra_name, extra, d, count);
    };
    switch (want_.type) {
      case MetricType::Counter:
        line("", nullptr, {}, m.counter.value, {});
        break;
      case MetricType::Gauge:
        line("", nullptr, {}, m.gauge.value, {});
        break;
      case MetricType::Summary:
        line("_count", nullptr, {}, {}, m.summary.sample_count);
        line("_sum", nullptr, {}, m.summary.sample_sum, {});
        for (const auto& q : m.summary.quantile) line("", "quantile", q.quantile, q.value, {});
        break;
      case MetricType::Histogram: {
        const auto& h = m.histogram;
        line("_count", nullptr, {}, {}, h.sample_count);
        line("_sum", nullptr, {}, h.sample_sum, {});
        for (const auto& b : h.bucket) line("_bucket", "le", b.upper_bound, {}, b.cumulative_count);
        if (h.bucket.empty() || h.bucket.back().upper_bound != INFINITY) {
          line("_bucket", "le", INFINITY, {}, h.sample_count);
        }
        break;
      }
      default:
        line("", nullptr, {}, m.untyped.value, {});
        break;
    }
    ++series_;
    return e;
  }

  std::string End() const {
    return next_ == got_.samples.size() ? "" : want_.name + ": extra samples";
  }

 private:
  const TextFamily& got_;
  const prometheus::MetricFamily& want_;
  size_t next_ = 0;
  size_t series_ = 0;
};

// Upstream client_model's field numbers that Debian's 0.3.0 does not name (reference copy).
constexpr int kCounterCreated = 3, kHistogramCreated = 15, kHistogramExemplars = 16;

// google.protobuf.Timestamp of unix seconds, as the writer defines it: the seconds clamped to
// years 1-9999 (NaN to the start), floor, the fraction rounded to the microsecond and carried.
google::protobuf::Timestamp ToTimestamp(double t) {
  if (std::isnan(t) || t < -62135596800.0) t = -62135596800.0;
  if (t > 253402300799.0) t = 253402300799.0;
  google::protobuf::Timestamp ts;
  const double whole = std::floor(t);
  const std::int64_t micros = std::llround((t - whole) * 1e6);
  ts.set_seconds(static_cast<std::int64_t>(whole) + micros / 1000000);
  ts.set_nanos(static_cast<std::int32_t>(micros % 1000000 * 1000));
  return ts;
}

// The exemplar of classic bucket i (the first listed for it), or nullptr.
const Exemplar* ExemplarOf(const SeriesSide* side, size_t i) {
  if (!side || !side->exemplars) return nullptr;
  for (const auto& x : *side->exemplars) {
    if (x.bucket == i) return &x.exemplar;
  }
  return nullptr;
}

std::string CompareExemplar(const Exemplar& want, const pb::Exemplar& got) {
  if (got.label_size() != static_cast<int>(want.labels.size())) return "exemplar label count";
  for (size_t i = 0; i < want.labels.size(); ++i) {
    const auto& l = got.label(static_cast<int>(i));
    if (l.name() != want.labels[i].name || l.value() != want.labels[i].value) {
      return "exemplar label " + l.name();
    }
  }
  if (!got.has_value() || !SameDouble(got.value(), want.value)) return "exemplar value";
  if (got.has_timestamp() != (want.timestamp != 0)) return "exemplar timestamp presence";
  const auto ts = ToTimestamp(want.timestamp);
  if (want.timestamp != 0 &&
      (got.timestamp().seconds() != ts.seconds() || got.timestamp().nanos() != ts.nanos())) {
    return "exemplar timestamp";
  }
  return "";
}

// A created timestamp (field `number` of `message`) against the model's (0: none).
std::string CompareCreated(const google::protobuf::Message& message, int number, double created) {
  const auto fields = MessageFields(message, number);
  if (fields.size() != (created != 0 ? 1u : 0u)) return "created timestamp presence";
  if (created == 0) return "";
  google::protobuf::Timestamp got;
  const auto want = ToTimestamp(created);
  if (!got.ParseFromString(fields[0]) || got.seconds() != want.seconds() ||
      got.nanos() != want.nanos()) {
    return "created timestamp";
  }
  return "";
}

std::string CompareHistogram(const pb::Histogram& h, const prometheus::ClientMetric::Histogram& w,
                             const SeriesSide* side);

std::string ComparePbMetric(MetricType type, const prometheus::ClientMetric& m,
                            const SeriesSide* side, const pb::Metric& p) {
  if (p.label_size() != static_cast<int>(m.label.size())) return "label count";
  for (size_t i = 0; i < m.label.size(); ++i) {
    const auto& l = p.label(static_cast<int>(i));
    if (l.name() != m.label[i].name || l.value() != m.label[i].value) return "label " + l.name();
  }
  if (p.timestamp_ms() != m.timestamp_ms || p.has_timestamp_ms() != (m.timestamp_ms != 0)) {
    return "timestamp";
  }
  switch (type) {
    case MetricType::Counter:
      if (!p.has_counter() || !SameDouble(p.counter().value(), m.counter.value)) return "counter";
      if (p.counter().has_exemplar()) return "counter exemplar";
      return CompareCreated(p.counter(), kCounterCreated, side ? side->created : 0);
    case MetricType::Gauge:
      if (!p.has_gauge() || !SameDouble(p.gauge().value(), m.gauge.value)) return "gauge";
      break;
    case MetricType::Summary: {
      const auto& s = p.summary();
      if (!p.has_summary() || s.sample_count() != m.summary.sample_count ||
          !SameDouble(s.sample_sum(), m.summary.sample_sum) ||
          s.quantile_size() != static_cast<int>(m.summary.quantile.size())) {
        return "summary";
      }
      for (int i = 0; i < s.quantile_size(); ++i) {
        const auto& q = m.summary.quantile[static_cast<size_t>(i)];
        if (!SameDouble(s.quantile(i).quantile(), q.quantile) ||
            !SameDouble(s.quantile(i).value(), q.value)) {
          return "quantile " + std::to_string(i);
        }
      }
      break;
    }
    case MetricType::Histogram:
      if (!p.has_histogram()) return "histogram";
      return CompareHistogram(p.histogram(), m.histogram, side);
    default:
      if (!p.has_untyped() || !SameDouble(p.untyped().value(), m.untyped.value)) return "untyped";
      break;
  }
  return "";
}

// A histogram as WriteHistogram writes it: count, sum, the classic buckets (unless native only;
// an infinite bound only with an exemplar) with their exemplars, the native fields, the created
// timestamp, and for native-only histograms the exemplars with a timestamp.
std::string CompareHistogram(const pb::Histogram& h, const prometheus::ClientMetric::Histogram& w,
                             const SeriesSide* side) {
  const NativeHistogram* native = side ? side->native.get() : nullptr;
  if (h.sample_count() != w.sample_count || !SameDouble(h.sample_sum(), w.sample_sum)) {
    return "histogram count or sum";
  }
  std::vector<size_t> classic;
  if (!native || native->with_classic) {
    for (size_t i = 0; i < w.bucket.size(); ++i) {
      if (!std::isinf(w.bucket[i].upper_bound) || ExemplarOf(side, i)) classic.push_back(i);
    }
  }
  if (h.bucket_size() != static_cast<int>(classic.size())) return "bucket count";
  for (int i = 0; i < h.bucket_size(); ++i) {
    const size_t k = classic[static_cast<size_t>(i)];
    const auto& b = w.bucket[k];
    const auto& got = h.bucket(i);
    if (got.cumulative_count() != b.cumulative_count ||
        !SameDouble(got.upper_bound(), b.upper_bound)) {
      return "bucket " + std::to_string(i);
    }
    const Exemplar* x = ExemplarOf(side, k);
    if (got.has_exemplar() != (x != nullptr)) return "bucket " + std::to_string(i) + " exemplar";
    if (x) {
      if (auto e = CompareExemplar(*x, got.exemplar()); !e.empty()) return e;
    }
  }
  if (auto e = CompareCreated(h, kHistogramCreated, side ? side->created : 0); !e.empty()) return e;
  std::vector<const Exemplar*> native_exemplars;
  if (native && !native->with_classic && side->exemplars) {
    for (const auto& x : *side->exemplars) {
      if (x.bucket < w.bucket.size() && x.exemplar.timestamp != 0) {
        native_exemplars.push_back(&x.exemplar);
      }
    }
  }
  const auto exemplars = MessageFields(h, kHistogramExemplars);
  if (exemplars.size() != native_exemplars.size()) return "native exemplar count";
  for (size_t i = 0; i < exemplars.size(); ++i) {
    pb::Exemplar got;
    if (!got.ParseFromString(exemplars[i])) return "native exemplar does not parse";
    if (auto e = CompareExemplar(*native_exemplars[i], got); !e.empty()) return "native " + e;
  }
  if (h.has_schema() != (native != nullptr)) return "schema presence";
  if (!native) return "";
  if (h.schema() != native->schema || !SameDouble(h.zero_threshold(), native->zero_threshold) ||
      h.zero_count() != native->zero_count) {
    return "schema or zero bucket";
  }
  if (h.positive_span_size() != static_cast<int>(native->positive_span.size()) ||
      h.positive_delta_size() != static_cast<int>(native->positive_delta.size())) {
    return "span or delta count";
  }
  for (int i = 0; i < h.positive_span_size(); ++i) {
    const auto& s = native->positive_span[static_cast<size_t>(i)];
    if (h.positive_span(i).offset() != s.offset || h.positive_span(i).length() != s.length) {
      return "span " + std::to_string(i);
    }
  }
  for (int i = 0; i < h.positive_delta_size(); ++i) {
    if (h.positive_delta(i) != native->positive_delta[static_cast<size_t>(i)]) {
      return "delta " + std::to_string(i);
    }
  }
  if (h.negative_span_size() || h.negative_delta_size() || h.positive_count_size()) {
    return "fields never written";
  }
  return "";
}

// Reference copy, on purpose: the libprotobuf oracle's own mapping, not the hand-written
// writer's (exporter/protobuf_exposition.cc has the same table).
pb::MetricType PbType(MetricType t) {
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

}  // namespace

std::string CompareText(std::span<const prometheus::MetricFamily> families,
                        const std::vector<TextFamily>& parsed) {
  if (parsed.size() != families.size()) {
    return std::to_string(parsed.size()) + " families, want " + std::to_string(families.size());
  }
  for (size_t f = 0; f < families.size(); ++f) {
    const auto& want = families[f];
    const auto& got = parsed[f];
    if (got.name != want.name) return "family " + std::to_string(f) + " is " + got.name;
    const std::optional<std::string> help =
        want.help.empty() ? std::nullopt : std::optional<std::string>(want.help);
    if (got.help != help) return want.name + ": HELP differs";
    if (got.type != TypeName(want.type)) return want.name + ": TYPE " + got.type;
    TextChecker check(got, want);
    for (const auto& m : want.metric) {
      if (auto e = check.Series(m); !e.empty()) return e;
    }
    if (auto e = check.End(); !e.empty()) return e;
  }
  return "";
}

std::vector<std::string> MessageFields(const google::protobuf::Message& message, int number) {
  std::vector<std::string> out;
  const auto* reflection = message.GetReflection();
  if (const auto* field = message.GetDescriptor()->FindFieldByNumber(number)) {
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        out.push_back(reflection->GetRepeatedMessage(message, field, i).SerializeAsString());
      }
    } else if (reflection->HasField(message, field)) {
      out.push_back(reflection->GetMessage(message, field).SerializeAsString());
    }
    return out;
  }
  const auto& unknown = reflection->GetUnknownFields(message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const auto& u = unknown.field(i);
    if (u.number() == number && u.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      out.push_back(u.length_delimited());
    }
  }
  return out;
}

namespace {

// A NativeLookup as a SideLookup: views of the native buckets, owning nothing.
SideLookup FromNative(const NativeLookup& native, SeriesSide* view) {
  if (!native) return SideLookup();
  return [&native, view](size_t f, size_t m) -> const SeriesSide* {
    const NativeHistogram* n = native(f, m);
    if (!n) return nullptr;
    view->native = std::shared_ptr<const NativeHistogram>(std::shared_ptr<void>(), n);
    return view;
  };
}

}  // namespace

std::string CompareProtobuf(std::span<const prometheus::MetricFamily> families,
                            const NativeLookup& native, std::string_view delimited) {
  SeriesSide view;
  return CompareProtobuf(families, FromNative(native, &view), delimited);
}

std::string CompareProtobuf(std::span<const prometheus::MetricFamily> families,
                            const SideLookup& side, std::string_view delimited) {
  google::protobuf::io::ArrayInputStream stream(delimited.data(),
                                                static_cast<int>(delimited.size()));
  size_t f = 0;
  for (;;) {
    pb::MetricFamily p;
    bool clean_eof = false;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&p, &stream, &clean_eof)) {
      if (clean_eof) break;
      return "message after family " + std::to_string(f) + " does not parse";
    }
    while (f < families.size() && families[f].metric.empty()) ++f;  // not written
    if (f == families.size()) return "more messages than families";
    const auto& want = families[f];
    if (p.name() != want.name || p.has_help() != !want.help.empty() || p.help() != want.help ||
        !p.has_type() || p.type() != PbType(want.type)) {
      return want.name + ": name, help or type differs";
    }
    if (p.metric_size() != static_cast<int>(want.metric.size())) return want.name + ": series";
    for (size_t m = 0; m < want.metric.size(); ++m) {
      const bool sides = want.type == MetricType::Histogram || want.type == MetricType::Counter;
      const SeriesSide* n = sides && side ? side(f, m) : nullptr;
      if (auto e = ComparePbMetric(want.type, want.metric[m], n, p.metric(static_cast<int>(m)));
          !e.empty()) {
        return want.name + " series " + std::to_string(m) + ": " + e;
      }
    }
    ++f;
  }
  while (f < families.size() && families[f].metric.empty()) ++f;
  return f == families.size() ? "" : "families missing from " + families[f].name;
}

namespace {

// Sets message field `number` of `message` (adds to it, if repeated) to `value`, through
// reflection where the compiled schema names the field, else as an unknown field.
void AddMessageField(google::protobuf::Message* message, int number,
                     const google::protobuf::Message& value) {
  const auto* reflection = message->GetReflection();
  if (const auto* field = message->GetDescriptor()->FindFieldByNumber(number)) {
    auto* dst = field->is_repeated() ? reflection->AddMessage(message, field)
                                     : reflection->MutableMessage(message, field);
    dst->ParseFromString(value.SerializeAsString());
    return;
  }
  reflection->MutableUnknownFields(message)->AddLengthDelimited(number, value.SerializeAsString());
}

void FillExemplar(const Exemplar& in, pb::Exemplar* out) {
  for (const auto& l : in.labels) {
    auto* pair = out->add_label();
    pair->set_name(l.name);
    pair->set_value(l.value);
  }
  out->set_value(in.value);
  if (in.timestamp != 0) *out->mutable_timestamp() = ToTimestamp(in.timestamp);
}

void FillNative(const NativeHistogram* native, pb::Histogram* out);

void FillHistogram(const prometheus::ClientMetric::Histogram& in, const SeriesSide* side,
                   pb::Histogram* out) {
  const NativeHistogram* native = side ? side->native.get() : nullptr;
  out->set_sample_count(in.sample_count);
  out->set_sample_sum(in.sample_sum);
  if (!native || native->with_classic) {
    for (size_t i = 0; i < in.bucket.size(); ++i) {
      const auto& b = in.bucket[i];
      const Exemplar* x = ExemplarOf(side, i);
      if (std::isinf(b.upper_bound) && !x) continue;
      auto* pb_bucket = out->add_bucket();
      pb_bucket->set_cumulative_count(b.cumulative_count);
      pb_bucket->set_upper_bound(b.upper_bound);
      if (x) FillExemplar(*x, pb_bucket->mutable_exemplar());
    }
  }
  FillNative(native, out);
  if (side && side->created != 0)
    AddMessageField(out, kHistogramCreated, ToTimestamp(side->created));
  if (native && !native->with_classic && side->exemplars) {
    for (const auto& x : *side->exemplars) {
      if (x.bucket >= in.bucket.size() || x.exemplar.timestamp == 0) continue;
      pb::Exemplar e;
      FillExemplar(x.exemplar, &e);
      AddMessageField(out, kHistogramExemplars, e);
    }
  }
}

void FillNative(const NativeHistogram* native, pb::Histogram* out) {
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

std::string SerializeProtobufMessages(std::span<const prometheus::MetricFamily> families,
                                      const NativeLookup& native) {
  SeriesSide view;
  return SerializeProtobufMessages(families, FromNative(native, &view));
}

std::string SerializeProtobufMessages(std::span<const prometheus::MetricFamily> families,
                                      const SideLookup& side) {
  std::string out;
  pb::MetricFamily family;
  std::string message;
  for (size_t f = 0; f < families.size(); ++f) {
    const auto& in = families[f];
    if (in.metric.empty()) continue;
    family.Clear();
    family.set_name(in.name);
    if (!in.help.empty()) family.set_help(in.help);
    family.set_type(PbType(in.type));
    for (size_t m = 0; m < in.metric.size(); ++m) {
      const auto& src = in.metric[m];
      auto* dst = family.add_metric();
      for (const auto& l : src.label) {
        auto* pair = dst->add_label();
        pair->set_name(l.name);
        pair->set_value(l.value);
      }
      const bool sides = in.type == MetricType::Histogram || in.type == MetricType::Counter;
      const SeriesSide* extra = sides && side ? side(f, m) : nullptr;
      switch (in.type) {
        case MetricType::Counter:
          dst->mutable_counter()->set_value(src.counter.value);
          if (extra && extra->created != 0) {
            AddMessageField(dst->mutable_counter(), kCounterCreated, ToTimestamp(extra->created));
          }
          break;
        case MetricType::Gauge:
          dst->mutable_gauge()->set_value(src.gauge.value);
          break;
        case MetricType::Histogram:
          FillHistogram(src.histogram, extra, dst->mutable_histogram());
          break;
        case MetricType::Summary: {
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

}  // namespace nvmeof::test
