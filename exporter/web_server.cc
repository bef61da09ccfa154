#include "exporter/web_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "collectors/base/log.h"

namespace nvmeof {
namespace {

constexpr char kMetricsType[] = "text/plain; version=0.0.4; charset=utf-8";

// Splits "[host]:port", "host:port" or ":port".
bool ParseListenAddress(const std::string& addr, sockaddr_storage* out, socklen_t* len,
                        std::string* error) {
  std::string host, port;
  if (!addr.empty() && addr[0] == '[') {
    auto close = addr.find(']');
    if (close == std::string::npos || close + 1 >= addr.size() || addr[close + 1] != ':') {
      *error = "--web.listen-address: \"" + addr + "\" is not [host]:port";
      return false;
    }
    host = addr.substr(1, close - 1);
    port = addr.substr(close + 2);
  } else {
    auto colon = addr.rfind(':');
    if (colon == std::string::npos) {
      *error = "--web.listen-address: \"" + addr + "\" has no :port";
      return false;
    }
    host = addr.substr(0, colon);
    port = addr.substr(colon + 1);
  }
  addrinfo hints{};
  hints.ai_family = host.empty() ? AF_INET6 : AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || !res) {
    *error = "--web.listen-address: \"" + addr + "\": " + gai_strerror(rc);
    return false;
  }
  std::memcpy(out, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

std::string LandingPage(const std::string& telemetry_path) {
  return "<!DOCTYPE html>\n<html><head><title>nvmeof_exporter</title></head><body>\n"
         "<h1>nvmeof_exporter</h1>\n<p>NVMe-over-Fabrics and RDMA metrics.</p>\n"
         "<p><a href=\"" +
         telemetry_path +
         "\">Metrics</a></p>\n<p>Version " NVMEOF_VERSION " (" NVMEOF_REVISION
         ")</p>\n</body></html>\n";
}

}  // namespace

bool AcceptsGzip(const char* accept_encoding) {
  if (!accept_encoding) return false;
  std::string_view s(accept_encoding);
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string_view item = s.substr(pos, comma == std::string_view::npos ? s.npos : comma - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    std::string_view coding = item.substr(0, item.find(';'));
    while (!coding.empty() && coding.back() == ' ') coding.remove_suffix(1);
    if (coding == "gzip" || coding == "*") {
      // "gzip;q=0" means "not gzip".
      auto q = item.find("q=");
      if (q == std::string_view::npos) return true;
      std::string_view qv = item.substr(q + 2);
      return !(qv.rfind("0", 0) == 0 && qv.find_first_of("123456789") == std::string_view::npos);
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return false;
}

std::string Gzip(const std::string& data) {
  z_stream zs{};
  // 15 + 16: zlib window with a gzip header; level 1: scrapes are CPU-bound, ratio barely differs.
  if (deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out;
  out.resize(deflateBound(&zs, data.size()) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return rc == Z_STREAM_END ? out : std::string();
}

double ScrapeTimeoutSeconds(const char* header, double max_seconds) {
  if (!header) return max_seconds;
  char* end = nullptr;
  const double v = std::strtod(header, &end);
  while (end && *end == ' ') ++end;
  if (end == header || !end || *end != '\0' || !std::isfinite(v) || v <= 0) return max_seconds;
  const double margin = std::min(0.5, v * 0.1);
  return std::max(0.01, std::min(max_seconds, v - margin));
}

WebServer::WebServer(WebOptions options, WebConfig config, Handler metrics)
    : options_(std::move(options)), config_(std::move(config)), metrics_(std::move(metrics)) {}

WebServer::~WebServer() { Stop(); }

bool WebServer::Start(std::string* error) {
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  if (!ParseListenAddress(options_.listen_address, &addr, &addr_len, error)) return false;
  // One thread per connection (poll() in the listening thread). A scrape blocks its handler
  // for up to the scrape deadline; with a shared polling thread or a small pool (what this
  // used to be: 2 epoll threads) two slow scrapes blocked every other connection, `/` and the
  // 503 of the scrape cap included. Per connection, a scrape only blocks its own connection,
  // and the cap below is checked before blocking, so the 503 is immediate. Threads are bounded
  // by --web.max-connections (idle ones end after --web.connection-timeout); collector runs
  // are bounded separately by the scraper (one per collector). Suspend/resume with a scrape
  // worker would bound threads tighter but would need resuming every suspended connection
  // before MHD_stop_daemon; not worth it at an exporter's connection counts.
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
                   MHD_USE_ERROR_LOG;
  if (addr.ss_family == AF_INET6) flags |= MHD_USE_DUAL_STACK;
  if (config_.tls()) flags |= MHD_USE_TLS;

  std::vector<MHD_OptionItem> opts = {
      {MHD_OPTION_SOCK_ADDR, 0, &addr},
      {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(options_.max_connections), nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>(options_.timeout_seconds), nullptr},
      // Requests are a header or two; 32 KiB is enough and bounds memory per connection.
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 32 * 1024, nullptr},
      {MHD_OPTION_LISTEN_BACKLOG_SIZE, 128, nullptr},
  };
  if (config_.tls()) {
    opts.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(config_.cert_pem.c_str())});
    opts.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(config_.key_pem.c_str())});
    opts.push_back(
        {MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(config_.tls_priorities.c_str())});
  }
  opts.push_back({MHD_OPTION_END, 0, nullptr});

  daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr,
                             reinterpret_cast<MHD_AccessHandlerCallback>(&WebServer::Dispatch),
                             this, MHD_OPTION_ARRAY, opts.data(), MHD_OPTION_END);
  if (!daemon_) {
    *error = "cannot listen on " + options_.listen_address +
             " (address in use, bad address, or bad TLS certificate/key)";
    return false;
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
  port_ = info ? info->port : 0;
  return true;
}

void WebServer::Stop() {
  if (daemon_) {
    MHD_stop_daemon(daemon_);
    daemon_ = nullptr;
  }
}

int WebServer::Dispatch(void* cls, MHD_Connection* connection, const char* url, const char* method,
                        const char*, const char*, size_t* upload_data_size, void** con_cls) {
  // First call per request: headers only. Answer at once; we never accept a body, and MHD
  // discards one if sent.
  (void)con_cls;
  if (*upload_data_size != 0) {
    *upload_data_size = 0;
    return MHD_YES;
  }
  return static_cast<WebServer*>(cls)->Handle(connection, url ? url : "", method ? method : "");
}

bool WebServer::Authorized(MHD_Connection* connection) {
  if (config_.users.empty()) return true;
  char* pass = nullptr;
  char* user = MHD_basic_auth_get_username_password(connection, &pass);
  std::unique_ptr<char, decltype(&MHD_free)> user_holder(user, &MHD_free);
  std::unique_ptr<char, decltype(&MHD_free)> pass_holder(pass, &MHD_free);
  if (!user || !pass) return false;
  const std::string u(user), p(pass);
  {
    std::lock_guard<std::mutex> lock(auth_mu_);
    auto it = auth_cache_.find(u);
    if (it != auth_cache_.end() && it->second.size() == p.size()) {
      unsigned char diff = 0;
      for (size_t i = 0; i < p.size(); ++i) diff |= it->second[i] ^ p[i];
      if (diff == 0) return true;
    }
  }
  auto it = config_.users.find(u);
  // Unknown users still pay for one bcrypt so timing does not reveal which names exist.
  static const std::string kDummy = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";
  const bool ok =
      VerifyBcrypt(p, it == config_.users.end() ? kDummy : it->second) && it != config_.users.end();
  if (ok) {
    std::lock_guard<std::mutex> lock(auth_mu_);
    auth_cache_[u] = p;
  }
  return ok;
}

int WebServer::Reply(MHD_Connection* connection, unsigned code, const std::string& content_type,
                     std::string body, bool gzip_ok) {
  bool gzipped = false;
  if (gzip_ok && body.size() > 256) {
    std::string z = Gzip(body);
    if (!z.empty()) {
      body = std::move(z);
      gzipped = true;
    }
  }
  MHD_Response* response =
      MHD_create_response_from_buffer(body.size(), body.data(), MHD_RESPMEM_MUST_COPY);
  if (!response) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type.c_str());
  if (gzipped) MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
  MHD_add_response_header(response, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
  for (const auto& [name, value] : config_.headers) {
    MHD_add_response_header(response, name.c_str(), value.c_str());
  }
  int rc;
  if (code == MHD_HTTP_UNAUTHORIZED) {
    rc = MHD_queue_basic_auth_fail_response(connection, "nvmeof_exporter", response);
  } else {
    rc = MHD_queue_response(connection, code, response);
  }
  MHD_destroy_response(response);
  return rc;
}

int WebServer::Handle(MHD_Connection* connection, const std::string& url,
                      const std::string& method) {
  constexpr char kText[] = "text/plain; charset=utf-8";
  if (!Authorized(connection)) {
    return Reply(connection, MHD_HTTP_UNAUTHORIZED, kText, "Unauthorized\n", false);
  }
  if (method != "GET" && method != "HEAD") {
    return Reply(connection, MHD_HTTP_METHOD_NOT_ALLOWED, kText, "Method Not Allowed\n", false);
  }
  const bool gzip_ok = AcceptsGzip(
      MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
  if (url == "/") {
    return Reply(connection, MHD_HTTP_OK, "text/html; charset=utf-8",
                 LandingPage(options_.telemetry_path), gzip_ok);
  }
  if (url == "/-/healthy") return Reply(connection, MHD_HTTP_OK, kText, "Healthy\n", false);
  const bool ready = ready_.load(std::memory_order_acquire);
  if (url == "/-/ready") {
    return ready ? Reply(connection, MHD_HTTP_OK, kText, "Ready\n", false)
                 : Reply(connection, MHD_HTTP_SERVICE_UNAVAILABLE, kText, "Not ready\n", false);
  }
  if (url != options_.telemetry_path) {
    return Reply(connection, MHD_HTTP_NOT_FOUND, kText, "Not Found\n", false);
  }
  if (!ready) {
    return Reply(connection, MHD_HTTP_SERVICE_UNAVAILABLE, kText,
                 "Collectors are being set up, try again\n", false);
  }
  // Cap concurrent scrapes: each one walks sysfs and BPF maps; piling them up helps nobody.
  if (in_flight_.fetch_add(1) >= options_.max_requests) {
    in_flight_.fetch_sub(1);
    return Reply(connection, MHD_HTTP_SERVICE_UNAVAILABLE, kText,
                 "Too many concurrent scrapes, try again\n", false);
  }
  std::string body;
  try {
    body = metrics_(
        ScrapeTimeoutSeconds(MHD_lookup_connection_value(connection, MHD_HEADER_KIND,
                                                         "X-Prometheus-Scrape-Timeout-Seconds"),
                             options_.scrape_timeout_seconds));
  } catch (const std::exception& e) {
    in_flight_.fetch_sub(1);
    LogError("scrape failed", Kv("err", e.what()));
    return Reply(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, kText, "Scrape failed\n", false);
  }
  in_flight_.fetch_sub(1);
  return Reply(connection, MHD_HTTP_OK, kMetricsType, std::move(body), gzip_ok);
}

}  // namespace nvmeof
