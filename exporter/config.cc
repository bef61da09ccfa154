#include "exporter/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "collectors/base/files.h"
#include "collectors/base/log.h"
#include "collectors/base/yaml.h"
#include "collectors/registry.h"

namespace nvmeof {
namespace {

struct FlagSpec {
  const char* name;
  const char* help;
  bool is_bool;
};

constexpr FlagSpec kFlags[] = {
    {"web.listen-address", "Address to listen on ([host]:port). Default :10420.", false},
    {"web.telemetry-path", "Path under which to expose metrics. Default /metrics.", false},
    {"web.config.file", "exporter-toolkit web config (TLS, basic auth).", false},
    {"web.max-requests", "Concurrent scrapes served; more get 503. Default 4.", false},
    {"web.max-connections", "Open HTTP connections; more are refused. Default 512.", false},
    {"web.connection-timeout", "Seconds before an idle or slow connection is closed. Default 10.",
     false},
    {"web.scrape-timeout",
     "Longest a scrape may take, in seconds (10, 2.5s); X-Prometheus-Scrape-Timeout-Seconds "
     "less a margin shortens it. Collectors not done by then are left out. Default 10.",
     false},
    {"config.file", "YAML config: collectors, device and netdev filters, bpf.", false},
    {"config.check", "Validate flags, --config.file and --web.config.file, then exit.", true},
    {"path.sysfs", "sysfs mount point. Default /sys.", false},
    {"path.procfs", "procfs mount point. Default /proc.", false},
    {"path.configfs", "configfs mount point. Default /sys/kernel/config.", false},
    {"bpf.mechanism", "Force one attach mechanism: auto|fentry|kprobe|tp_btf|raw_tp.", false},
    {"bpf.btf-path", "External BTF file or directory for kernels/modules without BTF.", false},
    {"log.level", "debug|info|warn|error. Default info.", false},
    {"version", "Print version and exit.", true},
    {"help", "Print this help and exit.", true},
    // For tests: ethtool stats from `ethtool -S` style files instead of the ioctl.
    {"testing.ethtool-dir", "(testing) read ethtool stats from DIR/<netdev>/ files.", false},
    // For tests/fixtures/netlink: write every RDMA netlink reply to DIR/<request>.bin.
    {"testing.rdma-netlink-record-dir", "(testing) record RDMA netlink replies in DIR.", false},
};

const FlagSpec* FindFlag(std::string_view name) {
  for (const auto& f : kFlags) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

bool ParseInt(const std::string& flag, const std::string& text, int lo, int hi, int* out,
              std::string* error) {
  auto v = ParseU64(text);
  if (!v || *v < static_cast<std::uint64_t>(lo) || *v > static_cast<std::uint64_t>(hi)) {
    *error = "--" + flag + ": \"" + text + "\" is not an integer in [" + std::to_string(lo) + ", " +
             std::to_string(hi) + "]";
    return false;
  }
  *out = static_cast<int>(*v);
  return true;
}

bool CheckRoot(const std::string& flag, const std::string& path, std::string* error) {
  if (!IsDir(path)) {
    *error = "--" + flag + ": \"" + path + "\" is not a readable directory";
    return false;
  }
  if (ListDir(path).empty() && !Exists(path + "/.")) {
    *error = "--" + flag + ": \"" + path + "\" cannot be read";
    return false;
  }
  return true;
}

}  // namespace

namespace {
bool ApplyConfigYamlOrThrow(const std::string& yaml_text, const std::string& source,
                            Options* options, std::string* error) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    *error = source + ": " + e.what();
    return false;
  }
  if (root.IsNull()) return true;  // an empty file is a valid, empty config
  std::string err;
  auto fail = [&](const std::string& e) {
    *error = source + ": " + e;
    return false;
  };
  // The file-level schema: `collectors:` and one section per collector that has options, which
  // that collector reads (CollectorInfo::parse).
  std::set<std::string> keys = {"collectors"};
  for (const auto& c : AllCollectors()) {
    if (c.parse) keys.emplace(c.name);
  }
  if (!CheckKeys(root, "", keys, &err)) return fail(err);
  if (const auto c = root["collectors"]) {
    if (!c.IsMap()) return fail("collectors: expected a mapping of collector name to true/false");
    for (const auto& kv : c) {
      const auto name = kv.first.as<std::string>();
      if (!options->collectors.count(name)) {
        return fail("collectors." + name + ": unknown collector");
      }
      bool enabled = false;
      if (!ReadBool(kv.second, "collectors." + name, &enabled, &err)) return fail(err);
      options->collectors[name] = enabled;
    }
  }
  for (const auto& c : AllCollectors()) {
    const YAML::Node section = root[std::string(c.name)];
    if (c.parse && section && !c.parse(section, &options->collector, &err)) return fail(err);
  }
  return true;
}

}  // namespace

