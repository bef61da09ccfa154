#include "exporter/profile/http_get.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace nvmeof::profile {

bool HttpGet(const std::string& url, double timeout_seconds, std::string* body,
             std::string* error) {
  if (url.rfind("http://", 0) != 0) {
    *error = "only http:// URLs are supported (https is not built yet)";
    return false;
  }
  std::string rest = url.substr(7);
  std::string path = "/metrics";
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    path = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  std::string host = rest, port = "80";
  if (!rest.empty() && rest[0] == '[') {
    const auto close = rest.find(']');
    if (close == std::string::npos) {
      *error = "bad URL " + url;
      return false;
    }
    host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') port = rest.substr(close + 2);
  } else if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    *error = host + ":" + port + ": " + gai_strerror(rc);
    return false;
  }
  int fd = -1;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout_seconds);
    tv.tv_usec = static_cast<suseconds_t>((timeout_seconds - static_cast<double>(tv.tv_sec)) * 1e6);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    *error = "cannot connect to " + host + ":" + port;
    return false;
  }
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + rest +
                              "\r\nAccept: text/plain\r\nConnection: close\r\n\r\n";
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      close(fd);
      *error = "send failed";
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  std::string response;
  char buf[65536];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      close(fd);
      *error = "read failed or timed out";
      return false;
    }
    if (n == 0) break;
    response.append(buf, static_cast<size_t>(n));
    if (response.size() > (256u << 20)) {
      close(fd);
      *error = "response larger than 256 MiB";
      return false;
    }
  }
  close(fd);
  const size_t head_end = response.find("\r\n\r\n");
  if (head_end == std::string::npos || response.rfind("HTTP/1.", 0) != 0) {
    *error = "not an HTTP response";
    return false;
  }
  const std::string head = response.substr(0, head_end);
  const int status = std::atoi(head.c_str() + head.find(' ') + 1);
  if (status != 200) {
    *error = "HTTP " + head.substr(head.find(' ') + 1, head.find("\r\n") - head.find(' ') - 1);
    return false;
  }
  std::string lower = head;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string raw = response.substr(head_end + 4);
  if (lower.find("transfer-encoding: chunked") == std::string::npos) {
    *body = std::move(raw);
    return true;
  }
  body->clear();
  size_t i = 0;
  for (;;) {
    const size_t eol = raw.find("\r\n", i);
    if (eol == std::string::npos) {
      *error = "truncated chunked body";
      return false;
    }
    const unsigned long len = std::strtoul(raw.c_str() + i, nullptr, 16);
    i = eol + 2;
    if (len == 0) return true;
    if (i + len > raw.size()) {
      *error = "truncated chunked body";
      return false;
    }
    body->append(raw, i, len);
    i += len + 2;
  }
}

}  // namespace nvmeof::profile
