#include "profile/report_render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "loader/nvmeof.h"
#include "profile/json_out.h"
#include "profile/text.h"

namespace nvmeof::profile {
namespace {

void PrintHistogram(const Component& c, std::ostream& out) {
  std::uint64_t most = c.hist.negative;
  for (auto b : c.hist.buckets) most = std::max(most, b);
  if (!most) return;
  auto line = [&](const std::string& label, std::uint64_t count) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "        %12s |%s| %llu\n", label.c_str(),
                  Bar(static_cast<double>(count) / static_cast<double>(most), 40).c_str(),
                  static_cast<unsigned long long>(count));
    out << buf;
  };
  if (c.hist.negative) line("< 0", c.hist.negative);
  size_t first = 0, last = 0;
  for (size_t i = 0; i < c.hist.buckets.size(); ++i)
    if (c.hist.buckets[i]) last = i;
  while (first < last && !c.hist.buckets[first]) ++first;
  for (size_t i = first; i <= last && i < c.hist.buckets.size(); ++i) {
    const std::string label = i == 0 ? "< 1us" : "< " + std::to_string(1ull << i) + "us";
    line(label, c.hist.buckets[i]);
  }
}

void PrintGroups(const std::vector<Group>& groups, bool detail, std::ostream& out) {
  for (const auto& g : groups) {
    out << "\n"
        << g.role << " " << g.transport << " " << g.op << " " << g.size << " "
        << (g.device.empty() ? "-" : g.device) << ": n=" << g.n
        << " end_to_end mean=" << Us(g.end_to_end.mean) << "us p50=" << Us(g.end_to_end.p50)
        << "us p99=" << Us(g.end_to_end.p99) << "us L=" << Fmt("%.2f", g.end_to_end.queue_depth)
        << "\n";
    char buf[256];
    if (!detail) {
      std::snprintf(buf, sizeof buf, "  %-40s %10s %7s %7s  %s\n", "stage", "mean_us", "share", "L",
                    "");
      out << buf;
      for (const auto& c : g.components) {
        std::snprintf(buf, sizeof buf, "  %-40s %10s %6.1f%% %7.2f  |%s|\n", c.name.c_str(),
                      Us(c.mean).c_str(), c.share * 100, c.queue_depth, Bar(c.share, 20).c_str());
        out << buf;
      }
      continue;
    }
    std::snprintf(buf, sizeof buf, "  %-40s %8s %10s %7s %10s %10s %10s\n", "component", "n",
                  "mean_us", "L", "p50_us", "p99_us", "p99.9_us");
    out << buf;
    for (const auto& c : g.components) {
      std::snprintf(buf, sizeof buf, "  %-40s %8zu %10s %7.2f %10s %10s %10s\n", c.name.c_str(),
                    c.values.size(), Us(c.mean).c_str(), c.queue_depth, Us(c.p50).c_str(),
                    Us(c.p99).c_str(), Us(c.p999).c_str());
      out << buf;
      PrintHistogram(c, out);
    }
  }
}

Json ComponentJson(const Component& c) {
  return {{"name", c.name},
          {"n", c.values.size()},
          {"mean_seconds", JsonReal(c.mean)},
          {"share", JsonReal(c.share)},
          {"queue_depth", JsonReal(c.queue_depth)},
          {"p50_seconds", JsonReal(c.p50)},
          {"p99_seconds", JsonReal(c.p99)},
          {"p999_seconds", JsonReal(c.p999)}};
}

Json GroupsJson(const std::vector<Group>& groups) {
  Json out = Json::array();
  for (const Group& g : groups) {
    Json components = Json::array();
    for (const auto& c : g.components) components.push_back(ComponentJson(c));
    out.push_back({{"role", g.role},
                   {"transport", g.transport},
                   {"op", g.op},
                   {"size", g.size},
                   {"device", g.device},
                   {"n", g.n},
                   {"end_to_end", ComponentJson(g.end_to_end)},
                   {"components", std::move(components)}});
  }
  return out;
}

Json FileJson(const RecordHeader& h, std::uint64_t lost) {
  return {{"role", h.role},           {"hostname", h.hostname},         {"kernel", h.kernel},
          {"mechanism", h.mechanism}, {"sample_every", h.sample_every}, {"lost", lost}};
}

}  // namespace

