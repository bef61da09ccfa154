// Runs the enabled collectors for one scrape and renders the Prometheus text format,
// adding the exporter's own series (build info, per-collector success/duration/skips/sanitized).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectors/base/collector.h"

namespace nvmeof {

class Scraper {
 public:
  explicit Scraper(std::vector<std::unique_ptr<Collector>> collectors);

  // Collects everything (collectors in parallel) and returns the text exposition.
  std::string Scrape();
  // The same, as families (for tests).
  MetricSink CollectAll();

 private:
  std::vector<std::unique_ptr<Collector>> collectors_;
  // Label values sanitized since start, per collector (..._label_values_sanitized_total).
  std::vector<std::atomic<std::uint64_t>> sanitized_total_;
};

}  // namespace nvmeof
