// Created timestamps for counters that restart (exporter/counter_resets.h): a series that goes
// down is served from then on with the end of its collector's run before as its created time;
// nothing else gets one it did not have.
#include "exporter/counter_resets.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "exporter/scraper.h"

namespace nvmeof {
namespace {

using namespace std::chrono_literals;

// The created timestamp of `name`{labels} in the sink, 0 if none, -1 if there is no such series.
double CreatedOf(const MetricSink& sink, const std::string& name, const Labels& labels) {
  for (size_t f = 0; f < sink.families().size(); ++f) {
    const auto& family = sink.families()[f];
    if (family.name != name) continue;
    for (size_t m = 0; m < family.metric.size(); ++m) {
      if (family.metric[m].label.size() != labels.size()) continue;
      bool same = true;
      for (size_t i = 0; i < labels.size(); ++i) {
        same = same && family.metric[m].label[i].name == labels[i].name &&
               family.metric[m].label[i].value == labels[i].value;
      }
      if (!same) continue;
      const SeriesSide* side = sink.SideOf(f, m);
      return side ? side->created : 0;
    }
  }
  return -1;
}

// One run of a collector serving device "rxe0"'s counter (if `present`) and a histogram.
MetricSink Collected(CounterResets* resets, double at, double value, bool present = true,
                     std::uint64_t count = 0) {
  MetricSink sink;
  if (present) sink.Counter("nvmeof_x_total", "x", {{"dev", "rxe0"}}, value);
  sink.Counter("nvmeof_y_total", "y", {{"dev", "rxe0"}}, value);  // same labels, other name
  sink.Histogram("nvmeof_h_seconds", "h", {}, {0.1}, {count}, count, 0.01 * count);
  sink.Gauge("nvmeof_g", "g", {}, 100 - value);  // gauges go down: never a reset
  resets->Mark(&sink, at);
  return sink;
}

TEST(CounterResetsTest, NoCreatedTimestampWhileCountersOnlyGrow) {
  CounterResets r;
  for (int i = 0; i < 5; ++i) {
    MetricSink s = Collected(&r, 1000 + 15 * i, 10.0 * i, true, i);
    EXPECT_EQ(CreatedOf(s, "nvmeof_x_total", {{"dev", "rxe0"}}), 0) << i;
    EXPECT_EQ(CreatedOf(s, "nvmeof_h_seconds", {}), 0) << i;
    EXPECT_EQ(CreatedOf(s, "nvmeof_g", {}), 0) << i;
  }
}

TEST(CounterResetsTest, ADropIsServedWithThePreviousRunAsCreatedFromThenOn) {
  CounterResets r;
  Collected(&r, 1000, 50);
  Collected(&r, 1015, 70);
  MetricSink s = Collected(&r, 1030, 3);  // a new rxe0 since the run at 1015
  EXPECT_EQ(CreatedOf(s, "nvmeof_x_total", {{"dev", "rxe0"}}), 1015);
  EXPECT_EQ(CreatedOf(s, "nvmeof_y_total", {{"dev", "rxe0"}}), 1015);
  EXPECT_EQ(CreatedOf(s, "nvmeof_g", {}), 0);
  s = Collected(&r, 1045, 9);  // it keeps counting: the same created time
  EXPECT_EQ(CreatedOf(s, "nvmeof_x_total", {{"dev", "rxe0"}}), 1015);
  s = Collected(&r, 1060, 1);  // and again
  EXPECT_EQ(CreatedOf(s, "nvmeof_x_total", {{"dev", "rxe0"}}), 1045);
}

TEST(CounterResetsTest, BackAfterAnAbsenceLowerIsARestartSinceTheRunBefore) {
  CounterResets r;
  Collected(&r, 1000, 50);
  Collected(&r, 1015, 0, false);  // rxe0 gone (y still served, at 0: a drop seen at 1015)
  Collected(&r, 1030, 0, false);
  MetricSink s = Collected(&r, 1045, 4);
  EXPECT_EQ(CreatedOf(s, "nvmeof_x_total", {{"dev", "rxe0"}}), 1030);
  EXPECT_EQ(CreatedOf(s, "nvmeof_y_total", {{"dev", "rxe0"}}), 1000);
}

TEST(CounterResetsTest, HistogramsCompareTheirCount) {
  CounterResets r;
  Collected(&r, 1000, 1, true, 40);
  MetricSink s = Collected(&r, 1015, 2, true, 39);
  EXPECT_EQ(CreatedOf(s, "nvmeof_h_seconds", {}), 1000);
}

// A new object whose count is not lower: its sum tells (a sum never falls, and does not move
// at an equal count).
MetricSink OneHistogram(CounterResets* r, double at, std::uint64_t count, double sum) {
  MetricSink sink;
  sink.Histogram("nvmeof_h_seconds", "h", {}, {0.1}, {count}, count, sum);
  r->Mark(&sink, at);
  return sink;
}

TEST(CounterResetsTest, HistogramsCompareTheirSumToo) {
  CounterResets r;
  OneHistogram(&r, 1000, 1, 0.25);
  EXPECT_EQ(CreatedOf(OneHistogram(&r, 1015, 1, 0.25), "nvmeof_h_seconds", {}), 0);  // idle
  EXPECT_EQ(CreatedOf(OneHistogram(&r, 1030, 3, 0.5), "nvmeof_h_seconds", {}), 0);   // grew
  EXPECT_EQ(CreatedOf(OneHistogram(&r, 1045, 3, 0.01), "nvmeof_h_seconds", {}), 1030);
  EXPECT_EQ(CreatedOf(OneHistogram(&r, 1060, 5, 0.001), "nvmeof_h_seconds", {}), 1045);
}

TEST(CounterResetsTest, ACollectorsOwnCreatedStandsUnlessAResetCameLater) {
  CounterResets r;
  for (double at : {1000.0, 1015.0, 1030.0}) {
    MetricSink s;
    s.Counter("nvmeof_z_total", "z", {}, at == 1030 ? 1 : at);
    s.Created(at == 1030 ? 900 : 1010);
    r.Mark(&s, at);
    EXPECT_EQ(CreatedOf(s, "nvmeof_z_total", {}), at == 1030 ? 1015 : 1010) << at;
  }
}

TEST(CounterResetsTest, SeriesNotServedForAnHourAreForgotten) {
  CounterResets r;
  Collected(&r, 1000, 50);
  EXPECT_EQ(r.tracked(), 3u);
  MetricSink other;
  other.Counter("nvmeof_other_total", "o", {}, 1);
  r.Mark(&other, 1000 + CounterResets::kForgetAfterSeconds + 1);
  EXPECT_EQ(r.tracked(), 1u);
  MetricSink s = Collected(&r, 1000 + CounterResets::kForgetAfterSeconds + 20, 4);
  EXPECT_EQ(CreatedOf(s, "nvmeof_x_total", {{"dev", "rxe0"}}), 0);  // nothing to compare with
}

// Through the scraper: each collector's runs are compared in order, and the created timestamp
// reaches the exposition that carries one.
class RestartingCollector : public Collector {
 public:
  std::string_view Name() const override { return "restarting"; }
  bool Collect(MetricSink& out) override {
    out.Counter("nvmeof_test_restarts_total", "t", {}, ++runs_ == 3 ? 1 : 100.0 * runs_);
    return true;
  }

 private:
  int runs_ = 0;
};

TEST(CounterResetsTest, TheScraperServesTheCreatedTimestampAfterARestart) {
  std::vector<std::unique_ptr<Collector>> c;
  c.push_back(std::make_unique<RestartingCollector>());
  Scraper scraper(std::move(c));
  EXPECT_EQ(scraper.Scrape(5s, Exposition::kOpenMetrics).find("_created"), std::string::npos);
  EXPECT_EQ(scraper.Scrape(5s, Exposition::kOpenMetrics).find("_created"), std::string::npos);
  const std::string third = scraper.Scrape(5s, Exposition::kOpenMetrics);
  EXPECT_NE(third.find("nvmeof_test_restarts_created "), std::string::npos) << third;
  EXPECT_EQ(scraper.Scrape(5s).find("_created"), std::string::npos);  // text 0.0.4: none
}

}  // namespace
}  // namespace nvmeof
