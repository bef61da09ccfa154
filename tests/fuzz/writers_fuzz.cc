// libFuzzer target for the exposition writers as round trips: the input builds a model
// (families of every type; names, HELP and label values of any bytes, quotes, backslashes,
// newlines and UTF-8 included; values of any bit pattern, NaN, +-Inf and -0 included;
// histograms with classic and native buckets; side data: exemplars on classic buckets, created
// timestamps on counters and histograms), which is then
// (a) written as text (AppendText) and parsed back by the strict parser of
//     tests/unit/exposition_support.h: it must parse and equal the model;
// (b) written as protobuf (AppendProtobuf): the bytes must be libprotobuf's for the same
//     messages (fields its schema lacks as unknown fields), and libprotobuf must parse them back
//     (ParseDelimitedFromZeroCopyStream) equal to the model, side data included;
// (c) written as OpenMetrics with and without the side data: with it, every line is the line
//     without it, or that line with an exemplar (` # {`) appended, or a `_created` sample.
// Seeds: tests/fuzz/seeds.py (any bytes make a model).
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "exporter/protobuf_exposition.h"
#include "exporter/text_exposition.h"
#include "tests/unit/exposition_support.h"

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// A name of the format's character set, unique by its prefix (family or label index), so no
// two families or labels of a series share one and none is "le" or "quantile".
std::string Name(FuzzedDataProvider* in, const std::string& prefix, bool colon) {
  static constexpr char kChars[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:";
  std::string name = prefix;
  const size_t n = in->ConsumeIntegralInRange<size_t>(0, 12);
  for (size_t i = 0; i < n; ++i) {
    name.push_back(kChars[in->ConsumeIntegralInRange<size_t>(0, sizeof(kChars) - (colon ? 2 : 3))]);
  }
  return name;
}

double Value(FuzzedDataProvider* in) {
  static const double kSpecial[] = {std::nan(""),
                                    INFINITY,
                                    -INFINITY,
                                    -0.0,
                                    0.0,
                                    1.0,
                                    0.1 + 0.2,
                                    1e16,
                                    9007199254740993.0,
                                    std::numeric_limits<double>::max(),
                                    std::numeric_limits<double>::denorm_min(),
                                    -std::numeric_limits<double>::min()};
  switch (in->ConsumeIntegralInRange(0, 3)) {
    case 0:
      return kSpecial[in->ConsumeIntegralInRange<size_t>(0, std::size(kSpecial) - 1)];
    case 1: {  // any bit pattern: NaN payloads, subnormals, both zeros
      const auto bits = in->ConsumeIntegral<std::uint64_t>();
      double v;
      std::memcpy(&v, &bits, sizeof(v));
      return v;
    }
    case 2:  // integral, as counters are
      return static_cast<double>(in->ConsumeIntegral<std::int64_t>());
    default:
      return in->ConsumeFloatingPoint<double>();
  }
}

std::shared_ptr<nvmeof::NativeHistogram> Native(FuzzedDataProvider* in) {
  auto h = std::make_shared<nvmeof::NativeHistogram>();
  if (in->ConsumeBool()) {  // as the exporter builds them
    std::vector<std::uint64_t> counts(in->ConsumeIntegralInRange<size_t>(0, 40));
    for (auto& c : counts) c = in->ConsumeBool() ? 0 : in->ConsumeIntegral<std::uint32_t>();
    nvmeof::SetNativeBuckets(h.get(), in->ConsumeIntegralInRange(-300, 300), counts.data(),
                             counts.size());
  } else {  // any field values: the writer must carry them whatever they are
    const size_t spans = in->ConsumeIntegralInRange<size_t>(0, 6);
    for (size_t i = 0; i < spans; ++i) {
      h->positive_span.push_back(
          {in->ConsumeIntegral<std::int32_t>(), in->ConsumeIntegral<std::uint32_t>()});
    }
    const size_t deltas = in->ConsumeIntegralInRange<size_t>(0, 20);
    for (size_t i = 0; i < deltas; ++i)
      h->positive_delta.push_back(in->ConsumeIntegral<std::int64_t>());
  }
  h->schema = in->ConsumeIntegralInRange(-4, 8);
  h->zero_threshold = Value(in);
  h->zero_count = in->ConsumeIntegral<std::uint64_t>();
  h->with_classic = in->ConsumeBool();
  return h;
}

// Side data as MetricSink builds it: exemplars on distinct classic buckets, ascending, labels of
// any bytes, values and timestamps of any bits (0: none); a created timestamp of any bits.
nvmeof::SeriesSide Side(FuzzedDataProvider* in, const MetricFamily& family, const ClientMetric& m) {
  nvmeof::SeriesSide side;
  const bool histogram = family.type == MetricType::Histogram;
  if (histogram && in->ConsumeBool()) side.native = Native(in);
  if ((histogram || family.type == MetricType::Counter) && in->ConsumeBool()) {
    side.created = Value(in);
  }
  if (!histogram || m.histogram.bucket.empty() || !in->ConsumeBool()) return side;
  auto exemplars = std::make_shared<std::vector<nvmeof::BucketExemplar>>();
  for (size_t b = 0; b < m.histogram.bucket.size(); ++b) {
    if (in->ConsumeIntegralInRange(0, 3) != 0) continue;
    nvmeof::BucketExemplar x{b, {}};
    for (size_t l = in->ConsumeIntegralInRange<size_t>(0, 2); l > 0; --l) {
      x.exemplar.labels.push_back(
          {Name(in, "e" + std::to_string(l), false), in->ConsumeRandomLengthString(16)});
    }
    x.exemplar.value = Value(in);
    if (in->ConsumeBool()) x.exemplar.timestamp = Value(in);
    exemplars->push_back(std::move(x));
  }
  side.exemplars = std::move(exemplars);
  return side;
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return out;
}

// (c): "" when `with` is `without` plus exemplars and _created samples, else the first line that
// is not.
std::string CompareOpenMetricsSide(std::string_view without, std::string_view with) {
  const auto plain = Lines(without);
  size_t j = 0;
  for (const auto line : Lines(with)) {
    if (j < plain.size() &&
        (line == plain[j] ||
         (line.starts_with(plain[j]) && line.substr(plain[j].size()).starts_with(" # {")))) {
      ++j;
      continue;
    }
    const size_t end = line.find_first_of("{ ");
    if (end == std::string_view::npos || !line.substr(0, end).ends_with("_created")) {
      return std::string(line);
    }
  }
  return j == plain.size() ? "" : "missing: " + std::string(plain[j]);
}

[[noreturn]] void Fail(const char* what, const std::string& why) {
  std::fprintf(stderr, "writers_fuzz: %s: %s\n", what, why.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  std::vector<MetricFamily> families(in.ConsumeIntegralInRange<size_t>(0, 6));
  std::vector<std::vector<nvmeof::SeriesSide>> sides(families.size());
  for (size_t f = 0; f < families.size(); ++f) {
    auto& family = families[f];
    family.name = Name(&in, "f" + std::to_string(f) + "_", true);
    family.help = in.ConsumeRandomLengthString(64);
    family.type = static_cast<MetricType>(in.ConsumeIntegralInRange(0, 4));
    const size_t series = in.ConsumeIntegralInRange<size_t>(0, 5);
    for (size_t m = 0; m < series; ++m) {
      ClientMetric metric;
      const size_t labels = in.ConsumeIntegralInRange<size_t>(0, 4);
      for (size_t l = 0; l < labels; ++l) {
        metric.label.push_back(
            {Name(&in, "l" + std::to_string(l), false), in.ConsumeRandomLengthString(32)});
      }
      metric.counter.value = Value(&in);
      metric.gauge.value = Value(&in);
      metric.untyped.value = Value(&in);
      metric.summary.sample_count = in.ConsumeIntegral<std::uint64_t>();
      metric.summary.sample_sum = Value(&in);
      for (size_t q = in.ConsumeIntegralInRange<size_t>(0, 4); q > 0; --q) {
        metric.summary.quantile.push_back({Value(&in), Value(&in)});
      }
      metric.histogram.sample_count = in.ConsumeIntegral<std::uint64_t>();
      metric.histogram.sample_sum = Value(&in);
      for (size_t b = in.ConsumeIntegralInRange<size_t>(0, 20); b > 0; --b) {
        metric.histogram.bucket.push_back({in.ConsumeIntegral<std::uint64_t>(), Value(&in)});
      }
      if (in.ConsumeBool()) metric.timestamp_ms = in.ConsumeIntegral<std::int64_t>();
      sides[f].push_back(Side(&in, family, metric));
      family.metric.push_back(std::move(metric));
    }
  }
  const nvmeof::SideLookup side = [&](size_t f, size_t m) { return &sides[f][m]; };

  std::string text;
  nvmeof::AppendText(families, &text);
  std::string error;
  const auto parsed = nvmeof::test::ParseText(text, &error);
  if (!parsed) Fail("text does not parse", error + "\n" + text);
  if (auto e = nvmeof::test::CompareText(families, *parsed); !e.empty()) Fail("text differs", e);

  std::string proto;
  nvmeof::AppendProtobuf(families, side, &proto);
  if (proto != nvmeof::test::SerializeProtobufMessages(families, side)) {
    Fail("protobuf bytes differ from libprotobuf's", std::to_string(proto.size()) + " bytes");
  }
  if (auto e = nvmeof::test::CompareProtobuf(families, side, proto); !e.empty()) {
    Fail("protobuf differs", e);
  }

  std::string om, om_side;
  nvmeof::AppendOpenMetrics(families, &om);
  nvmeof::AppendOpenMetrics(families, side, &om_side);
  if (auto e = CompareOpenMetricsSide(om, om_side); !e.empty()) Fail("OpenMetrics side data", e);
  return 0;
}
