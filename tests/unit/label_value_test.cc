#include "base/label_value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "base/metric_sink.h"
#include "tests/unit/sink_query.h"

namespace nvmeof {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

// The sanitized form of `in`, and whether the sanitizer said it changed it.
std::string Clean(std::string in, bool* changed = nullptr) {
  const bool c = SanitizeLabelValue(&in);
  if (changed) *changed = c;
  return in;
}

void ExpectUnchanged(const std::string& in) {
  bool changed = true;
  EXPECT_EQ(Clean(in, &changed), in);
  EXPECT_FALSE(changed) << in;
}

TEST(LabelValue, ValidInputIsUnchanged) {
  ExpectUnchanged("");
  ExpectUnchanged("mlx5_0");
  ExpectUnchanged("nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0035-4b10-8044-b4c04f4d3232");
  ExpectUnchanged("quote \" backslash \\ brace }");  // the text format escapes these itself
  ExpectUnchanged("caf\xC3\xA9");                    // 2-byte é
  ExpectUnchanged("\xE2\x82\xAC 10");                // 3-byte €
  ExpectUnchanged("disk \xF0\x9F\x92\xBE ok");       // 4-byte emoji U+1F4BE
  ExpectUnchanged("\xF4\x8F\xBF\xBF");               // U+10FFFF, the last code point
  ExpectUnchanged("\xED\x9F\xBF\xEE\x80\x80");       // U+D7FF and U+E000, around surrogates
  ExpectUnchanged("\xC2\xA0");                       // U+00A0, first after C1
  ExpectUnchanged(kFffd);
  ExpectUnchanged(std::string(kMaxLabelValueBytes, 'a'));
}

TEST(LabelValue, StrayContinuationBytes) {
  EXPECT_EQ(Clean("a\x80z"), "a" + kFffd + "z");
  EXPECT_EQ(Clean("\xBF\xBF"), kFffd + kFffd);
  EXPECT_EQ(Clean("\xC3\xA9\xA9"), "\xC3\xA9" + kFffd);  // one too many
}

TEST(LabelValue, BytesNeverValid) {
  EXPECT_EQ(Clean("\xFF\xFE"), kFffd + kFffd);
  EXPECT_EQ(Clean("\xF8\x88\x80\x80\x80"), kFffd + kFffd + kFffd + kFffd + kFffd);  // 5-byte form
}

TEST(LabelValue, OverlongForms) {
  EXPECT_EQ(Clean("\xC0\xAF"), kFffd + kFffd);  // '/' in 2 bytes
  EXPECT_EQ(Clean("\xC1\xBF"), kFffd + kFffd);
  EXPECT_EQ(Clean("\xC0\x80"), kFffd + kFffd);              // "modified UTF-8" NUL
  EXPECT_EQ(Clean("\xE0\x80\xAF"), kFffd + kFffd + kFffd);  // '/' in 3 bytes
  EXPECT_EQ(Clean("\xE0\x9F\xBF"), kFffd + kFffd + kFffd);  // U+07FF in 3 bytes
  EXPECT_EQ(Clean("\xF0\x80\x80\xAF"), kFffd + kFffd + kFffd + kFffd);
  EXPECT_EQ(Clean("\xF0\x8F\xBF\xBF"), kFffd + kFffd + kFffd + kFffd);  // U+FFFF in 4 bytes
}

TEST(LabelValue, Surrogates) {
  EXPECT_EQ(Clean("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // U+D800
  EXPECT_EQ(Clean("\xED\xBF\xBF"), kFffd + kFffd + kFffd);  // U+DFFF
  // CESU-8 pair for U+1F4BE.
  EXPECT_EQ(Clean("\xED\xA0\xBD\xED\xB2\xBE"), kFffd + kFffd + kFffd + kFffd + kFffd + kFffd);
}

TEST(LabelValue, AboveMaxCodePoint) {
  EXPECT_EQ(Clean("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // U+110000
  EXPECT_EQ(Clean("\xF5\x80\x80\x80"), kFffd + kFffd + kFffd + kFffd);
  EXPECT_EQ(Clean("\xF7\xBF\xBF\xBF"), kFffd + kFffd + kFffd + kFffd);
}

TEST(LabelValue, TruncatedSequences) {
  // A truncated sequence is one maximal subpart: one U+FFFD, then decoding resumes.
  EXPECT_EQ(Clean("\xE2\x82"), kFffd);
  EXPECT_EQ(Clean("\xE2\x82x"), kFffd + "x");
  EXPECT_EQ(Clean("\xF0\x9F\x98"), kFffd);
  EXPECT_EQ(Clean("\xF0\x9F\x98 ok"), kFffd + " ok");
  EXPECT_EQ(Clean("\xC3"), kFffd);
  EXPECT_EQ(Clean("\xE2\x82\xC3\xA9"), kFffd + "\xC3\xA9");  // a new lead byte starts over
  EXPECT_EQ(Clean("x\xF0\x9F"), "x" + kFffd);
}

TEST(LabelValue, NulAndControlsAreRemoved) {
  EXPECT_EQ(Clean(std::string("mlx5\0_0", 7)), "mlx5_0");
  EXPECT_EQ(Clean(std::string("\0\0\0", 3)), "");
  EXPECT_EQ(Clean("host-a\n"), "host-a");  // sysfs' trailing newline
  EXPECT_EQ(Clean("a\tb\rc\x1b[31md\x7f"), "abc[31md");
  EXPECT_EQ(Clean("x\xC2\x85y\xC2\x9Fz"), "xyz");  // C1: NEL, APC
  bool changed = false;
  Clean("\x01", &changed);
  EXPECT_TRUE(changed);
  // The issue's own example: raw bytes 00 ff fe.
  EXPECT_EQ(Clean(std::string("SN\0\xFF\xFE", 5)), "SN" + kFffd + kFffd);
}

TEST(LabelValue, LengthBoundWithMark) {
  const std::string mark(kLabelValueTruncationMark);
  bool changed = false;
  const std::string out = Clean(std::string(kMaxLabelValueBytes + 1, 'a'), &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out, std::string(kMaxLabelValueBytes - mark.size(), 'a') + mark);
  EXPECT_EQ(out.size(), kMaxLabelValueBytes);
  EXPECT_EQ(Clean(std::string(100 * 1024, 'b')).size(), kMaxLabelValueBytes);
  // Removed controls do not count towards the bound.
  ExpectUnchanged(std::string(kMaxLabelValueBytes, 'c'));
  EXPECT_EQ(Clean(std::string(kMaxLabelValueBytes, 'c') + "\n"),
            std::string(kMaxLabelValueBytes, 'c'));
}

TEST(LabelValue, CutOnCodePointBoundary) {
  const std::string mark(kLabelValueTruncationMark);
  const std::string emoji = "\xF0\x9F\x92\xBE";
  // Every alignment of 4-byte characters against the cut.
  for (size_t pad = 0; pad < 4; ++pad) {
    std::string in(pad, 'p');
    while (in.size() <= kMaxLabelValueBytes) in += emoji;
    const std::string out = Clean(in);
    ASSERT_LE(out.size(), kMaxLabelValueBytes);
    ASSERT_GT(out.size(), kMaxLabelValueBytes - 4 - mark.size());
    EXPECT_EQ(out.substr(out.size() - mark.size()), mark);
    const std::string body = out.substr(0, out.size() - mark.size());
    EXPECT_EQ(body.substr(0, pad), std::string(pad, 'p'));
    EXPECT_EQ((body.size() - pad) % 4, 0u) << "cut inside a code point, pad " << pad;
    ExpectUnchanged(out);  // idempotent
  }
}

TEST(LabelValue, Idempotent) {
  for (std::string in : {std::string("\xE2\x82\xC0\xAF\xED\xA0\x80 x\0y", 11),
                         std::string(2000, '\xFF'), std::string("\xF0\x9F\x98\x80", 4) + "\n"}) {
    const std::string once = Clean(in);
    ExpectUnchanged(once);
  }
}

TEST(LabelName, Syntax) {
  EXPECT_TRUE(IsValidLabelName("rdma_device"));
  EXPECT_TRUE(IsValidLabelName("_x9"));
  EXPECT_FALSE(IsValidLabelName(""));
  EXPECT_FALSE(IsValidLabelName("9x"));
  EXPECT_FALSE(IsValidLabelName("a-b"));
  EXPECT_FALSE(IsValidLabelName("__name__"));
  EXPECT_TRUE(IsValidMetricName("nvmeof:recorded_total"));
  EXPECT_FALSE(IsValidMetricName("nvmeof-x"));
}

TEST(MetricSinkSanitize, CountsChangedValues) {
  MetricSink sink;
  sink.Gauge("nvmeof_x_info", "h", {{"model", std::string("SSD\0\xFF", 5)}, {"serial", "ok"}}, 1);
  sink.Gauge("nvmeof_x_info", "h", {{"model", "fine"}, {"serial", "fine"}}, 1);
  sink.Counter("nvmeof_y_total", "h", {{"nqn", std::string(5000, 'n')}}, 3);
  EXPECT_EQ(sink.sanitized(), 2u);
  EXPECT_EQ(Select(sink, "nvmeof_x_info", {{"model", "SSD" + kFffd}}).size(), 1u);
  const auto y = Select(sink, "nvmeof_y_total");
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0]->label[0].value.size(), kMaxLabelValueBytes);

  MetricSink total;
  total.Append(std::move(sink));
  EXPECT_EQ(total.sanitized(), 2u);
}

TEST(MetricSinkSanitize, NonFiniteValues) {
  const double inf = std::numeric_limits<double>::infinity();
  MetricSink sink;
  sink.Gauge("nvmeof_g", "h", {{"k", "nan"}}, std::nan(""));
  sink.Gauge("nvmeof_g", "h", {{"k", "-inf"}}, -inf);
  sink.Gauge("nvmeof_g", "h", {{"k", "+inf"}}, inf);  // documented meaning, e.g. "off"
  sink.Counter("nvmeof_c_total", "h", {{"k", "nan"}}, std::nan(""));
  sink.Counter("nvmeof_c_total", "h", {{"k", "inf"}}, inf);
  sink.Counter("nvmeof_c_total", "h", {{"k", "ok"}}, 1);
  sink.Histogram("nvmeof_h_seconds", "h", {{"k", "nan"}}, {1.0}, {1}, 1, std::nan(""));
  EXPECT_EQ(sink.skipped(), 5u);
  EXPECT_EQ(Select(sink, "nvmeof_g").size(), 1u);
  EXPECT_EQ(Value(sink, "nvmeof_g", {{"k", "+inf"}}), inf);
  EXPECT_EQ(Select(sink, "nvmeof_c_total").size(), 1u);
  EXPECT_EQ(Select(sink, "nvmeof_h_seconds").size(), 0u);
}

TEST(MetricSinkSanitize, InvalidLabelNameIsSkipped) {
  MetricSink sink;
  sink.Gauge("nvmeof_g", "h", {{"bad-name", "v"}}, 1);
  EXPECT_EQ(sink.skipped(), 1u);
  EXPECT_EQ(Select(sink, "nvmeof_g").size(), 0u);
}

// A netdev name with control characters sanitizes to one already served (a chaos tree's
// gid_attrs/ndevs): the second series is skipped in either order, not served twice.
TEST(MetricSinkSanitize, DuplicateAfterSanitizingIsSkipped) {
  for (bool dirty_first : {false, true}) {
    SCOPED_TRACE(dirty_first ? "sanitized value first" : "clean value first");
    MetricSink sink;
    const std::string clean = "ens1f0np0";
    const std::string dirty =
        "\x7f\rens1f\x7f"
        "0np0";
    sink.Gauge("nvmeof_p_info", "h", {{"netdev", dirty_first ? dirty : clean}}, 1);
    sink.Gauge("nvmeof_p_info", "h", {{"netdev", "other"}}, 1);
    sink.Gauge("nvmeof_p_info", "h", {{"netdev", dirty_first ? clean : dirty}}, 1);
    EXPECT_EQ(Select(sink, "nvmeof_p_info").size(), 2u);
    EXPECT_EQ(sink.skipped(), 1u);
  }
}

TEST(MetricSinkSanitize, DuplicateAcrossAppendIsSkippedWithItsNativeBuckets) {
  auto native = std::make_shared<NativeHistogram>();
  MetricSink a;
  a.Histogram("nvmeof_h_seconds", "h", {{"netdev", "eth0"}}, {1.0}, {1}, 1, 0.5, native);
  MetricSink b;
  b.Histogram("nvmeof_h_seconds", "h",
              {{"netdev",
                "eth\x01"
                "0"}},
              {1.0}, {2}, 2, 1, native);
  b.Histogram("nvmeof_h_seconds", "h", {{"netdev", "eth1"}}, {1.0}, {3}, 3, 1, native);
  a.Append(std::move(b));
  const auto h = Select(a, "nvmeof_h_seconds");
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0]->histogram.sample_count, 1u);
  EXPECT_EQ(h[1]->histogram.sample_count, 3u);
  EXPECT_EQ(a.skipped(), 1u);
  EXPECT_NE(a.NativeOf(0, 1), nullptr);
  EXPECT_EQ(a.NativeOf(0, 2), nullptr);
}

// Every family is checked, not only those holding a sanitized value: a kernel can show one
// object in two places, and a scrape with a duplicate series is rejected whole.
TEST(MetricSinkDuplicates, SecondSeriesWithTheSameLabelsIsDroppedAndCounted) {
  MetricSink sink;
  sink.Gauge("nvmeof_ns_info", "h", {{"nvme_namespace", "nvme0n1"}, {"nsid", "1"}}, 1);
  sink.Gauge("nvmeof_ns_info", "h", {{"nvme_namespace", "nvme0n2"}, {"nsid", "2"}}, 1);
  sink.Gauge("nvmeof_ns_info", "h", {{"nvme_namespace", "nvme0n1"}, {"nsid", "1"}}, 7);
  // Same values under other names, or in another order, are other series.
  sink.Gauge("nvmeof_ns_info", "h", {{"nsid", "1"}, {"nvme_namespace", "nvme0n1"}}, 1);
  sink.Gauge("nvmeof_other", "h", {{"nvme_namespace", "nvme0n1"}, {"nsid", "1"}}, 1);
  const auto info = Select(sink, "nvmeof_ns_info");
  ASSERT_EQ(info.size(), 3u);
  EXPECT_EQ(info[0]->gauge.value, 1);  // the first one is served
  EXPECT_EQ(sink.skipped(), 1u);
  ASSERT_EQ(sink.anomalies().size(), 1u);
  EXPECT_EQ(sink.anomalies().at("duplicate_series"), 1u);

  MetricSink other;
  other.Gauge("nvmeof_ns_info", "h", {{"nvme_namespace", "nvme0n2"}, {"nsid", "2"}}, 1);
  other.Gauge("nvmeof_ns_info", "h", {{"nvme_namespace", "nvme0n3"}, {"nsid", "3"}}, 1);
  EXPECT_EQ(sink.Append(std::move(other)), 1u);
  EXPECT_EQ(Select(sink, "nvmeof_ns_info").size(), 4u);
  EXPECT_EQ(sink.skipped(), 2u);
  EXPECT_EQ(sink.anomalies().at("duplicate_series"), 2u);
}

TEST(MetricSinkOneHot, UnknownStateServedAllZeroIsCounted) {
  constexpr StateName kStates[] = {{"up", "up"}, {"down", "down"}};
  MetricSink sink;
  sink.OneHot("nvmeof_s", "h", {}, kStates, std::string("sideways"), /*unknown_all_zero=*/true);
  EXPECT_EQ(Select(sink, "nvmeof_s").size(), 2u);
  EXPECT_EQ(
      Value(sink, "nvmeof_s", {{"state", "up"}}) + Value(sink, "nvmeof_s", {{"state", "down"}}), 0);
  EXPECT_EQ(sink.anomalies().at("unknown_state"), 1u);
  EXPECT_EQ(sink.skipped(), 0u);
}

}  // namespace
}  // namespace nvmeof
