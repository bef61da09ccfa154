// Created timestamps for counters that restart: a series whose value goes down between two runs
// of its collector counts a new object under the same name and labels (a controller, an RDMA
// device or a module's hook that went away and came back, a counter root wrote to), so from that
// run on it is served with a created timestamp: the end of the collector's run before, by when
// the old object's count (or its absence) had been read. Prometheus then knows where the new
// count began (protobuf created_timestamp, OpenMetrics `_created`) instead of guessing from the
// drop. The end, not the start: a scrape that shares a run in flight (exporter/scraper.h) is
// timestamped after the run began, and Prometheus drops a created timestamp that is not after
// the series' last sample (seen in the VM soak with two Prometheus servers: a created time at the
// run's start fell before the old count's sample); every scrape that got the old count began
// before that run ended. A series never seen to go down keeps the created timestamp its
// collector gave it, or none: the exporter does not know when a kernel object it found at
// start was created.
//
// One per collector: a collector's runs are serial, so the values it compares are in order even
// when concurrent scrapes share or overlap runs. Histograms compare their count and sum. State per
// series (name and labels, hashed): its last value and created time; series not served for an
// hour are forgotten, so the memory is bounded by the series a collector served in the last
// hour (40 bytes each, plus the hash table's).
#pragma once

#include <cstdint>
#include <unordered_map>

#include "base/metric_sink.h"

namespace nvmeof {

class CounterResets {
 public:
  // Sets the created timestamp of each counter and histogram of `run` that went down since the
  // series was last served (or went down before and has not been forgotten). `run_ended` is
  // when this run returned, unix seconds.
  void Mark(MetricSink* run, double run_ended);
  size_t tracked() const { return series_.size(); }

  static constexpr double kForgetAfterSeconds = 3600;

 private:
  struct Series {
    double value = 0;    // a counter's value, a histogram's count
    double sum = 0;      // a histogram's sum
    double created = 0;  // 0: none seen
    double seen = 0;     // the last run that served it
  };
  std::unordered_map<std::uint64_t, Series> series_;
  double previous_run_ = 0;  // the collector's run before this one (0: none yet)
  double last_sweep_ = 0;
};

}  // namespace nvmeof
