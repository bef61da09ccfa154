// `top`'s frame: per-group rows (TopGroup) computed from two scrapes of a running exporter's
// /metrics, N seconds apart (`top --from`; live.h builds the same rows from records). Label names
// are read through a small table (device, disk, nvme_namespace, subsystem, ...) so the view
// keeps working across label renames.
#pragma once

#include <cmath>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace nvmeof::profile {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Prometheus text exposition (comments skipped). False with *error naming the line if a sample
// line cannot be read.
bool ParseExposition(std::string_view text, std::vector<Sample>* out, std::string* error);

struct TopStage {
  std::string name;
  double mean = 0, share = 0, queue_depth = 0;
};

struct TopGroup {
  std::string role, transport, op, size, device;
  double commands_per_second = 0;
  double sampled = 0;                 // sampled commands in the interval
  double mean = 0, p50 = 0, p99 = 0;  // end to end, seconds
  double queue_depth = 0;             // Little's law: commands/s * mean
  std::vector<TopStage> stages;       // path order
};

// One frame from two scrapes `seconds` apart; rows sorted by time spent (commands/s * mean).
std::vector<TopGroup> TopFrame(const std::vector<Sample>& before, const std::vector<Sample>& after,
                               double seconds);

// histogram_quantile over cumulative (le, count) buckets, linear within a bucket.
double BucketQuantile(double q, const std::vector<std::pair<double, double>>& buckets);

}  // namespace nvmeof::profile
