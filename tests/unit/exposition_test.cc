// The exposition writers: text (AppendText) against prometheus-cpp's TextSerializer and
// through a strict parser, protobuf (AppendProtobuf) against libprotobuf's own serialization
// and parsed back by it. The fuzz target tests/fuzz/writers_fuzz.cc checks the same two round
// trips on generated models.
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <limits>
#include <memory>
#include <sstream>

#include "exporter/protobuf_exposition.h"
#include "exporter/text_exposition.h"
#include "tests/unit/exposition_support.h"

namespace nvmeof {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// A series whose value is v whatever the family type.
ClientMetric Series(std::vector<ClientMetric::Label> labels, double v) {
  ClientMetric m;
  m.label = std::move(labels);
  m.counter.value = m.gauge.value = m.untyped.value = v;
  return m;
}

ClientMetric Hist(std::vector<ClientMetric::Label> labels, std::vector<double> bounds,
                  std::uint64_t count, double sum, bool with_inf) {
  ClientMetric m;
  m.label = std::move(labels);
  m.histogram.sample_count = count;
  m.histogram.sample_sum = sum;
  std::uint64_t c = 0;
  for (double b : bounds) {
    c += count / (bounds.size() + 1);
    m.histogram.bucket.push_back({c, b});
  }
  if (with_inf) m.histogram.bucket.push_back({count, INFINITY});
  return m;
}

// Values every formatting agrees on (integers, short decimals): TextSerializer's output and
// ours must be the same bytes.
std::vector<MetricFamily> PlainModel() {
  std::vector<MetricFamily> f(6);
  f[0] = {"nvmeof_a_total", "A counter.", MetricType::Counter, {}};
  f[0].metric.push_back(
      Series({{"rdma_device", "mlx5_0"}, {"q", "say \"hi\" \\ there\nnext"}}, 4390187342117));
  f[0].metric.push_back(Series({}, 0));
  f[1] = {"nvmeof_b", "", MetricType::Gauge, {}};
  f[1].metric.push_back(Series({{"x", "\xc3\xa9t\xc3\xa9"}}, 9.2156));
  f[1].metric.push_back(Series({{"x", ""}}, -1.5));
  f[1].metric.push_back(Series({{"x", "inf"}}, INFINITY));
  f[1].metric.back().timestamp_ms = 1700000000123;
  f[2] = {"nvmeof_c_seconds", "Latency.", MetricType::Histogram, {}};
  f[2].metric.push_back(Hist({{"op", "read"}}, {0.0001, 0.00025, 0.5, 2}, 1000, 12.5, false));
  f[2].metric.push_back(Hist({}, {1, 2}, 7, 3, true));
  f[2].metric.push_back(Hist({{"op", "none"}}, {}, 0, 0, false));
  f[3] = {"nvmeof_d", "Summary.", MetricType::Summary, {}};
  ClientMetric s;
  s.label = {{"k", "v"}};
  s.summary.sample_count = 10;
  s.summary.sample_sum = 2.25;
  s.summary.quantile = {{0.5, 0.125}, {0.99, 1}};
  f[3].metric.push_back(s);
  f[4] = {"nvmeof_e", "Untyped.", MetricType::Untyped, {}};
  f[4].metric.push_back(Series({{"a", "1"}, {"b", "2"}}, 1e-07));
  f[5] = {"nvmeof_empty", "No series.", MetricType::Gauge, {}};
  return f;
}

// Everything a writer can get wrong.
std::vector<MetricFamily> HostileModel() {
  auto f = PlainModel();
  f[1].help = "Help with a \\ backslash and a\nnewline.";
  const double values[] = {std::nan(""),
                           -INFINITY,
                           -0.0,
                           0.1 + 0.2,
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::denorm_min(),
                           -std::numeric_limits<double>::min(),
                           1e16,
                           9007199254740993.0,
                           123456789012345678.0,
                           1e-5,
                           1.0905077326652577e-06};
  for (double v : values) {
    f[1].metric.push_back(Series({{"v", "\"\\\n\\n\"}{,="}, {"u", "\xf0\x9f\x92\xa9 \t\r"}}, v));
  }
  f[1].metric.back().timestamp_ms = -5;
  f[2].metric.push_back(Hist({{"op", "x"}}, {1.0905077326652577e-06, 0.1 + 0.2, 1e300},
                             std::numeric_limits<std::uint64_t>::max(), std::nan(""), false));
  f[3].metric[0].summary.quantile.push_back({0.1 + 0.7, -0.0});
  return f;
}

std::string Ours(const std::vector<MetricFamily>& f) {
  std::string out;
  AppendText(f, &out);
  return out;
}

TEST(TextExpositionTest, SameBytesAsTextSerializerOnPlainValues) {
  const auto model = PlainModel();
  std::ostringstream theirs;
  prometheus::TextSerializer().Serialize(theirs, model);
  EXPECT_EQ(Ours(model), theirs.str());
}

TEST(TextExpositionTest, FloatsRoundTripWhereTextSerializerRounds) {
  auto text = [](double v) {
    std::string s;
    AppendTextDouble(v, &s);
    return s;
  };
  EXPECT_EQ(text(0.1 + 0.2), "0.30000000000000004");  // TextSerializer: 0.3
  EXPECT_EQ(text(123456789012345678.0), "1.2345678901234568e+17");
  EXPECT_EQ(text(4390187342117), "4390187342117");  // counters stay digits
  EXPECT_EQ(text(9007199254740992.0), "9007199254740992");
  EXPECT_EQ(text(1e16), "1e+16");
  EXPECT_EQ(text(1e-7), "1e-07");
  EXPECT_EQ(text(0.0001), "0.0001");
  EXPECT_EQ(text(-0.0), "-0");
  EXPECT_EQ(text(std::nan("")), "NaN");  // TextSerializer: Nan
  EXPECT_EQ(text(-INFINITY), "-Inf");
  EXPECT_EQ(text(INFINITY), "+Inf");
}

TEST(TextExpositionTest, HelpIsEscaped) {
  std::vector<MetricFamily> f(1);
  f[0] = {"m", "a\\b\nc", MetricType::Gauge, {}};
  EXPECT_EQ(Ours(f), "# HELP m a\\\\b\\nc\n# TYPE m gauge\n");
}

// Property (a): what AppendText writes, a strict parser reads back equal to the model.
TEST(TextExpositionTest, RoundTripThroughStrictParser) {
  for (const auto& model : {PlainModel(), HostileModel()}) {
    const std::string text = Ours(model);
    std::string error;
    const auto parsed = test::ParseText(text, &error);
    ASSERT_TRUE(parsed) << error << "\n" << text;
    EXPECT_EQ(test::CompareText(model, *parsed), "") << text;
  }
}

// The round trip only means something if the parser rejects what the format forbids, and
// the comparison notices a changed value.
TEST(TextExpositionTest, StrictParserRejectsMalformedText) {
  const char* bad[] = {
      "# TYPE m gauge\nm 1",                     // no final newline
      "m 1\n",                                   // sample before TYPE
      "# TYPE m gauge\nm{a=\"x\"y\"} 1\n",       // unescaped quote
      "# TYPE m gauge\nm{a=\"\\t\"} 1\n",        // escape that does not exist
      "# TYPE m gauge\nm{a=\"1\",a=\"2\"} 1\n",  // label twice
      "# TYPE m gauge\nm 1.\n",                  // not a float
      "# TYPE m gauge\nm Nan\n",                 // not our spelling
      "# TYPE m gauge\nn 1\n",                   // another family's sample
      "# TYPE m histogram\nm 1\n",               // histograms have suffixes
      "# TYPE m gauge\nm{1a=\"x\"} 1\n",         // bad label name
      "# HELP m a\\tb\n# TYPE m gauge\n",        // bad escape in HELP
      "# TYPE m gauge\nm 1 12x\n",               // bad timestamp
      "# TYPE m gauge\n\n",                      // blank line
  };
  for (const char* text : bad) {
    std::string error;
    EXPECT_FALSE(test::ParseText(text, &error)) << text;
  }
  auto model = PlainModel();
  const std::string text = Ours(model);
  std::string error;
  const auto parsed = test::ParseText(text, &error);
  ASSERT_TRUE(parsed) << error;
  model[1].metric[0].gauge.value = std::nextafter(9.2156, 10.0);
  EXPECT_NE(test::CompareText(model, *parsed), "");
  model = PlainModel();
  model[0].metric[0].label[1].value += "x";
  EXPECT_NE(test::CompareText(model, *parsed), "");
}

std::shared_ptr<NativeHistogram> Native(std::int32_t first, std::vector<std::uint64_t> counts,
                                        bool with_classic) {
  auto h = std::make_shared<NativeHistogram>();
  SetNativeBuckets(h.get(), first, counts.data(), counts.size());
  h->zero_threshold = 1.2e-7;
  h->zero_count = 3;
  h->with_classic = with_classic;
  return h;
}

// Property (b): AppendProtobuf's bytes are libprotobuf's for the same messages, and parse back
// (ParseDelimitedFromZeroCopyStream) equal to the model, native buckets included.
TEST(ProtobufExpositionTest, SameBytesAsLibprotobufAndRoundTrip) {
  auto model = HostileModel();
  // Over 127 and over 16383 bytes: the length placeholders have to widen.
  model[0].metric.push_back(Series({{"long", std::string(200, 'x')}}, 1));
  model[0].metric.push_back(Series({{"long", std::string(20000, 'y')}}, 2));
  std::vector<std::uint64_t> gapped(40, 0);
  gapped[0] = 5;
  gapped[3] = 1;
  gapped[39] = 1000000;
  const std::vector<std::shared_ptr<NativeHistogram>> natives = {
      Native(-183, gapped, false), nullptr, Native(0, {}, true), Native(-2, {7}, false)};
  const NativeLookup native = [&](size_t f, size_t m) -> const NativeHistogram* {
    return f == 2 && m < natives.size() ? natives[m].get() : nullptr;
  };
  std::string ours;
  AppendProtobuf(model, native, &ours);
  EXPECT_EQ(ours, test::SerializeProtobufMessages(model, native));
  EXPECT_EQ(test::CompareProtobuf(model, native, ours), "");
  // And the comparison notices a change.
  model[2].metric[0].histogram.sample_count -= 1;
  EXPECT_NE(test::CompareProtobuf(model, native, ours), "");
}

}  // namespace
}  // namespace nvmeof

