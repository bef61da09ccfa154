// The HTTP client `top --from` reads a running exporter with.
//
// libcurl, Debian's OpenSSL flavour (libcurl4-openssl-dev; at run time libcurl4), although the
// exporter's own web config uses GnuTLS: the GnuTLS flavour's libcurl4-gnutls-dev conflicts with
// libcurl4-openssl-dev, which Debian 12's prometheus-cpp-dev depends on, so no build host can
// have both. Nothing here depends on the flavour but the wording of libcurl's TLS errors.
#pragma once

#include <memory>
#include <string>

namespace nvmeof::profile {

// How to reach a remote exporter behind its web config (TLS, basic auth).
struct HttpClientOptions {
  double timeout_seconds = 10;  // the whole request; connecting gets at most 5 s of it
  std::string ca_file;  // https: PEM CA bundle to verify the server with; empty = system trust
  bool insecure_skip_verify = false;  // https: accept any certificate (testing only)
  std::string username;               // basic auth, with the password in password_file
  std::string password_file;          // its first line is the password
};

// GETs over http:// or https:// on one kept-alive connection: `top --from` scrapes the same URL
// every frame, and a new TCP + TLS handshake per frame would be the scrape's largest cost and
// show up in the exporter's nvmeof_exporter_http_connections_total. The server's certificate is
// verified against ca_file (or the system trust) and the URL's host; redirects are not followed.
// Not thread-safe: one client per thread.
class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // The body of a 2xx answer to GET url (a URL without a path gets /metrics). False with *error
  // naming the step that failed: "cannot connect to 127.0.0.1:1: Connection refused",
  // "TLS handshake: ...", "HTTP 401 Unauthorized", "response larger than 64 MiB".
  bool Get(const std::string& url, std::string* body, std::string* error);

 private:
  struct State;  // the CURL handle and what it points at; keeps <curl/curl.h> out of includers
  HttpClientOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace nvmeof::profile
