// Scraper deadlines: a collector that blocks is reported as timed out, is not started again
// while stuck, and does not hold up the others.
#include "exporter/scraper.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/sink_query.h"

namespace nvmeof {
namespace {

using namespace std::chrono_literals;

class FastCollector : public Collector {
 public:
  std::string_view Name() const override { return "fast"; }
  bool Collect(MetricSink& out) override {
    out.Gauge("nvmeof_test_fast", "test", {}, 1);
    return true;
  }
};

// Blocks in Collect until Release(); counts runs started. Shared with the scraper, so the test
// can release it after the scraper is gone.
class BlockingCollector : public Collector {
 public:
  std::string_view Name() const override { return "blocking"; }
  bool Collect(MetricSink& out) override {
    ++runs;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return released_; });
    out.Gauge("nvmeof_test_blocking", "test", {}, 1);
    return true;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  std::atomic<int> runs{0};

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
};

struct Fixture {
  std::shared_ptr<BlockingCollector> blocking = std::make_shared<BlockingCollector>();
  std::unique_ptr<Scraper> scraper;
  Fixture() {
    scraper = std::make_unique<Scraper>(
        std::vector<std::shared_ptr<Collector>>{std::make_shared<FastCollector>(), blocking});
  }
  ~Fixture() { blocking->Release(); }
};

// Waits (bounded: about 4 s) until the blocking collector has returned, seen through the
// scraper. A scrape that finds the old run still stuck reports it at once, hence the pause
// between tries. A fresh run returns at once, and the long deadline lets it do so inside its
// scrape on a loaded machine under TSan: with 50 ms it once timed out, and the next scrape's
// fresh run made `runs` 3.
bool WaitUntilReturned(Scraper& s, BlockingCollector& b, int runs) {
  for (int i = 0; i < 200; ++i) {
    auto sink = s.CollectAll(2s);
    if (Value(sink, "nvmeof_exporter_collector_success", {{"collector", "blocking"}}) == 1 &&
        b.runs == runs) {
      return true;
    }
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// Records the kernel thread id of every run.
class ThreadRecordingCollector : public Collector {
 public:
  std::string_view Name() const override { return "recording"; }
  bool Collect(MetricSink& out) override {
    std::lock_guard<std::mutex> lock(mu);
    tids.push_back(static_cast<long>(syscall(SYS_gettid)));
    out.Gauge("nvmeof_test_recording", "test", {}, 1);
    return true;
  }
  std::mutex mu;
  std::vector<long> tids;
};

// Every scrape hands the collector's run to the same worker thread (one per collector), instead
// of starting a thread per collector per scrape; the worker is not the scraping thread.
TEST(ScraperWorkers, OneThreadPerCollectorAcrossScrapes) {
  auto recording = std::make_shared<ThreadRecordingCollector>();
  Scraper s(std::vector<std::shared_ptr<Collector>>{recording});
  for (int i = 0; i < 5; ++i) {
    auto sink = s.CollectAll(10s);
    EXPECT_EQ(Value(sink, "nvmeof_test_recording"), 1);
  }
  std::lock_guard<std::mutex> lock(recording->mu);
  ASSERT_EQ(recording->tids.size(), 5u);
  for (long tid : recording->tids) EXPECT_EQ(tid, recording->tids[0]);
  EXPECT_NE(recording->tids[0], static_cast<long>(syscall(SYS_gettid)));
}

// The worker ends with the scraper, letting go of the collector.
TEST(ScraperWorkers, WorkerEndsWithTheScraper) {
  auto recording = std::make_shared<ThreadRecordingCollector>();
  {
    Scraper s(std::vector<std::shared_ptr<Collector>>{recording});
    s.CollectAll(10s);
    EXPECT_GT(recording.use_count(), 1);  // held by the scraper and its worker
  }
  for (int i = 0; i < 200 && recording.use_count() > 1; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(recording.use_count(), 1);
}

TEST(ScraperSelfMetrics, AddedToEveryScrape) {
  std::vector<std::unique_ptr<Collector>> cs;
  cs.push_back(std::make_unique<FastCollector>());
  Scraper s(std::move(cs));
  int calls = 0;
  s.SetSelfMetrics([&](MetricSink& out) {
    ++calls;
    out.Counter("nvmeof_exporter_http_connections_total", "test", {}, 7);
  });
  auto sink = s.CollectAll(1s);
  EXPECT_EQ(Value(sink, "nvmeof_exporter_http_connections_total"), 7);
  s.CollectAll(1s);
  EXPECT_EQ(calls, 2);
}

// Fails while `fail` is set, giving a reason; serves one series that FastCollector serves too.
class FlakyCollector : public Collector {
 public:
  std::string_view Name() const override { return "flaky"; }
  bool Collect(MetricSink& out) override {
    out.Gauge("nvmeof_test_fast", "test", {}, 2);  // FastCollector's series: a duplicate
    out.Gauge("nvmeof_test_flaky", "test", {}, 1);
    if (!fail) return true;
    out.Fail("/proc/net/snmp: No such file or directory");
    return false;
  }
  std::atomic<bool> fail{true};
};

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A collector that fails is warned about once, with its reason, until it recovers (one info
// line), not on every scrape.
TEST(ScraperFailure, WarnsOncePerFailureWithTheReasonAndOnceOnRecovery) {
  auto flaky = std::make_shared<FlakyCollector>();
  std::vector<std::shared_ptr<Collector>> cs = {flaky};
  Scraper s(std::move(cs));
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    auto sink = s.CollectAll(5s);
    EXPECT_EQ(Value(sink, "nvmeof_exporter_collector_success", {{"collector", "flaky"}}), 0);
  }
  flaky->fail = false;
  s.CollectAll(5s);
  s.CollectAll(5s);
  flaky->fail = true;
  s.CollectAll(5s);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(Occurrences(log, "collector failed"), 2u) << log;
  EXPECT_EQ(Occurrences(log, "reason=\"/proc/net/snmp: No such file or directory\""), 2u) << log;
  EXPECT_EQ(Occurrences(log, "collector recovered"), 1u) << log;
}

// A series two collectors both serve is served once (the first collector's); the second
// collector counts it as skipped and as anomaly duplicate_series.
TEST(ScraperDuplicates, SeriesServedByTwoCollectorsIsServedOnce) {
  auto flaky = std::make_shared<FlakyCollector>();
  flaky->fail = false;
  std::vector<std::shared_ptr<Collector>> cs = {std::make_shared<FastCollector>(), flaky};
  Scraper s(std::move(cs));
  auto sink = s.CollectAll(5s);
  ASSERT_EQ(Select(sink, "nvmeof_test_fast").size(), 1u);
  EXPECT_EQ(Value(sink, "nvmeof_test_fast"), 1);
  EXPECT_EQ(Value(sink, "nvmeof_test_flaky"), 1);
  EXPECT_EQ(Value(sink, "nvmeof_exporter_collector_skipped_series", {{"collector", "flaky"}}), 1);
  EXPECT_EQ(Value(sink, "nvmeof_exporter_collector_skipped_series", {{"collector", "fast"}}), 0);
  EXPECT_EQ(Value(sink, "nvmeof_exporter_collector_anomalies",
                  {{"collector", "flaky"}, {"reason", "duplicate_series"}}),
            1);
  EXPECT_TRUE(Select(sink, "nvmeof_exporter_collector_anomalies", {{"collector", "fast"}}).empty());
  const std::string text = s.Scrape(5s);
  EXPECT_EQ(Occurrences(text, "\nnvmeof_test_fast "), 1u) << text;
}

TEST(ScraperProcess, ServesClientLibraryProcessMetrics) {
  std::vector<std::unique_ptr<Collector>> cs;
  cs.push_back(std::make_unique<FastCollector>());
  Scraper s(std::move(cs));
  auto sink = s.CollectAll(1s);
  EXPECT_GT(Value(sink, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GT(Value(sink, "process_virtual_memory_bytes"),
            Value(sink, "process_resident_memory_bytes"));
  EXPECT_GE(Value(sink, "process_cpu_seconds_total"), 0);
  EXPECT_GE(Value(sink, "process_open_fds"), 3);
  EXPECT_GE(Value(sink, "process_max_fds"), Value(sink, "process_open_fds"));
  const double start = Value(sink, "process_start_time_seconds");
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(start, now + 2);
  EXPECT_GT(start, now - 24 * 3600.0);  // started within a day: plausible for a test binary
}

TEST(ScraperDeadline, TimedOutCollectorIsMarkedAndOthersServed) {
  Fixture f;
  const auto start = std::chrono::steady_clock::now();
  auto sink = f.scraper->CollectAll(200ms);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 2s);
  EXPECT_EQ(Value(sink, "nvmeof_exporter_collector_success", {{"collector", "blocking"}}), 0);
  EXPECT_EQ(Value(sink, "nvmeof_exporter_collector_timeouts_total", {{"collector", "blocking"}}),
            1);
  // How long the stuck run has taken so far: from its start, which comes a little after the
  // scrape's (other collectors start first; more under load), until the deadline.
  const double duration =
      Value(sink, "nvmeof_exporter_collector_duration_seconds", {{"collector", "blocking"}});
  EXPECT_GE(duration, 0.1);
  EXPECT_LE(duration, std::chrono::duration<double>(took).count());
  EXPECT_EQ(sink.Find("nvmeof_test_blocking"), nullptr);
  EXPECT_EQ(Value(sink, "nvmeof_exporter_collector_success", {{"collector", "fast"}}), 1);
  EXPECT_EQ(Value(sink, "nvmeof_exporter_collector_timeouts_total", {{"collector", "fast"}}), 0);
  EXPECT_EQ(Value(sink, "nvmeof_test_fast"), 1);
}

TEST(ScraperDeadline, StuckCollectorIsNotStartedAgainAndReportedAtOnce) {
  Fixture f;
  f.scraper->CollectAll(100ms);
  ASSERT_EQ(f.blocking->runs, 1);
  for (int i = 0; i < 5; ++i) {
    const auto start = std::chrono::steady_clock::now();
    // A long deadline: the stuck collector must not be waited for again.
    auto sink = f.scraper->CollectAll(10s);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
    EXPECT_EQ(Value(sink, "nvmeof_exporter_collector_success", {{"collector", "blocking"}}), 0);
    EXPECT_EQ(Value(sink, "nvmeof_exporter_collector_timeouts_total", {{"collector", "blocking"}}),
              2 + i);
    EXPECT_EQ(Value(sink, "nvmeof_test_fast"), 1);
  }
  EXPECT_EQ(f.blocking->runs, 1);  // no pile-up

  // Once the run returns, the next scrape starts a fresh one (its result is not reused).
  f.blocking->Release();
  EXPECT_TRUE(WaitUntilReturned(*f.scraper, *f.blocking, 2));
  auto sink = f.scraper->CollectAll(10s);
  EXPECT_EQ(Value(sink, "nvmeof_exporter_collector_success", {{"collector", "blocking"}}), 1);
  EXPECT_EQ(Value(sink, "nvmeof_test_blocking"), 1);
  // 6, or 7 if a scrape in the wait above still found the old run stuck.
  EXPECT_GE(Value(sink, "nvmeof_exporter_collector_timeouts_total", {{"collector", "blocking"}}),
            6);
}

TEST(ScraperDeadline, ConcurrentScrapesShareOneRun) {
  Fixture f;
  std::vector<std::future<MetricSink>> scrapes;
  for (int i = 0; i < 8; ++i) {
    scrapes.push_back(std::async(std::launch::async, [&] { return f.scraper->CollectAll(300ms); }));
  }
  for (auto& s : scrapes) {
    auto sink = s.get();
    EXPECT_EQ(Value(sink, "nvmeof_exporter_collector_success", {{"collector", "blocking"}}), 0);
    EXPECT_EQ(Value(sink, "nvmeof_test_fast"), 1);
  }
  EXPECT_EQ(f.blocking->runs, 1);
}

// Scrapes that wait for one run share its series: the last to read the result takes it, the
// others copy it, and every one serves it whole.
TEST(ScraperDeadline, ScrapesWaitingForOneRunAllServeItsSeries) {
  auto blocking = std::make_shared<BlockingCollector>();
  Scraper scraper({blocking});
  std::vector<std::future<MetricSink>> scrapes;
  for (int i = 0; i < 6; ++i) {
    scrapes.push_back(std::async(std::launch::async, [&] { return scraper.CollectAll(20s); }));
  }
  while (blocking->runs == 0) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(50ms);  // the other scrapes reach the wait for the same run
  blocking->Release();
  for (auto& s : scrapes) {
    auto sink = s.get();
    EXPECT_EQ(Value(sink, "nvmeof_exporter_collector_success", {{"collector", "blocking"}}), 1);
    EXPECT_EQ(Value(sink, "nvmeof_test_blocking"), 1);
  }
  // And the next scrape runs the collector again: a taken result is never served twice.
  auto next = scraper.CollectAll(20s);
  EXPECT_EQ(Value(next, "nvmeof_test_blocking"), 1);
  EXPECT_GE(blocking->runs, 2);
}

TEST(ScraperDeadline, ShutdownReleasesWaitingScrapes) {
  Fixture f;
  auto scrape = std::async(std::launch::async, [&] { return f.scraper->CollectAll(30s); });
  while (f.blocking->runs == 0) std::this_thread::sleep_for(1ms);
  const auto start = std::chrono::steady_clock::now();
  f.scraper->Shutdown();
  auto sink = scrape.get();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(Value(sink, "nvmeof_exporter_collector_success", {{"collector", "blocking"}}), 0);
}

TEST(ScraperDeadline, ScraperMayGoAwayWhileARunIsStuck) {
  auto blocking = std::make_shared<BlockingCollector>();
  {
    Scraper scraper(std::vector<std::shared_ptr<Collector>>{blocking});
    scraper.CollectAll(10ms);
  }
  // The run still holds the collector; releasing it now must not touch the dead scraper.
  blocking->Release();
  for (int i = 0; i < 100 && blocking.use_count() > 1; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(blocking.use_count(), 1);
}

}  // namespace
}  // namespace nvmeof
