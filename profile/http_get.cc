#include "profile/http_get.h"

#include <gnutls/gnutls.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>

#include "collectors/base/fd.h"

namespace nvmeof::profile {

namespace {

std::string Base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned v = 0;
  int bits = 0;
  for (unsigned char c : in) {
    v = (v << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += k[(v >> bits) & 63];
    }
  }
  if (bits > 0) out += k[(v << (6 - bits)) & 63];
  while (out.size() % 4) out += '=';
  return out;
}

// One connection's byte stream: plain, or GnuTLS over the socket.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual bool Send(const std::string& data, std::string* error) = 0;
  // > 0 bytes read, 0 at the end, < 0 on error (with *error set).
  virtual long Recv(char* buf, size_t len, std::string* error) = 0;
};

class PlainStream : public Stream {
 public:
  explicit PlainStream(int fd) : fd_(fd) {}
  bool Send(const std::string& data, std::string* error) override {
    size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) {
        *error = "send failed";
        return false;
      }
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  long Recv(char* buf, size_t len, std::string* error) override {
    const ssize_t n = recv(fd_, buf, len, 0);
    if (n < 0) *error = "read failed or timed out";
    return n;
  }

 private:
  int fd_;
};

class TlsStream : public Stream {
 public:
  ~TlsStream() override {
    if (session_) {
      gnutls_bye(session_, GNUTLS_SHUT_WR);
      gnutls_deinit(session_);
    }
    if (cred_) gnutls_certificate_free_credentials(cred_);
  }
  bool Start(int fd, const std::string& host, const HttpClientOptions& o, std::string* error) {
    int rc = gnutls_certificate_allocate_credentials(&cred_);
    if (rc >= 0) {
      rc = o.ca_file.empty() ? gnutls_certificate_set_x509_system_trust(cred_)
                             : gnutls_certificate_set_x509_trust_file(cred_, o.ca_file.c_str(),
                                                                      GNUTLS_X509_FMT_PEM);
      if (rc == 0 && !o.ca_file.empty()) rc = GNUTLS_E_FILE_ERROR;  // no certificate in it
    }
    if (rc < 0) {
      *error = "CA " + (o.ca_file.empty() ? std::string("system trust") : o.ca_file) + ": " +
               gnutls_strerror(rc);
      return false;
    }
    if ((rc = gnutls_init(&session_, GNUTLS_CLIENT)) < 0 ||
        (rc = gnutls_set_default_priority(session_)) < 0 ||
        (rc = gnutls_credentials_set(session_, GNUTLS_CRD_CERTIFICATE, cred_)) < 0) {
      *error = std::string("TLS setup: ") + gnutls_strerror(rc);
      return false;
    }
    gnutls_server_name_set(session_, GNUTLS_NAME_DNS, host.data(), host.size());
    if (!o.insecure_skip_verify) gnutls_session_set_verify_cert(session_, host.c_str(), 0);
    gnutls_transport_set_int(session_, fd);
    gnutls_handshake_set_timeout(session_, static_cast<unsigned>(o.timeout_seconds * 1000));
    do {
      rc = gnutls_handshake(session_);
    } while (rc < 0 && gnutls_error_is_fatal(rc) == 0);
    if (rc < 0) {
      *error = std::string("TLS handshake: ") + gnutls_strerror(rc);
      if (rc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
        gnutls_datum_t why{};
        if (gnutls_certificate_verification_status_print(
                gnutls_session_get_verify_cert_status(session_), GNUTLS_CRT_X509, &why, 0) == 0) {
          *error += std::string(" (") + reinterpret_cast<const char*>(why.data) + ")";
          gnutls_free(why.data);
        }
      }
      return false;
    }
    return true;
  }
  bool Send(const std::string& data, std::string* error) override {
    size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = gnutls_record_send(session_, data.data() + sent, data.size() - sent);
      if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) continue;
      if (n < 0) {
        *error = std::string("TLS send: ") + gnutls_strerror(static_cast<int>(n));
        return false;
      }
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  long Recv(char* buf, size_t len, std::string* error) override {
    for (;;) {
      const ssize_t n = gnutls_record_recv(session_, buf, len);
      if (n == GNUTLS_E_INTERRUPTED) continue;
      if (n == GNUTLS_E_PREMATURE_TERMINATION) return 0;  // closed without close_notify
      if (n < 0) *error = std::string("TLS read: ") + gnutls_strerror(static_cast<int>(n));
      return n;
    }
  }

