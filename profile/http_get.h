// The HTTP client `top --from` reads a running exporter with.
#pragma once

#include <string>

namespace nvmeof::profile {

// How to reach a remote exporter behind its web config (TLS, basic auth).
struct HttpClientOptions {
  double timeout_seconds = 10;
  std::string ca_file;  // https: PEM CA bundle to verify the server with; empty = system trust
  bool insecure_skip_verify = false;  // https: accept any certificate (testing only)
  std::string username;               // basic auth, with the password in password_file
  std::string password_file;          // its first line is the password
};

// Minimal HTTP/1.1 GET over http:// or https:// (GnuTLS; the server's certificate is verified
// against ca_file or the system trust and the URL's host); Content-Length, chunked or
// read-to-close bodies. Errors say which step failed ("TLS handshake: ...", "HTTP 401 ...").
bool HttpGet(const std::string& url, const HttpClientOptions& options, std::string* body,
             std::string* error);

}  // namespace nvmeof::profile
