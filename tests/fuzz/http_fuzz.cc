// libFuzzer target for the HTTP request path: URL, method, headers (Accept, Accept-Encoding,
// X-Prometheus-Scrape-Timeout-Seconds, Authorization) through libmicrohttpd and WebServer.
//
// Input: the first byte picks the server (bit 0: one with basic auth); the rest is sent as a
// raw request over loopback and the reply read until the server closes (slow: a connection per
// input). The header parsers are also called directly on the input.
// Seeds: requests like Prometheus', curl's and a browser's (tests/fuzz/seeds.py).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "base/log.h"
#include "exporter/web_server.h"

namespace {

std::unique_ptr<nvmeof::WebServer> Start(bool auth) {
  nvmeof::WebOptions options;
  options.listen_address = "127.0.0.1:0";
  options.timeout_seconds = 1;
  nvmeof::WebConfig config;
  if (auth) {
    // bcrypt of "pass" at the lowest cost, so wrong passwords stay cheap.
    config.users["user"] = "$2b$04$IJi5m34h51jv7gP6rYA31e0fjLUdmUYt0jYCu8Xckerl/WTGa8coi";
    config.headers["X-Content-Type-Options"] = "nosniff";
  }
  auto server = std::make_unique<nvmeof::WebServer>(
      options, config, [](double) { return std::string("up 1\nnvmeof_test{a=\"b\"} 2\n"); });
  std::string error;
  if (!server->Start(&error)) {
    std::fprintf(stderr, "http_fuzz: %s\n", error.c_str());
    std::abort();
  }
  server->SetReady(true);
  return server;
}

void Send(int port, const std::uint8_t* data, std::size_t size) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  timeval timeout = {2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    std::size_t sent = 0;
    while (sent < size) {
      const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    ::shutdown(fd, SHUT_WR);
    char buf[4096];
    while (::recv(fd, buf, sizeof buf, 0) > 0) {
    }
  }
  ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static nvmeof::WebServer* plain = [] {
    nvmeof::SetLogLevel(nvmeof::LogLevel::kError);
    return Start(false).release();
  }();
  static nvmeof::WebServer* auth = Start(true).release();
  if (size < 1) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  (void)nvmeof::AcceptsGzip(text.c_str());
  (void)nvmeof::ScrapeTimeoutSeconds(text.c_str(), 10);
  Send(((data[0] & 1) ? auth : plain)->port(), data + 1, size - 1);
  return 0;
}
