// Bucket math of bpf/hist.h and collectors/bpf_histogram.cc, and the claim it exists for:
// histogram_quantile over the exported buckets is within 10% of the true quantile.
#include "collectors/bpf/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "bpf/hist.h"

namespace nvmeof {
namespace {

// Prometheus' histogram_quantile (promql/quantile.go, bucketQuantile) for one series:
// linear interpolation inside the bucket holding rank q*count; the first bucket starts at 0.
double HistogramQuantile(double q, const std::vector<double>& bounds,
                         const std::vector<std::uint64_t>& cumulative, std::uint64_t count) {
  double rank = q * static_cast<double>(count);
  size_t b = 0;
  while (b < cumulative.size() && static_cast<double>(cumulative[b]) < rank) ++b;
  if (b == cumulative.size()) return bounds.back();  // +Inf bucket: highest finite bound
  double start = b == 0 ? 0 : bounds[b - 1];
  double below = b == 0 ? 0 : static_cast<double>(cumulative[b - 1]);
  double in_bucket = static_cast<double>(cumulative[b]) - below;
  return start + (bounds[b] - start) * ((rank - below) / in_bucket);
}

double TrueQuantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  size_t idx = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(idx, v.size() - 1)];
}

struct Exported {
  std::vector<double> bounds;
  std::vector<std::uint64_t> cumulative;
  std::uint64_t count = 0;
};

Exported Observe(const std::vector<double>& seconds, const BucketLayout& layout) {
  std::vector<unsigned long long> fine(NVMEOF_HIST_BUCKETS, 0);
  for (double s : seconds) ++fine[nvmeof_hist_index(static_cast<unsigned long long>(s * 1e9))];
  return {layout.bounds(), layout.Cumulative(fine.data()), seconds.size()};
}

TEST(BpfHistogramTest, IndexAndBoundsAgree) {
  EXPECT_EQ(nvmeof_hist_index(0), 0u);
  EXPECT_EQ(nvmeof_hist_index(127), 0u);
  EXPECT_EQ(nvmeof_hist_index(128), 1u);
  EXPECT_EQ(nvmeof_hist_index(~0ULL), unsigned(NVMEOF_HIST_BUCKETS - 1));
  EXPECT_EQ(nvmeof_hist_index(1ULL << NVMEOF_HIST_MAX_SHIFT), unsigned(NVMEOF_HIST_BUCKETS - 1));
  EXPECT_EQ(nvmeof_hist_upper_ns(NVMEOF_HIST_BUCKETS - 1), 0u);
  for (unsigned i = 1; i + 1 < NVMEOF_HIST_BUCKETS; ++i) {
    unsigned long long lo = nvmeof_hist_upper_ns(i - 1), hi = nvmeof_hist_upper_ns(i);
    ASSERT_LT(lo, hi) << i;
    EXPECT_EQ(nvmeof_hist_index(lo), i) << "lower bound of " << i;
    EXPECT_EQ(nvmeof_hist_index(hi - 1), i) << "just below the upper bound of " << i;
    EXPECT_EQ(nvmeof_hist_index(hi), i + 1) << "upper bound of " << i;
  }
}

TEST(BpfHistogramTest, IndexIsMonotonic) {
  unsigned prev = 0;
  for (unsigned long long v = 1; v < (1ULL << 36); v = v + 1 + v / 97) {
    unsigned i = nvmeof_hist_index(v);
    ASSERT_GE(i, prev) << v;
    prev = i;
  }
}

// The bound the 10% guarantee rests on: every bucket past the first is at most 10% wider
// than its lower bound, so an estimate inside the true value's bucket is within 10% of it.
TEST(BpfHistogramTest, EveryBucketAtMostTenPercentWide) {
  double worst = 0;
  for (unsigned i = 1; i + 1 < NVMEOF_HIST_BUCKETS; ++i) {
    double ratio = static_cast<double>(nvmeof_hist_upper_ns(i)) /
                   static_cast<double>(nvmeof_hist_upper_ns(i - 1));
    worst = std::max(worst, ratio);
  }
  EXPECT_LE(worst, 1.1);
  EXPECT_GT(worst, 1.09);  // 8 buckets per octave cannot do much better: 2^(1/8) = 1.0905
}

