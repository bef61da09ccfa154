// Command-line flags and the --config.file YAML, merged into one Options value.
// Errors are returned as text naming the flag or key; main() exits 2 on them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/registry.h"

namespace nvmeof {

struct WebOptions {
  std::string listen_address = ":10420";
  std::string telemetry_path = "/metrics";
  std::string config_file;    // exporter-toolkit web config (TLS, basic auth)
  int max_requests = 4;       // concurrent scrapes; more get 503
  int max_connections = 512;  // open connections; more are refused at accept
  // Idle/slow connection timeout. Above the usual scrape intervals (15 s to 1 min), so a
  // scraper's kept-alive connection lasts from one scrape to the next.
  int timeout_seconds = 120;
  // Longest a scrape may take; the scraper's X-Prometheus-Scrape-Timeout-Seconds header
  // (less a margin) may shorten it. Collectors still running then are left out.
  double scrape_timeout_seconds = 10;
};

struct Options {
  std::string subcommand;  // "" (serve) or "probe"
  bool show_version = false;
  bool show_help = false;
  bool config_check = false;
  std::string config_file;
  std::string log_level = "info";
  WebOptions web;
  CollectorOptions collector;
  std::map<std::string, bool> collectors;  // name -> enabled, after defaults, config, flags
};

// Parses argv (flags first, then the config file they name). On error returns false and sets
// *error to one line such as `--web.max-requests: "x" is not an integer`.
bool ParseOptions(int argc, const char* const* argv, Options* options, std::string* error);

// Applies a YAML config text on top of *options (collectors and filters). Exposed for tests.
bool ApplyConfigYaml(const std::string& yaml_text, const std::string& source, Options* options,
                     std::string* error);

std::string UsageText();

}  // namespace nvmeof
