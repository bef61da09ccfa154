#include "profile/explain_render.h"

#include <time.h>

#include <cmath>
#include <cstdio>

#include "loader/flight_recorder.h"
#include "profile/json_out.h"
#include "profile/text.h"

namespace nvmeof::profile {

namespace {

// HH:MM:SS.mmm local time of a CLOCK_REALTIME ns; "-" for 0 (a record without time_ns).
std::string Clock(std::uint64_t ns, bool millis = true) {
  if (!ns) return "-";
  const time_t sec = static_cast<time_t>(ns / 1'000'000'000);
  tm t{};
  localtime_r(&sec, &t);
  char buf[32];
  if (millis) {
    std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03u", t.tm_hour, t.tm_min, t.tm_sec,
                  static_cast<unsigned>(ns % 1'000'000'000 / 1'000'000));
  } else {
    std::snprintf(buf, sizeof buf, "%02d:%02d:%02d", t.tm_hour, t.tm_min, t.tm_sec);
  }
  return buf;
}

std::string Ms(double seconds) { return std::isnan(seconds) ? "-" : Fmt("%.3f", seconds * 1e3); }

// The node a host command comes from: its host file's hostname, else its URL.
const std::string& Node(const Explanation& x, const ExplainCommand& c) {
  const ExplainSource& s = x.hosts[c.host_source];
  return s.file.header.hostname.empty() ? s.url : s.file.header.hostname;
}

size_t Answered(const std::vector<ExplainSource>& sources) {
  size_t n = 0;
  for (const auto& s : sources) n += s.ok;
  return n;
}

void PrintHeader(const Explanation& x, std::ostream& out) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "nvmeof explain: %s - %s (%.0f s): %zu host commands from %zu of %zu host "
                "exporters, %zu target records from %zu of %zu target exporters\n",
                Clock(x.since_ns, false).c_str(), Clock(x.now_ns, false).c_str(),
                static_cast<double>(x.now_ns - x.since_ns) * 1e-9, x.host_records,
                Answered(x.hosts), x.hosts.size(), x.target_records, Answered(x.targets),
                x.targets.size());
  out << buf;
  for (const auto& s : x.hosts)
    if (s.ok && s.limit_hit)
      out << "  " << s.url << ": as many records as asked for: the oldest of the window are "
          << "not shown\n";
  if (!x.targets_answered) {
    out << (x.targets.empty() ? "host side only: no target exporter given (--target URL, "
                                "--targets auto)"
                              : "host side only: no target exporter answered")
        << ": host wait (posted -> response) is shown as network+target, which only the "
           "target's records split into network, target and drive\n";
  } else {
    out << "join: " << x.joined << " of " << x.host_records
        << " host commands found their target record (" << Percent(x.joined, x.host_records)
        << "%)";
    if (x.unmatched)
      out << "; " << x.unmatched << " did not (their network+target is shown unsplit)";
    out << "\n";
    if (!x.drive_known)
      out << "drive: unknown (the targets record no exec point at the default tier): "
             "\"target (incl. drive)\" is the whole target residence, its drive included\n";
  }
  if (x.without_wait)
    out << x.without_wait << " host commands lack the points of a host wait: not split\n";
  out << "host end to end p99: " << Ms(x.p99) << " ms\n";
}

void PrintSlowest(const Explanation& x, std::ostream& out) {
  const bool nodes = x.hosts.size() > 1;
  out << "\nslowest " << x.slowest.size() << " of " << x.host_records << " commands (ms):\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s%-12s  %-10s %-12s %-7s %4s %5s %12s %9s %9s ",
                nodes ? "node                 " : "", "time", "controller", "device", "op", "qid",
                "cid", "slba", "e2e", "host");
  out << buf;
  if (x.targets_answered) {
    std::snprintf(buf, sizeof buf, "%9s %9s %9s\n", "network", x.drive_known ? "target" : "target*",
                  "drive");
    out << buf;
  } else {
    out << "network+target\n";
  }
  for (const auto& c : x.slowest) {
    const Record& h = *c.host;
    const std::string controller = ControllerOfDisk(h.device);
    std::string row;
    if (nodes) {
      row = Node(x, c).substr(0, 20);
      row.resize(21, ' ');
    }
    std::snprintf(buf, sizeof buf, "%-12s  %-10s %-12s %-7s %4u %5u %12llu %9s %9s ",
                  Clock(h.time_ns).c_str(), controller.empty() ? "-" : controller.c_str(),
                  h.device.empty() ? "-" : h.device.c_str(), h.op.c_str(), h.qid, h.cid,
                  static_cast<unsigned long long>(h.slba), Ms(c.e2e).c_str(),
                  Ms(c.parts[kHostPart]).c_str());
    row += buf;
    if (c.target) {
      std::snprintf(buf, sizeof buf, "%9s %9s %9s", Ms(c.parts[kNetwork]).c_str(),
                    Ms(c.parts[kTargetPart]).c_str(), Ms(c.parts[kDrive]).c_str());
      row += buf;
    } else if (!x.targets_answered) {
      std::snprintf(buf, sizeof buf, "%14s", Ms(c.parts[kNetworkTarget]).c_str());
      row += buf;
    } else if (!std::isnan(c.parts[kNetworkTarget])) {
      row += "network+target " + Ms(c.parts[kNetworkTarget]) + " (no target record)";
    }
    out << row << "\n";
  }
  if (!x.drive_known && x.targets_answered) out << "  target*: target (incl. drive)\n";
}

void PrintTail(const Explanation& x, std::ostream& out) {
  const TailSummary& t = *x.tail;
  out << "\ntail: the " << t.commands << " commands at or above "
      << (t.by_min ? "--min" : "the p99") << " (" << Ms(t.threshold) << " ms)";
  if (t.joined) out << ", " << t.split << " of them joined with their target record";
  out << ":\n";
  if (!t.split) {
    out << "  none of them can be split\n";
    return;
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-22s %7s %12s %12s\n", "component", "share", "time_ms",
                "largest_in");
  out << buf;
  for (const auto& p : t.parts) {
    std::snprintf(buf, sizeof buf, "  %-22s %6.1f%% %12.3f %12zu  |%s|\n",
                  ComponentName(p.component, t.drive_known), p.share * 100, p.seconds * 1e3,
                  p.largest_in, Bar(p.share, 20).c_str());
    out << buf;
  }
  const TailPart& d = t.parts[0];
  std::snprintf(buf, sizeof buf, "%.1f%% of its time, the largest component of %zu of its %zu",
                d.share * 100, d.largest_in, t.split);
  if (t.clear) {
    out << ComponentName(d.component, t.drive_known) << " dominates the tail: " << buf
        << " commands\n";
  } else {
    out << "no single component dominates the tail: " << ComponentName(d.component, t.drive_known)
        << " holds the most, " << buf << " commands\n";
  }
}

Json SourcesJson(const Explanation& x) {
  Json sources = Json::array();
  for (const auto* list : {&x.hosts, &x.targets})
    for (const auto& s : *list) {
      Json j = {{"url", s.url},        {"role", s.role},
                {"ok", s.ok},          {"records", s.file.records.size()},
                {"lost", s.file.lost}, {"limit_hit", s.limit_hit}};
      if (!s.ok) j["error"] = s.error;
      sources.push_back(std::move(j));
    }
  return sources;
}

Json CommandJson(const Explanation& x, const ExplainCommand& c) {
  const Record& h = *c.host;
  Json parts = Json::object();
  for (int k = 0; k < kComponents; ++k) parts[ComponentKey(k)] = JsonReal(c.parts[k]);
  const int largest = c.Largest();
  return {{"time_ns", h.time_ns ? Json(h.time_ns) : Json(nullptr)},
          {"ref", h.ref},
          {"node", Node(x, c)},
          {"controller", ControllerOfDisk(h.device)},
          {"device", h.device},
          {"subsystem", h.subsys},
          {"transport", h.transport},
          {"op", h.op},
          {"size", h.size},
          {"qid", h.qid},
          {"cid", h.cid},
          {"slba", h.slba},
          {"e2e_seconds", JsonReal(c.e2e)},
          {"joined", c.target != nullptr},
          {"target_ref", c.target ? Json(c.target->ref) : Json(nullptr)},
          {"largest", largest >= 0 ? Json(ComponentKey(largest)) : Json(nullptr)},
          {"components", std::move(parts)}};
}

Json TailJson(const TailSummary& t) {
  Json parts = Json::array();
  for (const auto& p : t.parts)
    parts.push_back({{"component", ComponentKey(p.component)},
                     {"name", ComponentName(p.component, t.drive_known)},
                     {"seconds", JsonReal(p.seconds)},
                     {"share", JsonReal(p.share)},
                     {"largest_in", p.largest_in}});
  const bool any = t.split > 0;
  return {{"threshold", t.by_min ? "min" : "p99"},
          {"threshold_seconds", JsonReal(t.threshold)},
          {"commands", t.commands},
          {"split", t.split},
          {"joined", t.joined},
          {"drive_known", t.drive_known},
          {"components", std::move(parts)},
          {"dominant", any ? Json(ComponentKey(t.parts[0].component)) : Json(nullptr)},
          {"dominant_share", any ? JsonReal(t.parts[0].share) : Json(nullptr)},
          {"clear", t.clear}};
}

}  // namespace

