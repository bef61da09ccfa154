// nvmeof_exporter: parse flags and config, start collectors and the web server, wait for a signal.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>

#include "collectors/base/log.h"
#include "collectors/bpf.h"
#include "collectors/registry.h"
#include "exporter/config.h"
#include "exporter/scraper.h"
#include "exporter/web_config.h"
#include "exporter/web_server.h"

namespace {

constexpr int kExitUsage = 2;  // bad flags or config, as Prometheus' own tools do

int Serve(const nvmeof::Options& options, nvmeof::WebConfig web_config) {
  // Block the signals before any thread starts so only sigwait() below sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // The server starts first, not ready: /-/healthy answers while collectors are set up (BPF
  // loading can take seconds); /-/ready and the telemetry path answer 503 until then.
  std::unique_ptr<nvmeof::Scraper> scraper;
  const bool tls = web_config.tls();
  const bool auth = !web_config.users.empty();
  nvmeof::WebServer server(options.web, std::move(web_config), [&](double timeout_seconds) {
    return scraper->Scrape(std::chrono::duration_cast<nvmeof::Scraper::Duration>(
        std::chrono::duration<double>(timeout_seconds)));
  });
  std::string error;
  if (!server.Start(&error)) {
    nvmeof::LogError("cannot start web server", nvmeof::Kv("err", error));
    return 1;
  }
  std::vector<std::unique_ptr<nvmeof::Collector>> collectors;
  std::string enabled;
  for (const auto& info : nvmeof::AllCollectors()) {
    if (!options.collectors.at(std::string(info.name))) continue;
    collectors.push_back(info.make(options.collector));
    enabled += (enabled.empty() ? "" : ",") + std::string(info.name);
  }
  scraper = std::make_unique<nvmeof::Scraper>(std::move(collectors));
  server.SetReady(true);  // publishes `scraper` to the server's threads (release/acquire)
  nvmeof::LogInfo("listening", nvmeof::Kv("address", options.web.listen_address) + " " +
                                   nvmeof::Kv("port", std::to_string(server.port())) + " " +
                                   nvmeof::Kv("tls", tls ? "on" : "off") + " " +
                                   nvmeof::Kv("basic_auth", auth ? "on" : "off") + " " +
                                   nvmeof::Kv("scrape_timeout_seconds",
                                              std::to_string(options.web.scrape_timeout_seconds)) +
                                   " " + nvmeof::Kv("collectors", enabled));
  int sig = 0;
  sigwait(&signals, &sig);
  nvmeof::LogInfo("shutting down", nvmeof::Kv("signal", strsignal(sig)));
  // A collector may be stuck in a read that never returns (hung firmware command, FUSE, NFS).
  // Shutdown() releases scrapes waiting on it, so stopping the server (which joins its
  // connection threads) is quick. The stuck run's detached thread cannot be joined or
  // cancelled; destroying the scraper leaves that collector to its thread, and the process
  // ends with _Exit (see main) instead of exit(), whose static destructors could run under it.
  scraper->Shutdown();
  server.Stop();
  scraper.reset();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  nvmeof::Options options;
  std::string error;
  if (!nvmeof::ParseOptions(argc, argv, &options, &error)) {
    std::cerr << "nvmeof_exporter: " << error << "\n";
    return kExitUsage;
  }
  if (options.show_help) {
    std::cout << nvmeof::UsageText();
    return 0;
  }
  if (options.show_version) {
    std::cout << "nvmeof_exporter " NVMEOF_VERSION " (revision " NVMEOF_REVISION ")\n";
    return 0;
  }
  nvmeof::LogLevel level = nvmeof::LogLevel::kInfo;
  nvmeof::ParseLogLevel(options.log_level, &level);
  nvmeof::SetLogLevel(level);

  nvmeof::WebConfig web_config;
  if (!options.web.config_file.empty() &&
      !nvmeof::LoadWebConfig(options.web.config_file, &web_config, &error)) {
    std::cerr << "nvmeof_exporter: --web.config.file " << options.web.config_file << ": " << error
              << "\n";
    return kExitUsage;
  }
  if (options.config_check) {
    std::cout << "configuration OK\n";
    return 0;
  }
  if (options.subcommand == "probe") return nvmeof::RunProbe(options.collector, std::cout);
  const int rc = Serve(options, std::move(web_config));
  // No exit(): a collector run may still be stuck in the kernel on a detached thread, and
  // exit() would destroy statics (logging, BPF objects) under it. The kernel closes every fd,
  // BPF links included, as the process ends.
  std::cout.flush();
  std::fflush(nullptr);
  std::_Exit(rc);
}
