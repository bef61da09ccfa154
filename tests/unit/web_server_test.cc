#include "exporter/web_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <condition_variable>
#include <future>
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
  WebServer server(LoopbackOptions(), {},
                   [&](double, bool protobuf) { return protobuf ? body : std::string("up 1\n"); });
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