bool ApplyConfigYaml(const std::string& yaml_text, const std::string& source, Options* options,
                     std::string* error) {
  try {
    return ApplyConfigYamlOrThrow(yaml_text, source, options, error);
  } catch (const YAML::Exception& e) {
    *error = source + ": " + e.what();
    return false;
  }
}

bool ParseOptions(int argc, const char* const* argv, Options* options, std::string* error) {
  for (const auto& c : AllCollectors())
    options->collectors[std::string(c.name)] = c.enabled_by_default;

  std::map<std::string, std::string> values;  // flag -> value, as given
  std::map<std::string, bool> collector_flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "probe" && i == 1) {
      options->subcommand = "probe";
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      *error = "unexpected argument \"" + arg + "\" (flags start with --; see --help)";
      return false;
    }
    arg = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    for (const char* prefix : {"collector.", "no-collector."}) {
      if (arg.rfind(prefix, 0) != 0) continue;
      const std::string name = arg.substr(std::string(prefix).size());
      if (!FindCollector(name)) {
        std::string list;
        for (const auto& c : AllCollectors())
          list += (list.empty() ? "" : ", ") + std::string(c.name);
        *error = "--" + arg + ": unknown collector \"" + name + "\" (known: " + list + ")";
        return false;
      }
      if (has_value) {
        *error = "--" + arg + ": takes no value";
        return false;
      }
      collector_flags[name] = std::string(prefix) == "collector.";
      arg.clear();
      break;
    }
    if (arg.empty()) continue;
    const FlagSpec* spec = FindFlag(arg);
    if (!spec) {
      *error = "--" + arg + ": unknown flag (see --help)";
      return false;
    }
    if (spec->is_bool) {
      if (has_value && value != "true" && value != "false") {
        *error = "--" + arg + ": \"" + value + "\" is not true or false";
        return false;
      }
      values[arg] = has_value ? value : "true";
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        *error = "--" + arg + ": missing value";
        return false;
      }
      value = argv[++i];
    }
    values[arg] = value;
  }

  auto get = [&](const char* name) -> const std::string* {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  };
  options->show_help = get("help") && *get("help") == "true";
  options->show_version = get("version") && *get("version") == "true";
  options->config_check = get("config.check") && *get("config.check") == "true";
  if (auto v = get("log.level")) {
    LogLevel level;
    if (!ParseLogLevel(*v, &level)) {
      *error = "--log.level: \"" + *v + "\" is not one of debug, info, warn, error";
      return false;
    }
    options->log_level = *v;
  }
  auto& web = options->web;
  if (auto v = get("web.listen-address")) web.listen_address = *v;
  if (auto v = get("web.telemetry-path")) {
    if (v->empty() || (*v)[0] != '/' || *v == "/") {
      *error = "--web.telemetry-path: \"" + *v + "\" must start with / and not be /";
      return false;
    }
    web.telemetry_path = *v;
  }
  if (auto v = get("web.config.file")) web.config_file = *v;
  if (auto v = get("web.max-requests");
      v && !ParseInt("web.max-requests", *v, 1, 1024, &web.max_requests, error)) {
    return false;
  }
  if (auto v = get("web.max-connections");
      v && !ParseInt("web.max-connections", *v, 4, 65536, &web.max_connections, error)) {
    return false;
  }
  if (auto v = get("web.connection-timeout");
      v && !ParseInt("web.connection-timeout", *v, 1, 3600, &web.timeout_seconds, error)) {
    return false;
  }
  if (auto v = get("web.scrape-timeout")) {
    std::string text = *v;
    if (!text.empty() && text.back() == 's') text.pop_back();
    char* end = nullptr;
    const double seconds = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(seconds > 0) || seconds > 600) {
      *error = "--web.scrape-timeout: \"" + *v + "\" is not a number of seconds in (0, 600]";
      return false;
    }
    web.scrape_timeout_seconds = seconds;
  }
  auto& paths = options->collector.paths;
  for (auto [flag, dst] :
       {std::pair{"path.sysfs", &paths.sysfs}, std::pair{"path.procfs", &paths.procfs},
        std::pair{"path.configfs", &paths.configfs}}) {
    if (auto v = get(flag)) {
      // Only roots given explicitly must exist: configfs is often not mounted at all.
      if (!CheckRoot(flag, *v, error)) return false;
      *dst = *v;
    }
  }
  if (auto v = get("testing.ethtool-dir")) {
    if (!CheckRoot("testing.ethtool-dir", *v, error)) return false;
    options->collector.pfc.ethtool_fixture_dir = *v;
  }
  if (auto v = get("testing.rdma-netlink-record-dir")) {
    if (!CheckRoot("testing.rdma-netlink-record-dir", *v, error)) return false;
    options->collector.rdma_netlink.record_dir = *v;
  }

  if (auto v = get("config.file")) {
    options->config_file = *v;
    std::ifstream in(*v);
    if (!in) {
      *error = "--config.file: cannot read \"" + *v + "\"";
      return false;
    }
    std::stringstream text;
    text << in.rdbuf();
    if (!ApplyConfigYaml(text.str(), *v, options, error)) return false;
  }
  // Flags win over the config file.
  if (auto v = get("bpf.mechanism")) {
    if (!ValidBpfMechanism(*v)) {
      *error = "--bpf.mechanism: \"" + *v + "\" is not one of auto, fentry, kprobe, tp_btf, raw_tp";
      return false;
    }
    options->collector.bpf.mechanism = *v;
  }
  if (auto v = get("bpf.btf-path")) {
    if (!Exists(*v)) {
      *error = "--bpf.btf-path: \"" + *v + "\" does not exist";
      return false;
    }
    options->collector.bpf.btf_path = *v;
  }
  for (const auto& [name, enabled] : collector_flags) options->collectors[name] = enabled;
  return true;
}