void PrintReportText(const Report& rep, bool detail, std::ostream& out) {
  auto header = [&](const char* what, const RecordHeader& h, std::uint64_t lost) {
    out << what << ": " << h.role << " " << (h.hostname.empty() ? "?" : h.hostname) << " kernel "
        << (h.kernel.empty() ? "?" : h.kernel) << ", mechanism "
        << (h.mechanism.empty() ? "?" : h.mechanism) << ", 1 in " << h.sample_every
        << " commands sampled, " << lost << " records lost\n";
  };
  header("file", rep.host_header, rep.lost);
  if (rep.target_header) header("file", *rep.target_header, rep.target_lost);
  PrintGroups(rep.groups, detail, out);
  if (!rep.join) return;
  const JoinResult& j = *rep.join;
  out << "\njoin: " << j.matched << " matched, " << Percent(j.matched, j.host_records)
      << "% of the host's " << j.host_records << " records (target file: " << j.target_records
      << ")\n";
  const std::size_t unmatched = j.host_records - j.matched;
  if (unmatched) {
    out << "  unmatched host records: " << unmatched << "\n"
        << "    " << j.unmatched_outside
        << " outside the target file's time span (record was not running there)\n"
        << "    " << j.unmatched_no_key
        << " with no target record of the same qid/cid/slba/nlb (not sampled there: same -s N "
           "on both sides? or points missing)\n"
        << "    " << j.unmatched_no_partner
        << " whose command ids were seen, but no free target record within 1 s (cid reused, "
           "duplicates)\n";
  }
  if (j.matched)
    out << "  network negative (target residence > host wait) for " << j.negative_network << " of "
        << j.matched << " (" << Percent(j.negative_network, j.matched) << "%)\n";
  out << "\njoined per command (network = host wait - target residence):";
  PrintGroups(rep.joined, true, out);
  if (!detail) return;
  out << "\ntarget file:";
  PrintGroups(rep.target_groups, true, out);
}

void PrintReportJson(const Report& rep, std::ostream& out) {
  Json files = Json::array({FileJson(rep.host_header, rep.lost)});
  if (rep.target_header) files.push_back(FileJson(*rep.target_header, rep.target_lost));
  Json doc = {{"format", "nvmeof-report"},
              {"version", 1},
              {"files", std::move(files)},
              {"groups", GroupsJson(rep.groups)}};
  if (rep.join) {
    const JoinResult& j = *rep.join;
    doc["join"] = {{"host_records", j.host_records},
                   {"target_records", j.target_records},
                   {"matched", j.matched},
                   {"unmatched_outside_target_span", j.unmatched_outside},
                   {"unmatched_no_target_record", j.unmatched_no_key},
                   {"unmatched_no_partner_in_window", j.unmatched_no_partner},
                   {"negative_network", j.negative_network}};
    doc["joined"] = GroupsJson(rep.joined);
    doc["target_groups"] = GroupsJson(rep.target_groups);
  }
  WriteJson(doc, out);
}

void PrintComparison(const Report& base, const Report& now, bool json, std::ostream& out) {
  struct Moved {
    std::string group, component;
    double before = 0, after = 0;
    bool joined = false;
  };
  std::vector<Moved> rows;
  auto compare = [&](const std::vector<Group>& a, const std::vector<Group>& b, bool joined) {
    for (const auto& gb : b) {
      auto ga = std::find_if(a.begin(), a.end(), [&](const Group& g) { return g.key == gb.key; });
      if (ga == a.end()) continue;
      for (const auto& cb : gb.components) {
        auto ca = std::find_if(ga->components.begin(), ga->components.end(),
                               [&](const Component& c) { return c.name == cb.name; });
        if (ca == ga->components.end()) continue;
        rows.push_back({gb.key, cb.name, ca->mean, cb.mean, joined});
      }
      rows.push_back({gb.key, "end_to_end", ga->end_to_end.mean, gb.end_to_end.mean, joined});
    }
  };
  // With both joined, the stage that moved is named from the joined components: they split
  // the host's network_and_target into the network and the target's stages.
  const bool joined = base.join && now.join;
  if (joined) compare(base.joined, now.joined, true);
  compare(base.groups, now.groups, false);
  const Moved* most = nullptr;
  for (const auto& r : rows)
    if (r.component != "end_to_end" && r.joined == joined &&
        (!most || std::fabs(r.after - r.before) > std::fabs(most->after - most->before) + 1e-12))
      most = &r;
  if (json) {
    Json doc = {{"format", "nvmeof-report-comparison"}, {"version", 1}, {"rows", Json::array()}};
    for (const auto& r : rows)
      doc["rows"].push_back({{"group", r.group},
                             {"component", r.component},
                             {"baseline_mean_seconds", JsonReal(r.before)},
                             {"mean_seconds", JsonReal(r.after)}});
    doc["moved"] = nullptr;
    if (most)
      doc["moved"] = {{"group", most->group},
                      {"component", most->component},
                      {"change_seconds", JsonReal(most->after - most->before)}};
    WriteJson(doc, out);
    return;
  }
  char buf[256];
  std::string group;
  for (const auto& r : rows) {
    if (r.group != group) {
      out << "\n" << r.group << "\n";
      std::snprintf(buf, sizeof buf, "  %-40s %12s %12s %12s %8s\n", "component", "baseline_us",
                    "now_us", "change_us", "change");
      out << buf;
      group = r.group;
    }
    const double pct = r.before > 0 ? (r.after - r.before) / r.before * 100 : 0;
    std::snprintf(buf, sizeof buf, "  %-40s %12s %12s %+12.1f %+7.1f%%\n", r.component.c_str(),
                  Us(r.before).c_str(), Us(r.after).c_str(), (r.after - r.before) * 1e6, pct);
    out << buf;
  }
  if (most)
    out << "\nmoved most: " << most->component << " (" << most->group
        << "): " << Fmt("%+.1f", (most->after - most->before) * 1e6) << " us, " << Us(most->before)
        << " -> " << Us(most->after) << " us\n";
  else
    out << "\nno group and component in common with the baseline\n";
}

}  // namespace nvmeof::profile
