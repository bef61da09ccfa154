// Runs the enabled collectors for one scrape and renders the Prometheus text format,
// adding the exporter's own series (build info, per-collector success/duration/skips).
#pragma once

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
};

}  // namespace nvmeof
