#include "loader/histogram.h"

#include <algorithm>
#include <cmath>

#include "bpf/hist.h"

namespace nvmeof {

double NativeBucketBound(int j) {
  // As Prometheus computes schema-3 bounds (histogram/generic.go, getBound): a table of
  // 2^(f/8) scaled by a power of two, so classic `le` values equal the native bounds exactly.
  int octave =
      j >= 0 ? j / NVMEOF_HIST_GROUPS : -((-j + NVMEOF_HIST_GROUPS - 1) / NVMEOF_HIST_GROUPS);
  int frac = j - octave * NVMEOF_HIST_GROUPS;
  return std::ldexp(std::exp2(frac / static_cast<double>(NVMEOF_HIST_GROUPS)), octave);
}

std::vector<double> FineBucketBounds() {
  std::vector<double> out;
  out.push_back(std::ldexp(1.0, NVMEOF_HIST_ZERO_THRESHOLD_LOG2_S));
  for (int i = 1; i + 1 < NVMEOF_HIST_BUCKETS; ++i) {
    out.push_back(NativeBucketBound(i - NVMEOF_HIST_NATIVE_OFFSET));
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

BucketLayout BucketLayout::Default() {
  std::vector<double> bounds;
  for (int e = -17; e <= -2; ++e) bounds.push_back(std::ldexp(1.0, e));
  return Make(bounds);
}

std::shared_ptr<const NativeHistogram> NativeFromFine(const unsigned long long* fine,
                                                      bool with_classic) {
  auto h = std::make_shared<NativeHistogram>();
  h->schema = NVMEOF_HIST_SCHEMA;
  h->zero_threshold = std::ldexp(1.0, NVMEOF_HIST_ZERO_THRESHOLD_LOG2_S);
  h->zero_count = fine[0];
  h->with_classic = with_classic;
  // In-kernel buckets 1 .. BUCKETS-1 are native -183 .. 33 (the overflow bucket as 33).
  static_assert(sizeof(unsigned long long) == sizeof(std::uint64_t));
  SetNativeBuckets(h.get(), 1 - NVMEOF_HIST_NATIVE_OFFSET,
                   reinterpret_cast<const std::uint64_t*>(fine + 1), NVMEOF_HIST_BUCKETS - 1);
  return h;
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
