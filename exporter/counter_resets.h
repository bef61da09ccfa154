// Created timestamps for counters that restart: a series whose value goes down between two runs
// of its collector counts a new object under the same name and labels (a controller, an RDMA
// device or a module's hook that went away and came back, a counter root wrote to), so from that
// run on it is served with a created timestamp: the start of the collector's run before, the
// last time the old object's count was read (or its absence seen). Prometheus then knows where
// the new count began (protobuf created_timestamp, OpenMetrics `_created`) instead of guessing
// from the drop. A series never seen to go down keeps the created timestamp its collector gave
// it, or none: the exporter does not know when a kernel object it found at start was created.
//
// One per collector: a collector's runs are serial (exporter/scraper.h), so the values it
// compares are in order even when concurrent scrapes share or overlap runs. Histograms compare
// their count. State per series (name and labels, hashed): its last value and created time;
// series not served for an hour are forgotten, so the memory is bounded by the series a
// collector served in the last hour (32 bytes each, plus the hash table's).
#pragma once

#include <cstdint>
#include <unordered_map>

#include "base/metric_sink.h"

namespace nvmeof {

class CounterResets {
 public:
  // Sets the created timestamp of each counter and histogram of `run` that went down since the
  // series was last served (or went down before and has not been forgotten). `run_started` is
  // this run's start, unix seconds.
  void Mark(MetricSink* run, double run_started);
  size_t tracked() const { return series_.size(); }

  static constexpr double kForgetAfterSeconds = 3600;

 private:
  struct Series {
    double value = 0;
    double created = 0;  // 0: none seen
    double seen = 0;     // the last run that served it
  };
  std::unordered_map<std::uint64_t, Series> series_;
  double previous_run_ = 0;  // the collector's run before this one (0: none yet)
  double last_sweep_ = 0;
};

}  // namespace nvmeof
