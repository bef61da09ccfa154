#include "exporter/scraper.h"

#include <prometheus/text_serializer.h>

#include <chrono>
#include <future>
#include <sstream>

#include "collectors/base/log.h"

namespace nvmeof {

Scraper::Scraper(std::vector<std::unique_ptr<Collector>> collectors)
    : collectors_(std::move(collectors)), sanitized_total_(collectors_.size()) {}

namespace {

struct Result {
  MetricSink sink;
  bool ok = false;
  double seconds = 0;
};

Result RunOne(Collector& c) {
  Result r;
  const auto start = std::chrono::steady_clock::now();
  try {
    r.ok = c.Collect(r.sink);
  } catch (const std::exception& e) {  // a collector bug must not take the scrape down
    r.ok = false;
    LogError("collector threw", Kv("collector", c.Name()) + " " + Kv("err", e.what()));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!r.ok) LogDebug("collector failed", Kv("collector", c.Name()));
  return r;
}

}  // namespace

MetricSink Scraper::CollectAll() {
  // One thread per collector: sysfs walks and ethtool ioctls overlap; a dozen threads per
  // scrape cost tens of microseconds.
  std::vector<std::future<Result>> futures;
  futures.reserve(collectors_.size());
  for (auto& c : collectors_) {
    futures.push_back(std::async(std::launch::async, RunOne, std::ref(*c)));
  }
  MetricSink out;
  out.Gauge("nvmeof_exporter_build_info",
            "Version and revision of nvmeof_exporter; value is always 1.",
            {{"version", NVMEOF_VERSION}, {"revision", NVMEOF_REVISION}}, 1);
  MetricSink self;
  for (size_t i = 0; i < collectors_.size(); ++i) {
    Result r = futures[i].get();
    const std::string name(collectors_[i]->Name());
    self.Gauge("nvmeof_exporter_collector_success",
               "1 if the collector's source was read this scrape, 0 if it failed.",
               {{"collector", name}}, r.ok ? 1 : 0);
    self.Gauge("nvmeof_exporter_collector_duration_seconds", "Time the collector took this scrape.",
               {{"collector", name}}, r.seconds);
    self.Gauge("nvmeof_exporter_collector_skipped_series",
               "Series the collector skipped this scrape: unreadable or malformed source values.",
               {{"collector", name}}, static_cast<double>(r.sink.skipped()));
    const auto sanitized = sanitized_total_[i] += r.sink.sanitized();
    self.Counter("nvmeof_exporter_label_values_sanitized_total",
                 "Label values the exporter changed to serve them: invalid UTF-8, control "
                 "characters or longer than 1024 bytes.",
                 {{"collector", name}}, static_cast<double>(sanitized));
    out.Append(std::move(r.sink));
  }
  out.Append(std::move(self));
  return out;
}

std::string Scraper::Scrape() {
  auto families = CollectAll().Take();
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, families);
  return text.str();
}

}  // namespace nvmeof
