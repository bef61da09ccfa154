#include "profile/top_frame.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "bpf/nvmeof_maps.h"
#include "loader/nvmeof.h"

namespace nvmeof::profile {

namespace {

// Label names, old and new, per meaning: the first one a series has is used.
constexpr std::string_view kDeviceLabels[] = {"device",    "disk", "nvme_namespace", "namespace",
                                              "subsystem", "nqn",  "subsystem_nqn"};
constexpr std::string_view kRoleLabels[] = {"role"};
constexpr std::string_view kTransportLabels[] = {"transport", "trtype"};
constexpr std::string_view kOpLabels[] = {"op", "operation"};
constexpr std::string_view kSizeLabels[] = {"size", "size_class"};
constexpr std::string_view kStageLabels[] = {"stage"};

template <size_t N>
std::string Label(const Sample& s, const std::string_view (&names)[N]) {
  for (auto n : names) {
    auto it = s.labels.find(std::string(n));
    if (it != s.labels.end()) return it->second;
  }
  return "";
}

constexpr std::string_view kNamespaceLabels[] = {"device", "disk", "nvme_namespace", "namespace"};
constexpr std::string_view kControllerLabels[] = {"controller"};

// With bpf.stage_detail=controller (the default since 1.0's stage series), host stage series
// carry the controller but no namespace: then every host series is grouped by controller, so
// stage rows and the per-namespace command series meet in one group.
bool HostStagesByController(const std::vector<Sample>& samples) {
  for (const auto& s : samples) {
    if (s.name.rfind("nvmeof_stage_latency_seconds_", 0) != 0) continue;
    if (Label(s, kRoleLabels) == "host" && Label(s, kNamespaceLabels).empty() &&
        !Label(s, kControllerLabels).empty())
      return true;
  }
  return false;
}

std::string DeviceOf(const Sample& s, bool by_controller) {
  if (by_controller && Label(s, kRoleLabels) == "host") return Label(s, kControllerLabels);
  return Label(s, kDeviceLabels);
}

std::string GroupKey(const Sample& s, bool by_controller) {
  return Label(s, kRoleLabels) + " " + Label(s, kTransportLabels) + " " + Label(s, kOpLabels) +
         " " + Label(s, kSizeLabels) + " " + DeviceOf(s, by_controller);
}

struct Acc {
  Sample any;  // for the group's labels
  double commands = 0, count = 0, sum = 0;
  std::map<double, double> buckets;
  std::map<std::string, std::pair<double, double>> stages;  // count, sum
};

std::map<std::string, Acc> Accumulate(const std::vector<Sample>& samples, bool by_controller) {
  std::map<std::string, Acc> out;
  for (const auto& s : samples) {
    const bool commands = s.name == "nvmeof_commands_total";
    const bool e2e = s.name.rfind("nvmeof_command_latency_seconds_", 0) == 0;
    const bool stage = s.name.rfind("nvmeof_stage_latency_seconds_", 0) == 0;
    if (!commands && !e2e && !stage) continue;
    Acc& a = out[GroupKey(s, by_controller)];
    if (a.any.name.empty()) a.any = s;
    const std::string suffix = s.name.substr(s.name.rfind('_') + 1);
    if (commands) {
      a.commands += s.value;
    } else if (e2e) {
      if (suffix == "count") a.count += s.value;
      if (suffix == "sum") a.sum += s.value;
      if (suffix == "bucket") {
        auto it = s.labels.find("le");
        if (it == s.labels.end()) continue;
        const double le =
            it->second == "+Inf" ? INFINITY : std::strtod(it->second.c_str(), nullptr);
        a.buckets[le] += s.value;
      }
    } else {
      auto& st = a.stages[Label(s, kStageLabels)];
      if (suffix == "count") st.first += s.value;
      if (suffix == "sum") st.second += s.value;
    }
  }
  return out;
}

// A counter's increase; a reset (the exporter restarted) counts from 0.
double Delta(double before, double after) { return after >= before ? after - before : after; }

}  // namespace

bool ParseExposition(std::string_view text, std::vector<Sample>* out, std::string* error) {
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    auto fail = [&](const char* what) {
      *error = "line " + std::to_string(line_no) + ": " + what;
      return false;
    };
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = std::string(line.substr(0, i));
    if (s.name.empty()) return fail("no metric name");
    if (i < line.size() && line[i] == '{') {
      ++i;
      for (;;) {
        while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        const size_t eq = line.find('=', i);
        if (eq == std::string_view::npos || eq + 1 >= line.size() || line[eq + 1] != '"')
          return fail("bad label");
        std::string name(line.substr(i, eq - i));
        std::string value;
        i = eq + 2;
        for (;;) {
          if (i >= line.size()) return fail("unterminated label value");
          const char c = line[i++];
          if (c == '"') break;
          if (c == '\\' && i < line.size()) {
            const char e = line[i++];
            value += e == 'n' ? '\n' : e;
          } else {
            value += c;
          }
        }
        s.labels[std::move(name)] = std::move(value);
      }
    }
    while (i < line.size() && line[i] == ' ') ++i;
    const std::string rest(line.substr(i));
    char* end = nullptr;
    s.value = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str()) return fail("no value");
    out->push_back(std::move(s));
  }
  return true;
}

