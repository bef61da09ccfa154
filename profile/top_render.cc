#include "profile/top_render.h"

#include <cmath>
#include <cstdio>

#include "profile/text.h"

namespace nvmeof::profile {

void PrintTopText(const std::vector<TopGroup>& groups, double seconds, std::ostream& out) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "nvmeof top: %.1f s interval, %zu active groups\n", seconds,
                groups.size());
  out << buf;
  for (const auto& g : groups) {
    std::snprintf(buf, sizeof buf,
                  "\n%s %s %s %s %s: %.1f cmd/s, n=%.0f sampled, mean %.1fus p50 %.1fus p99 "
                  "%.1fus, L=%.2f\n",
                  g.role.c_str(), g.transport.c_str(), g.op.c_str(),
                  g.size.empty() ? "-" : g.size.c_str(), g.device.c_str(), g.commands_per_second,
                  g.sampled, g.mean * 1e6, g.p50 * 1e6, g.p99 * 1e6, g.queue_depth);
    out << buf;
    for (const auto& s : g.stages) {
      std::snprintf(buf, sizeof buf, "  %-28s %10.1fus %6.1f%% %6.2f |%s|\n", s.name.c_str(),
                    s.mean * 1e6, s.share * 100, s.queue_depth, Bar(s.share, 20).c_str());
      out << buf;
    }
  }
}

void PrintTopJson(const std::vector<TopGroup>& groups, double seconds, std::ostream& out,
                  double at) {
  out << "{\"interval_seconds\":" << JsonNumber(seconds);
  if (!std::isnan(at)) out << ",\"at_monotonic_seconds\":" << JsonNumber(at);
  out << ",\"groups\":[";
  for (size_t i = 0; i < groups.size(); ++i) {
    const TopGroup& g = groups[i];
    out << (i ? "," : "") << "{\"role\":" << JsonString(g.role)
        << ",\"transport\":" << JsonString(g.transport) << ",\"op\":" << JsonString(g.op)
        << ",\"size\":" << JsonString(g.size) << ",\"device\":" << JsonString(g.device)
        << ",\"commands_per_second\":" << JsonNumber(g.commands_per_second)
        << ",\"sampled\":" << JsonNumber(g.sampled) << ",\"mean_seconds\":" << JsonNumber(g.mean)
        << ",\"p50_seconds\":" << JsonNumber(g.p50) << ",\"p99_seconds\":" << JsonNumber(g.p99)
        << ",\"queue_depth\":" << JsonNumber(g.queue_depth) << ",\"stages\":[";
    for (size_t j = 0; j < g.stages.size(); ++j) {
      const TopStage& s = g.stages[j];
      out << (j ? "," : "") << "{\"stage\":" << JsonString(s.name)
          << ",\"mean_seconds\":" << JsonNumber(s.mean) << ",\"share\":" << JsonNumber(s.share)
          << ",\"queue_depth\":" << JsonNumber(s.queue_depth) << "}";
    }
    out << "]}";
  }
  out << "]}\n";
}

}  // namespace nvmeof::profile
