// Runs the enabled collectors for one scrape and renders the Prometheus text format
// (exporter/text_exposition.h: 0.0.4 or OpenMetrics) or protobuf (exporter/protobuf_exposition.h),
// adding the exporter's own series (build info, per-collector
// success/duration/skips/timeouts/sanitized).
//
// Deadlines: every scrape has one. Each collector runs on its own detached worker thread, started
// at its first run and reused by every later scrape until Shutdown(), that shares ownership of the
// collector and its state (Slot), so a run stuck in the kernel (a sysfs read that waits on
// firmware, a hung FUSE or NFS file) can outlive the scrape, and even the Scraper, without
// dangling, and a scrape never waits past its deadline. (A run on the scraping thread would save
// the two thread wakeups, but a hung collector would then hang the HTTP connection and hold a slot
// of the scrape cap for good.) A collector that misses the deadline is reported with success 0,
// its timeouts counter incremented and no series of its own. It is not started again until that
// run returns: later scrapes report it as timed out at once. So there is at most one run per
// collector at any time, and the threads the scraper owns are bounded by the collector count.
// Concurrent scrapes share a run that is already in flight (and not yet overdue) instead of
// starting a second one. Each collector's runs, in order, go through its CounterResets
// (exporter/counter_resets.h): a counter that went down is served with a created timestamp.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/collector.h"
#include "exporter/negotiation.h"

namespace nvmeof {

class Scraper {
 public:
  using Duration = std::chrono::steady_clock::duration;

  explicit Scraper(std::vector<std::unique_ptr<Collector>> collectors);
  explicit Scraper(std::vector<std::shared_ptr<Collector>> collectors);
  // Does not wait for runs in flight: they hold their own references.
  ~Scraper();
  Scraper(const Scraper&) = delete;
  Scraper& operator=(const Scraper&) = delete;

  // Collects everything (collectors in parallel, at most `timeout`) and returns the text
  // exposition.
  std::string Scrape(Duration timeout);
  // The same in `format`: text 0.0.4, OpenMetrics 1.0 text, or the protobuf format (delimited
  // MetricFamily, with native histograms).
  std::string Scrape(Duration timeout, Exposition format);
  // The same, as families (for tests).
  MetricSink CollectAll(Duration timeout);
  // Series added to every scrape after the collectors' own self-metrics (e.g. the web server's
  // counters). Set before the first scrape; called on the scraping threads, concurrently.
  void SetSelfMetrics(std::function<void(MetricSink&)> emit) { self_metrics_ = std::move(emit); }
  // Makes scrapes waiting now and later return at once (collectors not done count as timed
  // out), so the web server's threads can be joined on shutdown while a collector is stuck.
  void Shutdown();

  struct Slot;  // per-collector shared state (scraper.cc)

 private:
  std::vector<std::shared_ptr<Slot>> slots_;
  std::function<void(MetricSink&)> self_metrics_;
  // The size of the last scrape per format, to reserve the next one's string at once.
  std::atomic<size_t> size_hints_[3] = {};  // the last body's size, per Exposition
};

}  // namespace nvmeof
