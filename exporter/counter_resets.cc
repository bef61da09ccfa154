#include "exporter/counter_resets.h"

#include <algorithm>
#include <functional>
#include <string_view>

namespace nvmeof {

void CounterResets::Mark(MetricSink* run, double run_ended) {
  const auto& families = run->families();
  for (size_t f = 0; f < families.size(); ++f) {
    const auto& family = families[f];
    const bool counter = family.type == prometheus::MetricType::Counter;
    if (!counter && family.type != prometheus::MetricType::Histogram) continue;
    const std::uint64_t name = std::hash<std::string_view>{}(family.name);
    for (size_t m = 0; m < family.metric.size(); ++m) {
      const auto& metric = family.metric[m];
      const double value =
          counter ? metric.counter.value : static_cast<double>(metric.histogram.sample_count);
      const double sum = counter ? 0 : metric.histogram.sample_sum;
      const std::uint64_t key = LabelHash(metric.label) ^ (name * 0x9e3779b97f4a7c15ULL);
      auto [it, added] = series_.try_emplace(key);
      Series& s = it->second;
      // A histogram's sum only grows with its count (latencies are not negative): a new
      // object's buckets can be lower at an equal or larger count (the VM soak: a bucket 1 -> 0
      // at an equal count), and its sum then tells.
      const bool reset = value < s.value || sum < s.sum || (value == s.value && sum != s.sum);
      if (!added && reset && previous_run_ > 0) s.created = previous_run_;
      s.value = value;
      s.sum = sum;
      s.seen = run_ended;
      if (s.created == 0) continue;
      // A collector's own created timestamp stands unless a reset came after it.
      const SeriesSide* side = run->SideOf(f, m);
      run->SetCreated(f, m, std::max(s.created, side ? side->created : 0.0));
    }
  }
  previous_run_ = run_ended;
  if (run_ended - last_sweep_ < kForgetAfterSeconds / 4) return;
  last_sweep_ = run_ended;
  std::erase_if(series_,
                [&](const auto& kv) { return run_ended - kv.second.seen > kForgetAfterSeconds; });
}

}  // namespace nvmeof