std::string UsageText() {
  std::ostringstream out;
  out << "usage: nvmeof_exporter [probe] [flags]\n"
         "       nvmeof_exporter report [--detail] [--format=text|json] "
         "[--baseline=OLD[,OLD_TARGET]] FILE [FILE]\n"
         "       nvmeof_exporter top --from=http://HOST:PORT [--once] [--interval=SECONDS] "
         "[--format=json]\n\n"
         "Prometheus exporter for NVMe-over-Fabrics and RDMA metrics.\n"
         "  probe    print, per BPF hook, whether and how it would attach; exit 1 if a\n"
         "           required hook cannot attach\n"
         "  report   tables of `record` files; a host and a target file are joined per command\n"
         "           (docs/profiling.md)\n"
         "  top      live per-group stage view from a running exporter's /metrics\n\nflags:\n";
  for (const auto& f : kFlags) {
    if (std::string_view(f.name).rfind("testing.", 0) == 0) continue;
    out << "  --" << f.name << (f.is_bool ? "" : "=VALUE") << "\n      " << f.help << "\n";
  }
  out << "  --collector.NAME / --no-collector.NAME\n      Enable or disable a collector:\n";
  for (const auto& c : AllCollectors()) {
    out << "        " << c.name << (c.enabled_by_default ? " (default on): " : " (default off): ")
        << c.help << "\n";
  }
  return out.str();
}

}  // namespace nvmeof
