#include "profile/top_render.h"

#include <cmath>
#include <cstdio>

#include "profile/json_out.h"
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
  Json doc = {{"interval_seconds", JsonReal(seconds)}};
  if (!std::isnan(at)) doc["at_monotonic_seconds"] = JsonReal(at);
  doc["groups"] = Json::array();
  for (const TopGroup& g : groups) {
    Json stages = Json::array();
    for (const TopStage& s : g.stages)
      stages.push_back({{"stage", s.name},
                        {"mean_seconds", JsonReal(s.mean)},
                        {"share", JsonReal(s.share)},
                        {"queue_depth", JsonReal(s.queue_depth)}});
    doc["groups"].push_back({{"role", g.role},
                             {"transport", g.transport},
                             {"op", g.op},
                             {"size", g.size},
                             {"device", g.device},
                             {"commands_per_second", JsonReal(g.commands_per_second)},
                             {"sampled", JsonReal(g.sampled)},
                             {"mean_seconds", JsonReal(g.mean)},
                             {"p50_seconds", JsonReal(g.p50)},
                             {"p99_seconds", JsonReal(g.p99)},
                             {"queue_depth", JsonReal(g.queue_depth)},
                             {"stages", std::move(stages)}});
  }
  WriteJson(doc, out);
}

void PrintFrame(const std::vector<TopGroup>& groups, double seconds, bool json, bool once,
                std::ostream& out, double at) {
  if (json) {
    PrintTopJson(groups, seconds, out, at);
  } else {
    if (!once) out << "\x1b[H\x1b[2J";
    PrintTopText(groups, seconds, out);
  }
  out.flush();
}

}  // namespace nvmeof::profile
