#include "collectors/bpf/histogram.h"

#include <algorithm>
#include <cmath>

#include "bpf/hist.h"

namespace nvmeof {

std::vector<double> FineBucketBounds() {
  std::vector<double> out;
  for (unsigned i = 0; i + 1 < NVMEOF_HIST_BUCKETS; ++i) {
    out.push_back(static_cast<double>(nvmeof_hist_upper_ns(i)) / 1e9);
  }
  return out;
}

BucketLayout BucketLayout::Make(const std::vector<double>& requested_seconds) {
  const std::vector<double> fine = FineBucketBounds();
  BucketLayout layout;
  if (requested_seconds.empty()) {
    for (unsigned i = 0; i < fine.size(); ++i) layout.fine_index_.push_back(i);
  } else {
    for (double want : requested_seconds) {
      if (!(want > 0) || !std::isfinite(want)) continue;
      unsigned best = 0;
      for (unsigned i = 1; i < fine.size(); ++i) {
        if (std::fabs(std::log(fine[i] / want)) < std::fabs(std::log(fine[best] / want))) {
          best = i;
        }
      }
      layout.fine_index_.push_back(best);
    }
    std::sort(layout.fine_index_.begin(), layout.fine_index_.end());
    layout.fine_index_.erase(std::unique(layout.fine_index_.begin(), layout.fine_index_.end()),
                             layout.fine_index_.end());
  }
  for (unsigned i : layout.fine_index_) layout.bounds_.push_back(fine[i]);
  return layout;
}

std::vector<std::uint64_t> BucketLayout::Cumulative(const unsigned long long* fine) const {
  std::vector<std::uint64_t> out;
  out.reserve(fine_index_.size());
  std::uint64_t running = 0;
  unsigned next = 0;
  for (unsigned idx : fine_index_) {
    for (; next <= idx; ++next) running += fine[next];
    out.push_back(running);
  }
  return out;
}

}  // namespace nvmeof