TEST(BpfHistogramTest, DefaultLayoutExportsEveryFineBucket) {
  auto layout = BucketLayout::Make({});
  ASSERT_EQ(layout.bounds().size(), size_t(NVMEOF_HIST_BUCKETS - 1));
  EXPECT_DOUBLE_EQ(layout.bounds().front(), 128e-9);
  EXPECT_NEAR(layout.bounds().back(), std::ldexp(1.0, NVMEOF_HIST_MAX_SHIFT) * 1e-9, 1e-12);
}

TEST(BpfHistogramTest, RequestedBoundsSnapWithinFivePercent) {
  std::vector<double> want = {1e-6, 1e-5, 1e-4, 2.5e-4, 1e-3, 1e-2, 0.1, 1, 10};
  auto layout = BucketLayout::Make(want);
  ASSERT_EQ(layout.bounds().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(layout.bounds()[i] / want[i], 1.0, 0.05) << want[i];
  }
  // Out of range and duplicates collapse; garbage is dropped.
  auto edge = BucketLayout::Make({1e-12, 1e-9, 1000, NAN, -1, 1e-3, 1.001e-3});
  EXPECT_EQ(edge.bounds().size(), 3u);
  EXPECT_DOUBLE_EQ(edge.bounds().front(), 128e-9);
}

TEST(BpfHistogramTest, CumulativeCountsAreExact) {
  auto layout = BucketLayout::Make({1e-6, 1e-3});
  std::vector<double> obs = {1e-7, 5e-7, layout.bounds()[0] * 0.999, 2e-6, 5e-4, 0.5, 100};
  Exported e = Observe(obs, layout);
  ASSERT_EQ(e.cumulative.size(), 2u);
  EXPECT_EQ(e.cumulative[0], 3u);
  EXPECT_EQ(e.cumulative[1], 5u);
  EXPECT_EQ(e.count, 7u);
}

// Distributions shaped like storage latency: one mode, long tails, two modes (cache hits and
// misses), and the worst case for interpolation: everything at one value.
TEST(BpfHistogramTest, QuantilesWithinTenPercent) {
  std::mt19937_64 rng(42);
  auto layout = BucketLayout::Make({});
  struct Case {
    const char* name;
    std::function<double()> draw;
  };
  std::lognormal_distribution<double> ln_tight(std::log(80e-6), 0.2), ln_wide(std::log(1e-3), 1.5);
  std::exponential_distribution<double> expo(1 / 200e-6);
  std::uniform_real_distribution<double> uni(10e-6, 5e-3);
  std::bernoulli_distribution miss(0.05);
  std::normal_distribution<double> hit(20e-6, 2e-6), slow(4e-3, 0.5e-3);
  std::vector<Case> cases = {
      {"lognormal tight", [&] { return ln_tight(rng); }},
      {"lognormal wide", [&] { return ln_wide(rng); }},
      {"exponential", [&] { return expo(rng) + 5e-6; }},
      {"uniform", [&] { return uni(rng); }},
      {"bimodal", [&] { return miss(rng) ? slow(rng) : std::max(1e-6, hit(rng)); }},
      {"constant", [&] { return 333e-6; }},
  };
  for (const auto& c : cases) {
    std::vector<double> obs(200000);
    for (auto& v : obs) v = c.draw();
    Exported e = Observe(obs, layout);
    for (double q : {0.5, 0.9, 0.99, 0.999}) {
      double truth = TrueQuantile(obs, q);
      double est = HistogramQuantile(q, e.bounds, e.cumulative, e.count);
      EXPECT_NEAR(est / truth, 1.0, 0.10) << c.name << " q=" << q;
    }
  }
}

// Sanity of the test itself: plain log2 buckets fail it, as the design says.
TEST(BpfHistogramTest, Log2BucketsAreNotEnough) {
  std::vector<double> bounds;
  for (int e = 7; e <= 34; ++e) bounds.push_back(std::ldexp(1.0, e) * 1e-9);
  std::vector<double> obs(100000, 333e-6);
  std::vector<std::uint64_t> cumulative;
  for (double b : bounds) cumulative.push_back(333e-6 <= b ? obs.size() : 0);
  double est = HistogramQuantile(0.99, bounds, cumulative, obs.size());
  EXPECT_GT(std::fabs(est / 333e-6 - 1), 0.10);
}

}  // namespace
}  // namespace nvmeof
