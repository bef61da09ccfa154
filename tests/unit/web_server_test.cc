#include "exporter/web_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <vector>

namespace nvmeof {
namespace {

// Minimal HTTP/1.0 GET over loopback: returns the raw response.
std::string Get(int port, const std::string& path, const std::string& extra_headers = "") {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "";
  }
  std::string req = "GET " + path + " HTTP/1.0\r\nHost: x\r\n" + extra_headers + "\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// A client connection that sends HTTP/1.1 requests one after another on one socket.
class KeepAliveClient {
 public:
  explicit KeepAliveClient(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    timeval tv{5, 0};  // a reply that never comes fails the test instead of hanging it
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~KeepAliveClient() { close(fd_); }
  bool connected() const { return connected_; }
  // Sends one GET and reads its reply (headers and Content-Length bytes of body); "" if the
  // server closed the connection or sent nothing in 5 s.
  std::string Get(const std::string& path) {
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
    if (send(fd_, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
      return "";
    }
    std::string in;
    char buf[4096];
    for (;;) {
      const size_t end = in.find("\r\n\r\n");
      if (end != std::string::npos) {
        const size_t cl = in.find("Content-Length: ");
        const size_t length = cl < end ? std::stoul(in.substr(cl + 16)) : 0;
        if (in.size() >= end + 4 + length) return in;
      }
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) return "";
      in.append(buf, static_cast<size_t>(n));
    }
  }
  // Seconds until the server closes the connection (read returns 0), or -1 if it stays open
  // for `limit` seconds.
  double SecondsUntilClosed(double limit) {
    const auto start = std::chrono::steady_clock::now();
    const auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    char buf[256];
    while (elapsed() < limit) {
      const ssize_t n = read(fd_, buf, sizeof buf);  // SO_RCVTIMEO: wakes every 5 s at most
      if (n == 0) return elapsed();
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return elapsed();
    }
    return -1;
  }

 private:
  int fd_;
  bool connected_ = false;
};

std::string Gunzip(const std::string& data) {
  z_stream zs{};
  inflateInit2(&zs, 15 + 16);
  std::string out(1 << 20, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  inflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

WebOptions LoopbackOptions() {
  WebOptions o;
  o.listen_address = "127.0.0.1:0";
  return o;
}

TEST(WebServer, ServesMetricsLandingAnd404) {
  WebServer server(LoopbackOptions(), {}, [](double) { return std::string("up 1\n"); });
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
  server.SetReady(true);
  const auto metrics = Get(server.port(), "/metrics");
  EXPECT_NE(metrics.find("200 OK"), std::string::npos);
  EXPECT_NE(metrics.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(metrics.find("\r\n\r\nup 1\n"), std::string::npos);
  EXPECT_NE(Get(server.port(), "/").find("href=\"/metrics\""), std::string::npos);
  const auto missing = Get(server.port(), "/nope");
  EXPECT_NE(missing.find("404"), std::string::npos);
  EXPECT_NE(missing.find("Content-Type:"), std::string::npos);
}

TEST(WebServer, GzipWhenAsked) {
  const std::string body(10000, 'x');
  WebServer server(LoopbackOptions(), {}, [&](double) { return body; });
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
  server.SetReady(true);
  const auto reply = Get(server.port(), "/metrics", "Accept-Encoding: gzip\r\n");
  ASSERT_NE(reply.find("Content-Encoding: gzip"), std::string::npos);
  EXPECT_EQ(Gunzip(reply.substr(reply.find("\r\n\r\n") + 4)), body);
  EXPECT_EQ(Get(server.port(), "/metrics").find("Content-Encoding"), std::string::npos);
}

TEST(WebServer, ProtobufWhenAcceptAsksForIt) {
  const std::string body(10000, 'p');
  WebServer server(LoopbackOptions(), {}, [&](double, Exposition format) {
    return format == Exposition::kProtobuf ? body : std::string("up 1\n");
  });
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
  server.SetReady(true);
  const std::string accept =
      "Accept: application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
      "encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2\r\n";
  const auto reply = Get(server.port(), "/metrics", accept + "Accept-Encoding: gzip\r\n");
  EXPECT_NE(reply.find("Content-Type: application/vnd.google.protobuf; "
                       "proto=io.prometheus.client.MetricFamily; encoding=delimited"),
            std::string::npos)
      << reply.substr(0, 400);
  ASSERT_NE(reply.find("Content-Encoding: gzip"), std::string::npos);
  EXPECT_EQ(Gunzip(reply.substr(reply.find("\r\n\r\n") + 4)), body);
  const auto text = Get(server.port(), "/metrics", "Accept: text/plain;version=0.0.4\r\n");
  EXPECT_NE(text.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(text.find("\r\n\r\nup 1\n"), std::string::npos);
  const auto om = Get(server.port(), "/metrics",
                      "Accept: application/openmetrics-text;version=1.0.0;escaping=underscores,"
                      "text/plain;version=0.0.4;q=0.5\r\n");
  EXPECT_NE(om.find("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8; "
                    "escaping=underscores"),
            std::string::npos)
      << om.substr(0, 400);
}

// A scrape handler that holds every scrape until Release(): counts them, keeps the last timeout.
class ScrapeGate {
 public:
  std::string Hold(double timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    ++held_;
    timeout_ = timeout;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
    return "ok 1\n";
  }
  // Waits until n scrapes are held; the last one's timeout.
  double WaitHeld(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return held_ == n; });
    return timeout_;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  int held_ = 0;
  double timeout_ = 0;
};

TEST(WebServer, ConcurrentScrapesPastTheCapGet503) {
  ScrapeGate gate;
  auto options = LoopbackOptions();
  options.max_requests = 1;
  WebServer server(options, {}, [&](double timeout) { return gate.Hold(timeout); });
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
  server.SetReady(true);
  auto first = std::async(std::launch::async, [&] { return Get(server.port(), "/metrics"); });
  gate.WaitHeld(1);
  // The first scrape holds the only slot; the second must be turned away, not queued.
  EXPECT_NE(Get(server.port(), "/metrics").find("503"), std::string::npos);
  gate.Release();
  EXPECT_NE(first.get().find("200 OK"), std::string::npos);
}

// Keep-alive: a scraper's next request is served on the connection it already has. MHD
// 0.9.7x answers a response queued with the request's headers with `Connection: close`; the
// server must answer on the request's last callback instead.
TEST(WebServerKeepAlive, TwoRequestsOnOneConnection) {
  int scrapes = 0;
  WebServer server(LoopbackOptions(), {}, [&](double) {
    ++scrapes;
    return std::string("up 1\n");
  });
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
  server.SetReady(true);
  KeepAliveClient client(server.port());
  ASSERT_TRUE(client.connected());
  for (const char* path : {"/metrics", "/nope", "/metrics", "/-/healthy"}) {
    const auto reply = client.Get(path);
    ASSERT_FALSE(reply.empty()) << path << ": no reply on the kept connection";
    EXPECT_EQ(reply.find("Connection: close"), std::string::npos) << reply;
  }
  EXPECT_EQ(scrapes, 2);
  EXPECT_EQ(server.connections_accepted(), 1u);
  // A second client is a second connection.
  EXPECT_NE(Get(server.port(), "/metrics").find("200 OK"), std::string::npos);
  EXPECT_EQ(server.connections_accepted(), 2u);
}

// A request that announces a body is answered at once, without reading the body, and closed.
TEST(WebServerKeepAlive, RequestWithBodyIsAnsweredAndClosed) {
  WebServer server(LoopbackOptions(), {}, [](double) { return std::string("up 1\n"); });
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
  server.SetReady(true);
  const auto reply = Get(server.port(), "/metrics", "Content-Length: 1000000\r\n");
  EXPECT_NE(reply.find("Connection: close"), std::string::npos) << reply;
  EXPECT_NE(reply.find("\r\n\r\nup 1\n"), std::string::npos) << reply;
}

TEST(WebServerKeepAlive, IdleTimeoutClosesAKeptConnection) {
  auto options = LoopbackOptions();
  options.timeout_seconds = 1;
  WebServer server(options, {}, [](double) { return std::string("up 1\n"); });
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
  server.SetReady(true);
  KeepAliveClient client(server.port());
  ASSERT_NE(client.Get("/metrics").find("200 OK"), std::string::npos);
  // Kept open past the reply, then closed once idle for the timeout (MHD checks about once a
  // second; a loaded machine adds more).
  const double closed_after = client.SecondsUntilClosed(10);
  EXPECT_GE(closed_after, 0.5);
  EXPECT_LT(closed_after, 8);
  EXPECT_NE(closed_after, -1) << "an idle keep-alive connection was never closed";
}

TEST(WebServerKeepAlive, ScrapeCapStillAnswers503AndTheConnectionStays) {
  ScrapeGate gate;
  auto options = LoopbackOptions();
  options.max_requests = 1;
  WebServer server(options, {}, [&](double timeout) { return gate.Hold(timeout); });
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
  server.SetReady(true);
  KeepAliveClient first(server.port()), second(server.port());
  auto held = std::async(std::launch::async, [&] { return first.Get("/metrics"); });
  gate.WaitHeld(1);
  EXPECT_NE(second.Get("/metrics").find("503"), std::string::npos);
  gate.Release();
  EXPECT_NE(held.get().find("200 OK"), std::string::npos);
  // Both connections serve their next scrape: the 503 did not close the second.
  EXPECT_NE(second.Get("/metrics").find("200 OK"), std::string::npos);
  EXPECT_NE(first.Get("/metrics").find("200 OK"), std::string::npos);
  EXPECT_EQ(server.connections_accepted(), 2u);
}

TEST(WebServerKeepAlive, MaxConnectionsStillRefusesMore) {
  auto options = LoopbackOptions();
  options.max_connections = 2;
  WebServer server(options, {}, [](double) { return std::string("up 1\n"); });
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
  server.SetReady(true);
  KeepAliveClient a(server.port()), b(server.port());
  ASSERT_NE(a.Get("/metrics").find("200 OK"), std::string::npos);
  ASSERT_NE(b.Get("/metrics").find("200 OK"), std::string::npos);
  // Two kept connections fill the limit: a third is accepted by the kernel and closed by MHD.
  KeepAliveClient c(server.port());
  EXPECT_EQ(c.Get("/metrics"), "");
  EXPECT_NE(a.Get("/metrics").find("200 OK"), std::string::npos);
}

// Stopping the server does not wait for idle kept connections to time out.
TEST(WebServerKeepAlive, StopClosesIdleConnectionsAtOnce) {
  auto options = LoopbackOptions();
  options.timeout_seconds = 60;
  auto server = std::make_unique<WebServer>(options, WebConfig{},
                                            [](double) { return std::string("up 1\n"); });
  std::string error;
  ASSERT_TRUE(server->Start(&error)) << error;
  server->SetReady(true);
  KeepAliveClient client(server->port());
  ASSERT_NE(client.Get("/metrics").find("200 OK"), std::string::npos);
  const auto start = std::chrono::steady_clock::now();
  server.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_GE(client.SecondsUntilClosed(5), 0);
}

TEST(WebServer, HealthyAlwaysReadyOnceSetUp) {
  WebServer server(LoopbackOptions(), {}, [](double) { return std::string("up 1\n"); });
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
  EXPECT_NE(Get(server.port(), "/-/healthy").find("200 OK"), std::string::npos);
  EXPECT_NE(Get(server.port(), "/-/ready").find("503"), std::string::npos);
  EXPECT_NE(Get(server.port(), "/metrics").find("503"), std::string::npos);
  server.SetReady(true);
  EXPECT_NE(Get(server.port(), "/-/ready").find("200 OK"), std::string::npos);
  EXPECT_NE(Get(server.port(), "/metrics").find("200 OK"), std::string::npos);
}

// Blocked scrapes (up to the cap) must not hold up the landing page, health or the 503.
TEST(WebServer, BlockedScrapesDoNotBlockOtherRequests) {
  ScrapeGate gate;
  auto options = LoopbackOptions();
  options.max_requests = 3;
  options.scrape_timeout_seconds = 7;
  WebServer server(options, {}, [&](double timeout) { return gate.Hold(timeout); });
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
  server.SetReady(true);
  std::vector<std::future<std::string>> scrapes;
  for (int i = 0; i < 3; ++i) {
    scrapes.push_back(std::async(std::launch::async, [&] {
      return Get(server.port(), "/metrics", "X-Prometheus-Scrape-Timeout-Seconds: 3\r\n");
    }));
  }
  EXPECT_DOUBLE_EQ(gate.WaitHeld(3), 2.7);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(Get(server.port(), "/").find("200 OK"), std::string::npos);
  EXPECT_NE(Get(server.port(), "/-/healthy").find("200 OK"), std::string::npos);
  EXPECT_NE(Get(server.port(), "/metrics").find("503"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  gate.Release();
  for (auto& f : scrapes) EXPECT_NE(f.get().find("200 OK"), std::string::npos);
}

TEST(ScrapeTimeoutSeconds, HeaderLessMarginCappedByFlag) {
  EXPECT_DOUBLE_EQ(ScrapeTimeoutSeconds(nullptr, 10), 10);
  EXPECT_DOUBLE_EQ(ScrapeTimeoutSeconds("10", 10), 9.5);  // margin at most 0.5 s
  EXPECT_DOUBLE_EQ(ScrapeTimeoutSeconds("3", 10), 2.7);   // 10% below 5 s
  EXPECT_DOUBLE_EQ(ScrapeTimeoutSeconds("30", 10), 10);   // the flag caps it
  EXPECT_DOUBLE_EQ(ScrapeTimeoutSeconds("x", 10), 10);
  EXPECT_DOUBLE_EQ(ScrapeTimeoutSeconds("-1", 10), 10);
  EXPECT_DOUBLE_EQ(ScrapeTimeoutSeconds("inf", 10), 10);
  EXPECT_DOUBLE_EQ(ScrapeTimeoutSeconds("3s", 10), 10);
}

TEST(WebServer, BadListenAddress) {
  WebOptions options;
  options.listen_address = "127.0.0.1";
  WebServer server(options, {}, [](double) { return std::string(); });
  std::string error;
  EXPECT_FALSE(server.Start(&error));
  EXPECT_NE(error.find("no :port"), std::string::npos);
}

TEST(AcceptsGzip, ParsesHeader) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, gzip;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_FALSE(AcceptsGzip(nullptr));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0.000"));
  EXPECT_FALSE(AcceptsGzip("xgzip"));
}

}  // namespace
}  // namespace nvmeof
