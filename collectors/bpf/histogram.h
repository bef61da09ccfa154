// Export side of the BPF latency histograms (bucket math in bpf/hist.h): which of the fine
// in-kernel buckets become Prometheus buckets, and their cumulative counts.
#pragma once

#include <cstdint>
#include <vector>

namespace nvmeof {

class BucketLayout {
 public:
  // Empty `requested_seconds`: every fine bucket (216 bounds, 128 ns .. 17.2 s), which keeps
  // histogram_quantile within 10% of the true quantile. Otherwise each requested bound snaps
  // to the nearest fine bound (in log space, so it moves by at most 5%) and the exported `le`
  // is that fine bound: counts stay exact instead of guessed. Fewer buckets trade accuracy.
  static BucketLayout Make(const std::vector<double>& requested_seconds);

  const std::vector<double>& bounds() const { return bounds_; }  // seconds, ascending
  // Cumulative counts at each exported bound, from NVMEOF_HIST_BUCKETS fine counts.
  std::vector<std::uint64_t> Cumulative(const unsigned long long* fine) const;

 private:
  std::vector<unsigned> fine_index_;  // fine bucket whose upper bound is bounds_[i]
  std::vector<double> bounds_;
};

// Upper bound in seconds of every finite fine bucket (index 0 .. NVMEOF_HIST_BUCKETS-2).
std::vector<double> FineBucketBounds();

}  // namespace nvmeof
