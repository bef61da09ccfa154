// HTTP(S) server on libmicrohttpd: /, the telemetry path, /-/healthy, /-/ready, 404 elsewhere.
// TLS and basic auth from the exporter-toolkit web config; bounded connections, timeouts and
// concurrent scrapes; a deadline per scrape.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "exporter/config.h"
#include "exporter/negotiation.h"
#include "exporter/web_config.h"

struct MHD_Daemon;
struct MHD_Connection;

namespace nvmeof {

class WebServer {
 public:
  // Returns the text exposition, taking at most about `timeout_seconds`.
  using Handler = std::function<std::string(double timeout_seconds)>;
  // Also told the exposition the scraper's Accept header asks for (exporter/negotiation.h).
  using FormatHandler = std::function<std::string(double timeout_seconds, Exposition format)>;

  WebServer(WebOptions options, WebConfig config, Handler metrics);  // text only
  WebServer(WebOptions options, WebConfig config, FormatHandler metrics);
  ~WebServer();
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  // An endpoint beside the telemetry path (GET /api/v1/commands): the same TLS and basic auth,
  // 503 until ready. Its handler gets the query's arguments, decoded, in order (a key may come
  // twice: the handler decides). Add before Start().
  struct EndpointReply {
    unsigned code = 200;
    std::string content_type, body;
  };
  using QueryArgs = std::vector<std::pair<std::string, std::string>>;
  using Endpoint = std::function<EndpointReply(const QueryArgs& args)>;
  void AddEndpoint(std::string path, Endpoint handler) {
    endpoints_[std::move(path)] = std::move(handler);
  }

  // Binds and starts the server threads. On failure returns false with *error set.
  bool Start(std::string* error);
  void Stop();
  // /-/ready answers 200 and the telemetry path serves only once this is set (503 before).
  void SetReady(bool ready) { ready_.store(ready, std::memory_order_release); }
  // Port actually bound (useful with port 0 in tests).
  int port() const { return port_; }
  // TCP connections accepted since Start() (served as nvmeof_exporter_http_connections_total).
  // With keep-alive a scraper opens one and reuses it; this growing with every scrape means the
  // scraper reconnects (e.g. --web.connection-timeout below its scrape interval).
  std::uint64_t connections_accepted() const {
    return connections_accepted_.load(std::memory_order_relaxed);
  }

 private:
  static int Dispatch(void* cls, MHD_Connection* connection, const char* url, const char* method,
                      const char* version, const char* upload_data, size_t* upload_data_size,
                      void** con_cls);
  int Handle(MHD_Connection* connection, const std::string& url, const std::string& method);
  bool Authorized(MHD_Connection* connection);
  int Reply(MHD_Connection* connection, unsigned code, const std::string& content_type,
            std::string body, bool gzip_ok);

  WebOptions options_;
  WebConfig config_;
  FormatHandler metrics_;
  std::map<std::string, Endpoint> endpoints_;
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
  std::atomic<int> in_flight_{0};
  std::atomic<std::uint64_t> connections_accepted_{0};
  std::atomic<bool> ready_{false};
  // Passwords that verified, keyed by user, so bcrypt (tens of ms) runs once per credential.
  std::mutex auth_mu_;
  std::map<std::string, std::string> auth_cache_;
};

// Compresses with gzip framing (zlib). Exposed for tests.
std::string Gzip(const std::string& data);
// True if an Accept-Encoding header value admits gzip.
bool AcceptsGzip(const char* accept_encoding);
// The time a scrape may take: the scraper's X-Prometheus-Scrape-Timeout-Seconds (may be null)
// less a margin for rendering and sending (10%, at most 0.5 s), capped at max_seconds
// (--web.scrape-timeout). A missing or malformed header gives max_seconds.
double ScrapeTimeoutSeconds(const char* header, double max_seconds);

}  // namespace nvmeof
