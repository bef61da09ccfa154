// The HTTP client `top --from` and `explain` read running exporters with.
//
// libcurl, Debian's OpenSSL flavour (libcurl4-openssl-dev; at run time libcurl4), although the
// exporter's own web config uses GnuTLS: the GnuTLS flavour's libcurl4-gnutls-dev conflicts with
// libcurl4-openssl-dev, which Debian 12's prometheus-cpp-dev depends on, so no build host can
// have both. Nothing here depends on the flavour but the wording of libcurl's TLS errors.
#pragma once

#include <cstddef>
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
  // A Prometheus text exposition is a few MiB at most; far more means the URL is not an
  // exporter's (or a hostile one), and top would hold it all in memory twice. `explain` reads
  // record files of up to a few hundred MiB.
  std::size_t max_body_bytes = std::size_t{64} << 20;
  // A 4xx/5xx answer's error ends in the first line of its body ("HTTP 400 Bad Request:
  // since: not a number"): the flight recorder's API says there what was wrong.
  bool error_body = false;
  std::string user_agent = "nvmeof_exporter top";
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