namespace nvmeof {
namespace {

std::string OpenMetrics(const std::vector<MetricFamily>& f) {
  std::string out;
  AppendOpenMetrics(f, &out);
  return out;
}

TEST(OpenMetricsExpositionTest, PlainModel) {
  auto model = PlainModel();
  model.push_back({"nvmeof_f", "A counter without the suffix.", MetricType::Counter, {}});
  model.back().metric.push_back(Series({}, 3));
  EXPECT_EQ(OpenMetrics(model),
            "# TYPE nvmeof_a counter\n"
            "# HELP nvmeof_a A counter.\n"
            "nvmeof_a_total{rdma_device=\"mlx5_0\",q=\"say \\\"hi\\\" \\\\ there\\nnext\"} "
            "4390187342117\n"
            "nvmeof_a_total 0\n"
            "# TYPE nvmeof_b gauge\n"
            "nvmeof_b{x=\"\xc3\xa9t\xc3\xa9\"} 9.2156\n"
            "nvmeof_b{x=\"\"} -1.5\n"
            "nvmeof_b{x=\"inf\"} +Inf 1700000000.123\n"
            "# TYPE nvmeof_c_seconds histogram\n"
            "# HELP nvmeof_c_seconds Latency.\n"
            "nvmeof_c_seconds_bucket{op=\"read\",le=\"0.0001\"} 200\n"
            "nvmeof_c_seconds_bucket{op=\"read\",le=\"0.00025\"} 400\n"
            "nvmeof_c_seconds_bucket{op=\"read\",le=\"0.5\"} 600\n"
            "nvmeof_c_seconds_bucket{op=\"read\",le=\"2\"} 800\n"
            "nvmeof_c_seconds_bucket{op=\"read\",le=\"+Inf\"} 1000\n"
            "nvmeof_c_seconds_sum{op=\"read\"} 12.5\n"
            "nvmeof_c_seconds_count{op=\"read\"} 1000\n"
            "nvmeof_c_seconds_bucket{le=\"1\"} 2\n"
            "nvmeof_c_seconds_bucket{le=\"2\"} 4\n"
            "nvmeof_c_seconds_bucket{le=\"+Inf\"} 7\n"
            "nvmeof_c_seconds_sum 3\n"
            "nvmeof_c_seconds_count 7\n"
            "nvmeof_c_seconds_bucket{op=\"none\",le=\"+Inf\"} 0\n"
            "nvmeof_c_seconds_sum{op=\"none\"} 0\n"
            "nvmeof_c_seconds_count{op=\"none\"} 0\n"
            "# TYPE nvmeof_d summary\n"
            "# HELP nvmeof_d Summary.\n"
            "nvmeof_d{k=\"v\",quantile=\"0.5\"} 0.125\n"
            "nvmeof_d{k=\"v\",quantile=\"0.99\"} 1\n"
            "nvmeof_d_sum{k=\"v\"} 2.25\n"
            "nvmeof_d_count{k=\"v\"} 10\n"
            "# TYPE nvmeof_e unknown\n"
            "# HELP nvmeof_e Untyped.\n"
            "nvmeof_e{a=\"1\",b=\"2\"} 1e-07\n"
            "# TYPE nvmeof_empty gauge\n"
            "# HELP nvmeof_empty No series.\n"
            "# TYPE nvmeof_f unknown\n"
            "# HELP nvmeof_f A counter without the suffix.\n"
            "nvmeof_f 3\n"
            "# EOF\n");
}

TEST(OpenMetricsExpositionTest, HelpEscapesQuotesAndSamplesMatchText) {
  const auto model = HostileModel();
  const std::string om = OpenMetrics(model);
  EXPECT_NE(om.find("# HELP nvmeof_b Help with a \\\\ backslash and a\\nnewline.\n"),
            std::string::npos);
  ASSERT_GE(om.size(), 6u);
  EXPECT_EQ(om.substr(om.size() - 6), "# EOF\n");
  // Every sample line of the 0.0.4 text is in the OpenMetrics text as it is.
  std::string text;
  AppendText(model, &text);
  size_t start = 0, lines = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start + 1);
    start = end + 1;
    // Buckets go before _sum and _count; the two series with a timestamp (1700000000123 ms,
    // -5 ms) write it in seconds.
    if (line[0] == '#' || line.find("_bucket") != std::string::npos ||
        line.rfind("nvmeof_b{x=\"inf\"}", 0) == 0 || line.ends_with(" -5\n")) {
      continue;
    }
    ++lines;
    EXPECT_NE(om.find(line), std::string::npos) << line;
  }
  EXPECT_GT(lines, 20u);
}

}  // namespace
}  // namespace nvmeof
