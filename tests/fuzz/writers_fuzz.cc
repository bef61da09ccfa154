// libFuzzer target for the exposition writers as round trips: the input builds a model
// (families of every type; names, HELP and label values of any bytes, quotes, backslashes,
// newlines and UTF-8 included; values of any bit pattern, NaN, +-Inf and -0 included;
// histograms with classic and native buckets), which is then
// (a) written as text (AppendText) and parsed back by the strict parser of
//     tests/unit/exposition_support.h: it must parse and equal the model;
// (b) written as protobuf (AppendProtobuf): the bytes must be libprotobuf's for the same
//     messages, and libprotobuf must parse them back (ParseDelimitedFromZeroCopyStream) equal
//     to the model.
// Seeds: tests/fuzz/seeds.py (any bytes make a model).
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
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

[[noreturn]] void Fail(const char* what, const std::string& why) {
  std::fprintf(stderr, "writers_fuzz: %s: %s\n", what, why.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  std::vector<MetricFamily> families(in.ConsumeIntegralInRange<size_t>(0, 6));
  std::vector<std::vector<std::shared_ptr<nvmeof::NativeHistogram>>> natives(families.size());
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
      natives[f].push_back(family.type == MetricType::Histogram && in.ConsumeBool() ? Native(&in)
                                                                                    : nullptr);
      family.metric.push_back(std::move(metric));
    }
  }
  const nvmeof::NativeLookup native = [&](size_t f, size_t m) { return natives[f][m].get(); };

  std::string text;
  nvmeof::AppendText(families, &text);
  std::string error;
  const auto parsed = nvmeof::test::ParseText(text, &error);
  if (!parsed) Fail("text does not parse", error + "\n" + text);
  if (auto e = nvmeof::test::CompareText(families, *parsed); !e.empty()) Fail("text differs", e);

  std::string proto;
  nvmeof::AppendProtobuf(families, native, &proto);
  if (proto != nvmeof::test::SerializeProtobufMessages(families, native)) {
    Fail("protobuf bytes differ from libprotobuf's", std::to_string(proto.size()) + " bytes");
  }
  if (auto e = nvmeof::test::CompareProtobuf(families, native, proto); !e.empty()) {
    Fail("protobuf differs", e);
  }
  return 0;
}