void PrintExplainText(const Explanation& x, std::ostream& out) {
  PrintHeader(x, out);
  if (!x.tail) return;
  PrintSlowest(x, out);
  PrintTail(x, out);
}

void PrintExplainJson(const Explanation& x, std::ostream& out) {
  Json slowest = Json::array();
  for (const auto& c : x.slowest) slowest.push_back(CommandJson(x, c));
  Json doc = {{"window",
               {{"since_ns", x.since_ns},
                {"until_ns", x.now_ns},
                {"seconds", JsonReal(static_cast<double>(x.now_ns - x.since_ns) * 1e-9)}}},
              {"sources", SourcesJson(x)},
              {"host_commands", x.host_records},
              {"target_records", x.target_records},
              {"joined", x.joined},
              {"unmatched", x.unmatched},
              {"without_wait", x.without_wait},
              {"targets_answered", x.targets_answered},
              {"drive_known", x.drive_known},
              {"p99_seconds", JsonReal(x.p99)},
              {"slowest", std::move(slowest)},
              {"tail", x.tail ? TailJson(*x.tail) : Json(nullptr)}};
  WriteJson(doc, out);
}

std::string NoRecordsMessage(const Explanation& x) {
  const size_t answered = Answered(x.hosts);
  if (!answered) return "no host exporter answered: nothing measured";
  return std::string("no records: ") +
         (answered > 1
              ? "the flight recorders of " + std::to_string(answered) + " host exporters hold"
              : "the host exporter's flight recorder holds") +
         " no NVMe-oF command that ended in the last " +
         Fmt("%g", static_cast<double>(x.now_ns - x.since_ns) * 1e-9) +
         " s (no NVMe-oF I/O, or none sampled)";
}

}  // namespace nvmeof::profile