 private:
  gnutls_certificate_credentials_t cred_ = nullptr;
  gnutls_session_t session_ = nullptr;
};

// The parts of an http(s) URL; the path defaults to /metrics, the port to the scheme's.
struct HostPort {
  std::string authority, host, port, path;
};

bool SplitUrl(const std::string& url, bool tls, HostPort* out, std::string* error) {
  std::string rest = url.substr(tls ? 8 : 7);
  std::string path = "/metrics";
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    path = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  std::string host = rest, port = tls ? "443" : "80";
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
  *out = {rest, host, port, path};
  return true;
}

// A TCP connection with send and receive timeouts; invalid with *error set on failure.
UniqueFd Connect(const std::string& host, const std::string& port, double timeout_seconds,
                 std::string* error) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    *error = host + ":" + port + ": " + gai_strerror(rc);
    return UniqueFd();
  }
  UniqueFd fd;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    fd = UniqueFd(socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) continue;
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout_seconds);
    tv.tv_usec = static_cast<suseconds_t>((timeout_seconds - static_cast<double>(tv.tv_sec)) * 1e6);
    setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0) break;
    fd = UniqueFd();
  }
  freeaddrinfo(res);
  if (!fd.valid()) *error = "cannot connect to " + host + ":" + port;
  return fd;
}

// The body of a whole HTTP/1.x response: status 200, then as is or de-chunked.
bool ParseResponse(const std::string& response, std::string* body, std::string* error) {
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

}  // namespace

bool HttpGet(const std::string& url, const HttpClientOptions& options, std::string* body,
             std::string* error) {
  const double timeout_seconds = options.timeout_seconds;
  const bool tls = url.rfind("https://", 0) == 0;
  if (!tls && url.rfind("http://", 0) != 0) {
    *error = "expected an http:// or https:// URL";
    return false;
  }
  std::string authorization;
  if (!options.username.empty()) {
    std::ifstream in(options.password_file);
    std::string password;
    if (options.password_file.empty() || !in || !std::getline(in, password)) {
      *error = "basic auth: cannot read a password from \"" + options.password_file + "\"";
      return false;
    }
    authorization = "Authorization: Basic " + Base64(options.username + ":" + password) + "\r\n";
  }
  HostPort where;
  if (!SplitUrl(url, tls, &where, error)) return false;
  const std::string &rest = where.authority, &host = where.host, &port = where.port,
                    &path = where.path;
  UniqueFd fd = Connect(host, port, timeout_seconds, error);
  if (!fd.valid()) return false;
  std::unique_ptr<Stream> stream;
  if (tls) {
    auto t = std::make_unique<TlsStream>();
    if (!t->Start(fd.get(), host, options, error)) return false;
    stream = std::move(t);
  } else {
    stream = std::make_unique<PlainStream>(fd.get());
  }
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + rest + "\r\n" +
                              authorization + "Accept: text/plain\r\nConnection: close\r\n\r\n";
  if (!stream->Send(request, error)) return false;
  std::string response;
  char buf[65536];
  for (;;) {
    const long n = stream->Recv(buf, sizeof buf, error);
    if (n < 0) return false;
    if (n == 0) break;
    response.append(buf, static_cast<size_t>(n));
    if (response.size() > (256u << 20)) {
      *error = "response larger than 256 MiB";
      return false;
    }
  }
  stream.reset();  // TLS goodbye before the socket closes
  return ParseResponse(response, body, error);
}

}  // namespace nvmeof::profile
