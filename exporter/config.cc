#include "exporter/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "base/files.h"
#include "base/flags.h"
#include "base/log.h"
#include "base/yaml.h"
#include "collectors/registry.h"

namespace nvmeof {
namespace {

// The exporter's flags (probe takes the same ones). Help text nullptr: not in --help.
const std::vector<FlagSpec>& ExporterFlags() {
  static const std::vector<FlagSpec> flags = [] {
    std::vector<FlagSpec> f = {
        {"web.listen-address", FlagSpec::kValue,
         "Address to listen on ([host]:port). Default :10420."},
        {"web.telemetry-path", FlagSpec::kValue,
         "Path under which to expose metrics. Default /metrics."},
        {"web.config.file", FlagSpec::kValue, "exporter-toolkit web config (TLS, basic auth)."},
        {"web.max-requests", FlagSpec::kValue,
         "Concurrent scrapes served; more get 503. Default 4."},
        {"web.max-connections", FlagSpec::kValue,
         "Open HTTP connections; more are refused. Default 512."},
        {"web.connection-timeout", FlagSpec::kValue,
         "Seconds before an idle or slow connection is closed; keep it above the scrape\n"
         "interval, so that scrapers reuse their connection. Default 120."},
        {"web.scrape-timeout", FlagSpec::kValue,
         "Longest a scrape may take, in seconds (10, 2.5s); X-Prometheus-Scrape-Timeout-Seconds\n"
         "less a margin shortens it. Collectors not done by then are left out. Default 10."},
        {"config.file", FlagSpec::kValue,
         "YAML config: collectors, device and netdev filters, bpf."},
        {"config.check", FlagSpec::kSwitch,
         "Validate flags, --config.file and --web.config.file, then exit."},
        {"path.sysfs", FlagSpec::kValue, "sysfs mount point. Default /sys."},
        {"path.procfs", FlagSpec::kValue, "procfs mount point. Default /proc."},
        {"path.configfs", FlagSpec::kValue, "configfs mount point. Default /sys/kernel/config."},
        {"path.rootfs", FlagSpec::kValue,
         "The host's / (host paths such as the kubelet root are read under it). Default /."},
    };
    f.insert(f.end(), BpfFlags().begin(), BpfFlags().end());  // loader/bpf_options.h
    f.insert(f.end(),
             {
                 {"log.level", FlagSpec::kValue, "debug|info|warn|error. Default info."},
                 {"version", FlagSpec::kSwitch, "Print version and exit."},
                 {"help", FlagSpec::kSwitch, "Print this help and exit.", 'h'},
                 // Listed by UsageText with the collectors.
                 {"collector.", FlagSpec::kFamily, nullptr},
                 {"no-collector.", FlagSpec::kFamily, nullptr},
                 // For tests: ethtool stats from `ethtool -S` style files instead of the ioctl.
                 {"testing.ethtool-dir", FlagSpec::kValue, nullptr},
                 // For tests/fixtures/netlink: write every RDMA netlink reply to DIR/<request>.bin.
                 {"testing.rdma-netlink-record-dir", FlagSpec::kValue, nullptr},
             });
    return f;
  }();
  return flags;
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

// [host]:port, host:port or :port with a port in [0, 65535]; the host is resolved at start.
bool ValidListenAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  if (address[0] == '[' && (colon == 0 || address[colon - 1] != ']')) return false;
  const auto port = ParseU64(std::string_view(address).substr(colon + 1));
  return port && *port <= 65535;
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

// --collector.NAME / --no-collector.NAME, the last one per NAME winning.
bool CollectorFlags(const ParsedArgs& parsed, std::map<std::string, bool>* enabled,
                    std::string* error) {
  for (const auto& flag : parsed.flags) {
    for (const std::string prefix : {"collector.", "no-collector."}) {
      if (flag.name.rfind(prefix, 0) != 0) continue;
      const std::string name = flag.name.substr(prefix.size());
      if (!FindCollector(name)) {
        std::string list;
        for (const auto& c : AllCollectors())
          list += (list.empty() ? "" : ", ") + std::string(c.name);
        *error = "--" + flag.name + ": unknown collector \"" + name + "\" (known: " + list + ")";
        return false;
      }
      (*enabled)[name] = prefix == "collector.";
    }
  }
  return true;
}

// The --web.* flags.
bool WebFlags(const ParsedArgs& parsed, WebOptions* web, std::string* error) {
  if (auto v = parsed.Get("web.listen-address")) {
    if (!ValidListenAddress(*v)) {
      *error = "--web.listen-address: \"" + *v + "\" is not [host]:port (port 0-65535)";
      return false;
    }
    web->listen_address = *v;
  }
  if (auto v = parsed.Get("web.telemetry-path")) {
    if (v->empty() || (*v)[0] != '/' || *v == "/") {
      *error = "--web.telemetry-path: \"" + *v + "\" must start with / and not be /";
      return false;
    }
    web->telemetry_path = *v;
  }
  if (auto v = parsed.Get("web.config.file")) web->config_file = *v;
  if (auto v = parsed.Get("web.max-requests");
      v && !ParseInt("web.max-requests", *v, 1, 1024, &web->max_requests, error)) {
    return false;
  }
  if (auto v = parsed.Get("web.max-connections");
      v && !ParseInt("web.max-connections", *v, 4, 65536, &web->max_connections, error)) {
    return false;
  }
  if (auto v = parsed.Get("web.connection-timeout");
      v && !ParseInt("web.connection-timeout", *v, 1, 3600, &web->timeout_seconds, error)) {
    return false;
  }
  if (auto v = parsed.Get("web.scrape-timeout")) {
    std::string text = *v;
    if (!text.empty() && text.back() == 's') text.pop_back();
    char* end = nullptr;
    const double seconds = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(seconds > 0) || seconds > 600) {
      *error = "--web.scrape-timeout: \"" + *v + "\" is not a number of seconds in (0, 600]";
      return false;
    }
    web->scrape_timeout_seconds = seconds;
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

  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "probe") {
    options->subcommand = "probe";
    args.erase(args.begin());
  }
  ParsedArgs parsed;
  if (!ParseFlags(args, ExporterFlags(), &parsed, error)) return false;
  if (!parsed.positional.empty()) {
    *error =
        "unexpected argument \"" + parsed.positional[0] + "\" (flags start with --; see --help)";
    return false;
  }
  std::map<std::string, bool> collector_flags;
  if (!CollectorFlags(parsed, &collector_flags, error)) return false;
  auto get = [&](const char* name) { return parsed.Get(name); };
  options->show_help = parsed.On("help");
  options->show_version = parsed.On("version");
  options->config_check = parsed.On("config.check");
  if (auto v = get("log.level")) {
    LogLevel level;
    if (!ParseLogLevel(*v, &level)) {
      *error = "--log.level: \"" + *v + "\" is not one of debug, info, warn, error";
      return false;
    }
    options->log_level = *v;
  }
  if (!WebFlags(parsed, &options->web, error)) return false;
  auto& paths = options->collector.paths;
  for (auto [flag, dst] :
       {std::pair{"path.sysfs", &paths.sysfs}, std::pair{"path.procfs", &paths.procfs},
        std::pair{"path.configfs", &paths.configfs}, std::pair{"path.rootfs", &paths.rootfs}}) {
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
  if (!ApplyBpfFlags(parsed, &options->collector.bpf, error)) return false;
  for (const auto& [name, enabled] : collector_flags) options->collectors[name] = enabled;
  return true;
}

std::string UsageText() {
  std::ostringstream out;
  out << "usage: nvmeof_exporter [flags]\n"
         "       nvmeof_exporter probe [flags]\n"
         "       nvmeof_exporter record|report|top|explain [flags]   (see nvmeof_exporter "
         "SUBCOMMAND --help)\n\n"
         "Prometheus exporter for NVMe-over-Fabrics and RDMA metrics. Without a subcommand it\n"
         "serves /metrics. Subcommands (docs/profiling.md):\n"
         "  probe    print, per BPF hook, whether and how it would attach; exit 1 if a\n"
         "           required hook cannot attach (takes the flags below)\n"
         "  record   record sampled NVMe-oF commands to a file, on a host or a target (root)\n"
         "  report   tables of `record` files; a host and a target file are joined per command\n"
         "  top      live per-group stage view: its own eBPF programs (root), or --from a\n"
         "           running exporter's /metrics\n"
         "  explain  the slowest NVMe-oF commands of running exporters' flight recorders, host\n"
         "           joined with target, split into host, network, target and drive\n\n"
         "flags:\n"
      << FlagsHelp(ExporterFlags());
  out << "  --collector.NAME / --no-collector.NAME\n      Enable or disable a collector:\n";
  for (const auto& c : AllCollectors()) {
    out << "        " << c.name << (c.enabled_by_default ? " (default on): " : " (default off): ")
        << c.help << "\n";
  }
  return out.str();
}

}  // namespace nvmeof
