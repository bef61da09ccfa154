// Protobuf exposition: native histogram spans and deltas, the Accept header choice, and the
// output decoded by protoc against the same metrics.proto the build compiled.
#include "exporter/protobuf_exposition.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "bpf/hist.h"
#include "io/prometheus/client/metrics.pb.h"
#include "loader/histogram.h"

namespace nvmeof {
namespace {

namespace fs = std::filesystem;
using Span = NativeHistogram::Span;

std::vector<std::pair<std::int32_t, std::uint32_t>> Spans(const NativeHistogram& h) {
  std::vector<std::pair<std::int32_t, std::uint32_t>> out;
  for (const auto& s : h.positive_span) out.emplace_back(s.offset, s.length);
  return out;
}

NativeHistogram FromCounts(std::int32_t first, std::vector<std::uint64_t> counts) {
  NativeHistogram h;
  SetNativeBuckets(&h, first, counts.data(), counts.size());
  return h;
}

TEST(NativeHistogramTest, EmptyHasOneEmptySpan) {
  auto h = FromCounts(-183, std::vector<std::uint64_t>(217, 0));
  EXPECT_EQ(Spans(h), (decltype(Spans(h)){{0, 0}}));  // marks it native, as client_golang does
  EXPECT_TRUE(h.positive_delta.empty());
}

TEST(NativeHistogramTest, SingleBucket) {
  std::vector<std::uint64_t> c(217, 0);
  c[100] = 7;  // native index -183 + 100 = -83
  auto h = FromCounts(-183, c);
  EXPECT_EQ(Spans(h), (decltype(Spans(h)){{-83, 1}}));
  EXPECT_EQ(h.positive_delta, (std::vector<std::int64_t>{7}));
}

TEST(NativeHistogramTest, GapsOfTwoStayInTheSpanLongerGapsSplit) {
  //                 idx: 0  1  2  3  4  5  6  7  8  9
  auto h = FromCounts(10, {0, 5, 3, 0, 0, 4, 0, 0, 0, 1});
  // Span at 11: 5 3 0 0 4 (gap of two kept), then a gap of 3 (indices 16-18), span at 19.
  EXPECT_EQ(Spans(h), (decltype(Spans(h)){{11, 5}, {3, 1}}));
  EXPECT_EQ(h.positive_delta, (std::vector<std::int64_t>{5, -2, -3, 0, 4, -3}));
}

TEST(NativeHistogramTest, FromFineBucketsZeroAndOverflow) {
  std::vector<unsigned long long> fine(NVMEOF_HIST_BUCKETS, 0);
  fine[nvmeof_hist_index(50)] = 2;                  // zero bucket
  fine[nvmeof_hist_index(1'000'000)] = 3;           // 1 ms: native ceil(8*log2(1e-3)) = -79
  fine[nvmeof_hist_index(100'000'000'000ULL)] = 4;  // 100 s: overflow, as native 33
  auto h = NativeFromFine(fine.data(), false);
  EXPECT_EQ(h->schema, 3);
  EXPECT_DOUBLE_EQ(h->zero_threshold, std::ldexp(1.0, -23));
  EXPECT_EQ(h->zero_count, 2u);
  EXPECT_EQ(Spans(*h), (decltype(Spans(*h)){{-79, 1}, {111, 1}}));  // -79 + 1 + 111 = 33
  EXPECT_EQ(h->positive_delta, (std::vector<std::int64_t>{3, 1}));
  // Count equals the classic count: zero + every bucket.
  std::int64_t running = 0, total = static_cast<std::int64_t>(h->zero_count);
  for (auto d : h->positive_delta) total += (running += d);
  EXPECT_EQ(total, 9);
  // 1 ms lies in native bucket -79: (2^(-80/8), 2^(-79/8)] s.
  EXPECT_LT(NativeBucketBound(-80), 1e-3);
  EXPECT_GE(NativeBucketBound(-79), 1e-3);
}

MetricSink Sample(const std::string& mode) {
  MetricSink sink;
  sink.Counter("requests_total", "Requests.", {{"disk", "loop0"}}, 5);
  sink.Gauge("up_ish", "", {}, 1);
  std::vector<unsigned long long> fine(NVMEOF_HIST_BUCKETS, 0);
  fine[0] = 1;
  fine[nvmeof_hist_index(100'000)] = 2;  // 100 us
  fine[nvmeof_hist_index(120'000)] = 1;
  const auto layout = BucketLayout::Default();
  auto native = mode == "classic" ? nullptr : NativeFromFine(fine.data(), mode == "both");
  // A label value that needs sanitizing: it still is, on this path.
  sink.Histogram("lat_seconds", "Latency.", {{"disk", std::string("bad\xff")}}, layout.bounds(),
                 layout.Cumulative(fine.data()), 4, 0.00032, native);
  sink.Histogram(
      "lat_seconds", "Latency.", {{"disk", "empty"}}, layout.bounds(),
      std::vector<std::uint64_t>(layout.bounds().size(), 0), 0, 0,
      mode == "classic"
          ? nullptr
          : NativeFromFine(std::vector<unsigned long long>(NVMEOF_HIST_BUCKETS, 0).data(),
                           mode == "both"));
  return sink;
}

// The messages of a delimited stream: each one follows its varint length.
std::vector<std::string> SplitDelimited(const std::string& data) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < data.size()) {
    std::uint64_t n = 0;
    int shift = 0;
    while (true) {
      const auto b = static_cast<unsigned char>(data.at(pos++));
      n |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
    out.push_back(data.substr(pos, n));
    pos += n;
  }
  return out;
}

std::vector<io::prometheus::client::MetricFamily> Parse(const std::string& data) {
  std::vector<io::prometheus::client::MetricFamily> out;
  for (const auto& message : SplitDelimited(data)) {
    out.emplace_back();
    EXPECT_TRUE(out.back().ParseFromString(message));
  }
  return out;
}

TEST(ProtobufExpositionTest, NativeModeCarriesNativeBucketsOnly) {
  auto families = Parse(SerializeProtobuf(Sample("native")));
  ASSERT_EQ(families.size(), 3u);
  EXPECT_EQ(families[0].name(), "requests_total");
  EXPECT_EQ(families[0].type(), io::prometheus::client::COUNTER);
  EXPECT_EQ(families[0].metric(0).counter().value(), 5);
  EXPECT_FALSE(families[1].has_help());
  const auto& lat = families[2];
  EXPECT_EQ(lat.type(), io::prometheus::client::HISTOGRAM);
  ASSERT_EQ(lat.metric_size(), 2);
  EXPECT_EQ(lat.metric(0).label(0).value(), "bad\xef\xbf\xbd");  // sanitized (U+FFFD)
  const auto& h = lat.metric(0).histogram();
  EXPECT_EQ(h.sample_count(), 4u);
  EXPECT_DOUBLE_EQ(h.sample_sum(), 0.00032);
  EXPECT_EQ(h.bucket_size(), 0);
  EXPECT_EQ(h.schema(), 3);
  EXPECT_EQ(h.zero_count(), 1u);
  // 100 us: native -106 (2^(-106/8) s = 102.6 us); 120 us: -104 (122.1 us). Gap of one kept.
  ASSERT_EQ(h.positive_span_size(), 1);
  EXPECT_EQ(h.positive_span(0).offset(), -106);
  EXPECT_EQ(h.positive_span(0).length(), 3u);
  EXPECT_EQ(std::vector<std::int64_t>(h.positive_delta().begin(), h.positive_delta().end()),
            (std::vector<std::int64_t>{2, -2, 1}));
  const auto& empty = lat.metric(1).histogram();
  EXPECT_EQ(empty.sample_count(), 0u);
  ASSERT_EQ(empty.positive_span_size(), 1);
  EXPECT_EQ(empty.positive_span(0).length(), 0u);
  EXPECT_GT(empty.zero_threshold(), 0);
}

TEST(ProtobufExpositionTest, ClassicAndBothModes) {
  auto classic = Parse(SerializeProtobuf(Sample("classic")));
  const auto& c = classic[2].metric(0).histogram();
  EXPECT_EQ(c.bucket_size(), 16);  // +Inf left out: it is sample_count
  EXPECT_EQ(c.positive_span_size(), 0);
  EXPECT_FALSE(c.has_schema());
  auto both = Parse(SerializeProtobuf(Sample("both")));
  const auto& b = both[2].metric(0).histogram();
  EXPECT_EQ(b.bucket_size(), 16);
  EXPECT_EQ(b.positive_span_size(), 1);
  EXPECT_EQ(b.bucket(15).cumulative_count(), 4u);
}

// The bytes decode with protoc itself against the schema the build compiled.
TEST(ProtobufExpositionTest, DecodesWithProtoc) {
  const std::string data = SerializeProtobuf(Sample("both"));
  const fs::path dir = fs::temp_directory_path() / ("nvmeof_pb_" + std::to_string(getpid()));
  fs::create_directories(dir);
  // protoc --decode reads one message; the delimited stream is split at its varint prefixes.
  int n_messages = 0;
  std::string decoded;
  for (const auto& message : SplitDelimited(data)) {
    const fs::path file = dir / ("m" + std::to_string(n_messages++));
    std::ofstream(file, std::ios::binary) << message;
    const std::string cmd =
        std::string(NVMEOF_PROTOC) + " --proto_path=" + NVMEOF_CLIENT_MODEL_DIR +
        " --proto_path=/usr/include" + " --decode=io.prometheus.client.MetricFamily" +
        " io/prometheus/client/metrics.proto < " + file.string() + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_TRUE(p);
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, p)) > 0) decoded.append(buf, got);
    EXPECT_EQ(pclose(p), 0) << decoded;
  }
  fs::remove_all(dir);
  EXPECT_EQ(n_messages, 3);
  EXPECT_NE(decoded.find("name: \"lat_seconds\""), std::string::npos) << decoded;
  EXPECT_NE(decoded.find("type: HISTOGRAM"), std::string::npos) << decoded;
  EXPECT_NE(decoded.find("schema: 3"), std::string::npos) << decoded;
  EXPECT_NE(decoded.find("zero_threshold: 1.1920928955078125e-07"), std::string::npos) << decoded;
  EXPECT_NE(decoded.find("offset: -106"), std::string::npos) << decoded;
  EXPECT_NE(decoded.find("positive_delta: -2"), std::string::npos) << decoded;
  EXPECT_NE(decoded.find("upper_bound: 0.25"), std::string::npos) << decoded;
  EXPECT_NE(decoded.find("value: 5"), std::string::npos) << decoded;
}

TEST(ProtobufExpositionTest, AppendKeepsNativeBesideItsSeries) {
  MetricSink a = Sample("native");
  MetricSink b;
  b.Histogram("lat_seconds", "Latency.", {{"disk", "classic_only"}}, {1.0}, {1}, 1, 0.5);
  b.Append(Sample("native"));
  // The same series again: the copies are skipped (MetricSink's duplicate check, on every
  // family), the histograms' native buckets with them.
  b.Append(std::move(a));
  const auto* f = b.Find("lat_seconds");
  ASSERT_TRUE(f);
  ASSERT_EQ(f->metric.size(), 3u);
  EXPECT_EQ(b.skipped(), 4u);  // lat_seconds x2, requests_total, up_ish
  size_t fi = 0;
  while (b.families()[fi].name != "lat_seconds") ++fi;
  EXPECT_EQ(b.NativeOf(fi, 0), nullptr);
  for (size_t m = 1; m < 3; ++m) EXPECT_NE(b.NativeOf(fi, m), nullptr) << m;
  EXPECT_EQ(b.NativeOf(fi, 3), nullptr);
  EXPECT_EQ(b.NativeOf(0, 0), nullptr);
}

}  // namespace
}  // namespace nvmeof