double BucketQuantile(double q, const std::vector<std::pair<double, double>>& buckets) {
  if (buckets.empty()) return NAN;
  const double total = buckets.back().second;
  if (total <= 0) return NAN;
  const double rank = q * total;
  double lo = 0, below = 0;
  for (const auto& [le, count] : buckets) {
    if (count >= rank) {
      if (std::isinf(le)) return lo;  // in +Inf: the highest finite bound
      if (count == below) return le;
      return lo + (le - lo) * (rank - below) / (count - below);
    }
    lo = le;
    below = count;
  }
  return lo;
}

std::vector<TopGroup> TopFrame(const std::vector<Sample>& before, const std::vector<Sample>& after,
                               double seconds) {
  const bool by_controller = HostStagesByController(after) || HostStagesByController(before);
  const auto a = Accumulate(before, by_controller);
  const auto b = Accumulate(after, by_controller);
  std::vector<TopGroup> out;
  for (const auto& [key, now] : b) {
    const Acc empty;
    auto it = a.find(key);
    const Acc& old = it == a.end() ? empty : it->second;
    TopGroup g;
    g.role = Label(now.any, kRoleLabels);
    g.transport = Label(now.any, kTransportLabels);
    g.op = Label(now.any, kOpLabels);
    g.size = Label(now.any, kSizeLabels);
    g.device = DeviceOf(now.any, by_controller);
    const double commands = Delta(old.commands, now.commands);
    g.commands_per_second = seconds > 0 ? commands / seconds : 0;
    g.sampled = Delta(old.count, now.count);
    const double sum = Delta(old.sum, now.sum);
    g.mean = g.sampled > 0 ? sum / g.sampled : 0;
    std::vector<std::pair<double, double>> buckets;
    for (const auto& [le, c] : now.buckets) {
      auto ob = old.buckets.find(le);
      buckets.push_back({le, Delta(ob == old.buckets.end() ? 0 : ob->second, c)});
    }
    g.p50 = g.sampled > 0 ? BucketQuantile(0.5, buckets) : 0;
    g.p99 = g.sampled > 0 ? BucketQuantile(0.99, buckets) : 0;
    g.queue_depth = g.commands_per_second * g.mean;
    for (const auto& [name, cs] : now.stages) {
      auto os = old.stages.find(name);
      const auto prev = os == old.stages.end() ? std::pair<double, double>{0, 0} : os->second;
      const double n = Delta(prev.first, cs.first), s = Delta(prev.second, cs.second);
      TopStage st;
      st.name = name;
      st.mean = n > 0 ? s / n : 0;
      st.share = g.mean > 0 ? st.mean / g.mean : 0;
      st.queue_depth = g.commands_per_second * st.mean;
      g.stages.push_back(st);
    }
    const std::uint8_t role = g.role == "target" ? NVMEOF_ROLE_TARGET : NVMEOF_ROLE_HOST;
    std::stable_sort(g.stages.begin(), g.stages.end(), [&](const TopStage& x, const TopStage& y) {
      return NvmeofStageRank(role, g.transport, x.name) <
             NvmeofStageRank(role, g.transport, y.name);
    });
    if (commands <= 0 && g.sampled <= 0) continue;  // idle in this interval
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const TopGroup& x, const TopGroup& y) {
    return x.queue_depth > y.queue_depth;  // time spent per second
  });
  return out;
}

}  // namespace nvmeof::profile
