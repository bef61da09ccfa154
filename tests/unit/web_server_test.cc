#include "exporter/web_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <condition_variable>
#include <future>

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
  WebServer server(LoopbackOptions(), {}, [] { return std::string("up 1\n"); });
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
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
  WebServer server(LoopbackOptions(), {}, [&] { return body; });
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
  const auto reply = Get(server.port(), "/metrics", "Accept-Encoding: gzip\r\n");
  ASSERT_NE(reply.find("Content-Encoding: gzip"), std::string::npos);
  EXPECT_EQ(Gunzip(reply.substr(reply.find("\r\n\r\n") + 4)), body);
  EXPECT_EQ(Get(server.port(), "/metrics").find("Content-Encoding"), std::string::npos);
}

TEST(WebServer, ConcurrentScrapesPastTheCapGet503) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  int entered = 0;
  auto options = LoopbackOptions();
  options.max_requests = 1;
  WebServer server(options, {}, [&] {
    std::unique_lock<std::mutex> lock(mu);
    ++entered;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    return std::string("ok 1\n");
  });
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
  auto first = std::async(std::launch::async, [&] { return Get(server.port(), "/metrics"); });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return entered == 1; });
  }
  // The first scrape holds the only slot; the second must be turned away, not queued.
  EXPECT_NE(Get(server.port(), "/metrics").find("503"), std::string::npos);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_NE(first.get().find("200 OK"), std::string::npos);
}

TEST(WebServer, BadListenAddress) {
  WebOptions options;
  options.listen_address = "127.0.0.1";
  WebServer server(options, {}, [] { return std::string(); });
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
