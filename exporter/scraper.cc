#include "exporter/scraper.h"

#include <prometheus/text_serializer.h>

#include <condition_variable>
#include <cstdio>
#include <iterator>
#include <mutex>
#include <sstream>
#include <system_error>
#include <thread>

#include "collectors/base/log.h"

namespace nvmeof {

namespace {

using Clock = std::chrono::steady_clock;

struct Result {
  MetricSink sink;
  bool ok = false;
  double seconds = 0;
};

Result RunOne(Collector& c) {
  Result r;
  const auto start = Clock::now();
  try {
    r.ok = c.Collect(r.sink);
  } catch (const std::exception& e) {  // a collector bug must not take the scrape down
    r.ok = false;
    LogError("collector threw", Kv("collector", c.Name()) + " " + Kv("err", e.what()));
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!r.ok) LogDebug("collector failed", Kv("collector", c.Name()));
  return r;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

}  // namespace

// Shared by the Scraper and the run in flight; everything below `mu` is guarded by it.
struct Scraper::Slot {
  std::shared_ptr<Collector> collector;
  std::string name;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  bool running = false;
  bool overdue = false;                // the run in flight has missed some scrape's deadline
  Clock::time_point started{};         // of the run in flight
  std::uint64_t finished = 0;          // runs finished so far
  std::shared_ptr<const Result> last;  // the last finished run's result
  std::uint64_t timeouts = 0;          // scrapes that reported this collector as timed out
};

namespace {

// Starts a run on a detached thread; the thread keeps the slot (and so the collector) alive.
// Called with slot->mu held. Returns false if no thread could be started.
bool StartRun(const std::shared_ptr<Scraper::Slot>& slot) {
  slot->running = true;
  slot->overdue = false;
  slot->started = Clock::now();
  try {
    std::thread([slot] {
      auto result = std::make_shared<const Result>(RunOne(*slot->collector));
      std::lock_guard<std::mutex> lock(slot->mu);
      if (slot->overdue) {
        LogWarn("collector returned after its scrape deadline",
                Kv("collector", slot->name) + " " + Kv("seconds", Seconds(result->seconds)));
      }
      slot->last = std::move(result);
      ++slot->finished;
      slot->running = false;
      slot->cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    slot->running = false;
    LogError("cannot start collector thread",
             Kv("collector", slot->name) + " " + Kv("err", e.what()));
    return false;
  }
  return true;
}

}  // namespace

namespace {
std::vector<std::shared_ptr<Collector>> Shared(std::vector<std::unique_ptr<Collector>> in) {
  return {std::make_move_iterator(in.begin()), std::make_move_iterator(in.end())};
}
}  // namespace

Scraper::Scraper(std::vector<std::unique_ptr<Collector>> collectors)
    : Scraper(Shared(std::move(collectors))) {}

Scraper::Scraper(std::vector<std::shared_ptr<Collector>> collectors) {
  for (auto& c : collectors) {
    auto slot = std::make_shared<Slot>();
    slot->collector = std::move(c);
    slot->name = std::string(slot->collector->Name());
    slots_.push_back(std::move(slot));
  }
}

Scraper::~Scraper() { Shutdown(); }

void Scraper::Shutdown() {
  for (auto& slot : slots_) {
    std::lock_guard<std::mutex> lock(slot->mu);
    slot->stopping = true;
    slot->cv.notify_all();
  }
}

MetricSink Scraper::CollectAll(Duration timeout) {
  const auto deadline = Clock::now() + timeout;
  // What this scrape waits for from each slot: the run that finishes as the `wait_for`-th.
  // 0 = nothing to wait for (already reported as timed out, or no thread).
  std::vector<std::uint64_t> wait_for(slots_.size(), 0);
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = *slots_[i];
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.stopping) continue;
    if (s.running && s.overdue) continue;  // stuck since an earlier scrape: do not pile up
    if (s.running || StartRun(slots_[i])) wait_for[i] = s.finished + 1;
  }

  MetricSink out;
  out.Gauge("nvmeof_exporter_build_info",
            "Version and revision of nvmeof_exporter; value is always 1.",
            {{"version", NVMEOF_VERSION}, {"revision", NVMEOF_REVISION}}, 1);
  MetricSink self;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = *slots_[i];
    std::shared_ptr<const Result> r;
    double seconds = 0;
    std::uint64_t timeouts = 0;
    {
      std::unique_lock<std::mutex> lock(s.mu);
      if (wait_for[i] != 0) {
        s.cv.wait_until(lock, deadline, [&] { return s.finished >= wait_for[i] || s.stopping; });
        if (s.finished >= wait_for[i]) r = s.last;
      }
      if (!r && s.running) {
        if (!s.overdue && !s.stopping) {
          LogWarn(
              "collector missed the scrape deadline; its series are left out until it returns",
              Kv("collector", s.name) + " " +
                  Kv("timeout_seconds", Seconds(std::chrono::duration<double>(timeout).count())));
        }
        s.overdue = true;
        ++s.timeouts;
        seconds = std::chrono::duration<double>(Clock::now() - s.started).count();
      }
      timeouts = s.timeouts;
    }
    const Labels labels = {{"collector", s.name}};
    self.Gauge("nvmeof_exporter_collector_success",
               "1 if the collector's source was read this scrape, 0 if it failed or timed out.",
               labels, r && r->ok ? 1 : 0);
    self.Gauge("nvmeof_exporter_collector_duration_seconds",
               "Time the collector took this scrape (if it timed out: how long its run has taken "
               "so far).",
               labels, r ? r->seconds : seconds);
    self.Gauge("nvmeof_exporter_collector_skipped_series",
               "Series the collector skipped this scrape: unreadable or malformed source values.",
               labels, r ? static_cast<double>(r->sink.skipped()) : 0);
    self.Counter("nvmeof_exporter_collector_timeouts_total",
                 "Scrapes that left the collector out because it missed the scrape deadline or "
                 "was still running from an earlier scrape.",
                 labels, static_cast<double>(timeouts));
    // Concurrent scrapes may share one run's result, so each appends a copy.
    if (r) out.Append(MetricSink(r->sink));
  }
  out.Append(std::move(self));
  return out;
}

std::string Scraper::Scrape(Duration timeout) {
  auto families = CollectAll(timeout).Take();
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, families);
  return text.str();
}

}  // namespace nvmeof
