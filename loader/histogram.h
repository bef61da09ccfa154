// Export side of the BPF latency histograms (bucket math in bpf/hist.h): which of the fine
// in-kernel buckets become Prometheus buckets, and their cumulative counts.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/metric_sink.h"

namespace nvmeof {

class BucketLayout {
 public:
  // Empty `requested_seconds`: every fine bucket (217 bounds, 2^-23 s = 119 ns .. 16 s, the
  // schema-3 bounds 2^(j/8) s), which keeps histogram_quantile within 10% of the true quantile.
  // Otherwise each requested bound snaps to the nearest fine bound (in log space, so it moves by at
  // most 5%) and the exported `le` is that fine bound: counts stay exact instead of guessed. Fewer
  // buckets trade accuracy.
  static BucketLayout Make(const std::vector<double>& requested_seconds);
  // The default classic layout served to text scrapes: 16 bounds, every power of two from
  // 2^-17 s (7.6 us) to 2^-2 s (250 ms), which are also schema-3 (and schema-0) bounds.
  static BucketLayout Default();

  const std::vector<double>& bounds() const { return bounds_; }  // seconds, ascending
  // Cumulative counts at each exported bound, from NVMEOF_HIST_BUCKETS fine counts.
  std::vector<std::uint64_t> Cumulative(const unsigned long long* fine) const;

 private:
  std::vector<unsigned> fine_index_;  // fine bucket whose upper bound is bounds_[i]
  std::vector<double> bounds_;
};

// Upper bound in seconds of every finite fine bucket (index 0 .. NVMEOF_HIST_BUCKETS-2):
// 2^-23 for the zero bucket, then the native schema-3 bound 2^(j/8), j = i - 184.
std::vector<double> FineBucketBounds();

// The native schema-3 histogram of NVMEOF_HIST_BUCKETS fine counts: in-kernel bucket i is
// native bucket i - 184, the zero bucket is the native zero bucket (zero_threshold 2^-23 s), and
// the overflow bucket (> 16 s) is counted in native bucket 33 (16 s .. 17.4 s]: native buckets
// have no +Inf, and count must equal the classic count.
std::shared_ptr<const NativeHistogram> NativeFromFine(const unsigned long long* fine,
                                                      bool with_classic);

// Upper bound in seconds of native schema-3 bucket j: 2^(j/8), computed as Prometheus does.
double NativeBucketBound(int j);

}  // namespace nvmeof
