#include "profile/http_get.h"

#include <curl/curl.h>
#include <string.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string_view>
#include <utility>

namespace nvmeof::profile {

namespace {

// A host that is down should fail the frame quickly, not after the whole read budget.
constexpr double kMaxConnectSeconds = 5;

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct CurlUrlDeleter {
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};
struct CurlSlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
struct CurlFree {
  void operator()(char* p) const { curl_free(p); }
};

// curl_global_init is process-wide, and before 7.84 not thread-safe; it is never undone, as
// another HttpClient may be alive on another thread.
CURLcode GlobalInit() {
  static std::once_flag once;
  static CURLcode rc = CURLE_OK;
  std::call_once(once, [] { rc = curl_global_init(CURL_GLOBAL_DEFAULT); });
  return rc;
}

std::string ErrnoText(long err) {
  char buf[256];
  return strerror_r(static_cast<int>(err), buf, sizeof buf);  // GNU: returns the text
}

// Empty if path names a readable file with a PEM certificate, else why not: libcurl's own
// message for such a file depends on its TLS library, and with some (GnuTLS) it only shows as
// every handshake failing as untrusted.
std::string CheckCaFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "CA file " + path + ": cannot read it";
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    return "CA file " + path + ": no PEM certificate in it";
  }
  return "";
}

// The string value of one part of a parsed URL ("" if it has none).
std::string UrlPart(CURLU* url, CURLUPart part, unsigned flags = 0) {
  char* raw = nullptr;
  if (curl_url_get(url, part, &raw, flags) != CURLUE_OK) return "";
  std::unique_ptr<char, CurlFree> owned(raw);
  return raw;
}

// What a failed curl_easy_perform means, naming the step: connect, TLS handshake, send, read.
std::string DescribeFailure(CURL* curl, CURLcode rc, const char* error_buffer, bool too_large,
                            const std::string& where, bool tls, std::size_t max_body) {
  const std::string detail = error_buffer[0] ? error_buffer : curl_easy_strerror(rc);
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
      return "resolve " + where + ": " + detail;
    case CURLE_COULDNT_CONNECT: {
      long os_errno = 0;
      curl_easy_getinfo(curl, CURLINFO_OS_ERRNO, &os_errno);
      return "cannot connect to " + where + ": " + (os_errno ? ErrnoText(os_errno) : detail);
    }
    case CURLE_OPERATION_TIMEDOUT: {
      // The step that ran out of time. Before the request went out (no pretransfer time), a
      // connection that was made (counted once its TCP connect is done) hung in TLS.
      long new_connections = 0;
      curl_off_t pretransfer_us = 0;
      curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &new_connections);
      curl_easy_getinfo(curl, CURLINFO_PRETRANSFER_TIME_T, &pretransfer_us);
      if (pretransfer_us > 0) {
        return "read response from " + where + ": " + detail;
      } else if (tls && new_connections > 0) {
        return "TLS handshake with " + where + ": " + detail;
      } else {
        return "cannot connect to " + where + ": " + detail;
      }
    }
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ISSUER_ERROR:
      return "TLS handshake with " + where + ": " + detail;
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CRL_BADFILE:
      return "TLS: " + detail;
    case CURLE_WRITE_ERROR:
    case CURLE_FILESIZE_EXCEEDED:
      return too_large || rc == CURLE_FILESIZE_EXCEEDED
                 ? "response larger than " + std::to_string(max_body >> 20) + " MiB"
                 : "read response from " + where + ": " + detail;
    case CURLE_SEND_ERROR:
      return "send request to " + where + ": " + detail;
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return "read response from " + where + ": " + detail;
    default:
      return "GET " + where + ": " + detail;
  }
}

// The first line of an error answer's body, for the error message: printable ASCII only, at
// most 200 characters; "" when there is none.
std::string FirstLine(const std::string& body) {
  std::string line;
  for (char c : body) {
    if (c == '\n' || c == '\r' || line.size() >= 200) break;
    line += c >= 0x20 && c < 0x7f ? c : '?';
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

}  // namespace

struct HttpClient::State {
  std::unique_ptr<CURL, CurlDeleter> curl;
  std::unique_ptr<curl_slist, CurlSlistDeleter> headers;
  char error_buffer[CURL_ERROR_SIZE] = {};
  std::string setup_error;  // set by the constructor: every Get fails with it
  // Per transfer: where the body goes, whether it outgrew max_body, the last status line.
  std::size_t max_body = 0;
  std::string* body = nullptr;
  bool too_large = false;
  std::string status_line;

  static size_t OnBody(char* data, size_t size, size_t n, void* self) {
    State* s = static_cast<State*>(self);
    const size_t bytes = size * n;
    if (s->body->size() + bytes > s->max_body) {
      s->too_large = true;
      return 0;  // curl aborts the transfer with CURLE_WRITE_ERROR
    }
    s->body->append(data, bytes);
    return bytes;
  }

  // Keeps the status line's reason phrase for the error of a non-2xx answer, which libcurl
  // does not report itself (CURLINFO_RESPONSE_CODE is the number only).
  static size_t OnHeader(char* data, size_t size, size_t n, void* self) {
    State* s = static_cast<State*>(self);
    const size_t bytes = size * n;
    std::string_view line(data, bytes);
    if (line.starts_with("HTTP/")) {
      while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) {
        line.remove_suffix(1);
      }
      const size_t space = line.find(' ');
      s->status_line = space == std::string_view::npos ? "" : line.substr(space + 1);
    }
    return bytes;
  }
};

HttpClient::HttpClient(HttpClientOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>()) {
  State& s = *state_;
  if (CURLcode rc = GlobalInit(); rc != CURLE_OK) {
    s.setup_error = std::string("libcurl init: ") + curl_easy_strerror(rc);
    return;
  }
  s.curl.reset(curl_easy_init());
  s.headers.reset(curl_slist_append(nullptr, "Accept: text/plain"));
  if (!s.curl || !s.headers) {
    s.setup_error = "libcurl init: out of memory";
    return;
  }
  if (!options_.ca_file.empty() && !options_.insecure_skip_verify) {
    s.setup_error = CheckCaFile(options_.ca_file);
    if (!s.setup_error.empty()) return;
  }
  CURL* curl = s.curl.get();
  CURLcode rc = CURLE_OK;
  auto set = [&](CURLoption option, auto value) {
    if (rc == CURLE_OK) rc = curl_easy_setopt(curl, option, value);
  };
  const long timeout_ms = std::max(1L, static_cast<long>(options_.timeout_seconds * 1000));
  set(CURLOPT_ERRORBUFFER, s.error_buffer);
  // Timeouts by poll() instead of SIGALRM, which would hit whatever thread the signal lands on.
  set(CURLOPT_NOSIGNAL, 1L);
  set(CURLOPT_PROTOCOLS_STR, "http,https");
  // Straight to the exporter, as Prometheus scrapes, never through the environment's
  // http_proxy/https_proxy (meant for the internet, not a node's exporter).
  set(CURLOPT_PROXY, "");
  set(CURLOPT_FOLLOWLOCATION, 0L);  // a redirect is an error: /metrics is never one
  set(CURLOPT_TIMEOUT_MS, timeout_ms);
  set(CURLOPT_CONNECTTIMEOUT_MS,
      std::min(timeout_ms, static_cast<long>(kMaxConnectSeconds * 1000)));
  set(CURLOPT_HTTPHEADER, s.headers.get());
  set(CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl decodes; OnBody bounds the decoded size
  s.max_body = options_.max_body_bytes;
  // Refused early when Content-Length says so.
  set(CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(s.max_body));
  set(CURLOPT_USERAGENT, options_.user_agent.c_str());
  set(CURLOPT_WRITEFUNCTION, &State::OnBody);
  set(CURLOPT_WRITEDATA, &s);
  set(CURLOPT_HEADERFUNCTION, &State::OnHeader);
  set(CURLOPT_HEADERDATA, &s);
  if (!options_.ca_file.empty()) set(CURLOPT_CAINFO, options_.ca_file.c_str());
  if (options_.insecure_skip_verify) {
    set(CURLOPT_SSL_VERIFYPEER, 0L);
    set(CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!options_.username.empty()) set(CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
  if (rc != CURLE_OK) s.setup_error = std::string("libcurl setup: ") + curl_easy_strerror(rc);
}

HttpClient::~HttpClient() = default;

bool HttpClient::Get(const std::string& url, std::string* body, std::string* error) {
  State& s = *state_;
  body->clear();
  if (!s.setup_error.empty()) {
    *error = s.setup_error;
    return false;
  }
  const bool tls = url.starts_with("https://");
  if (!tls && !url.starts_with("http://")) {
    *error = "expected an http:// or https:// URL";
    return false;
  }
  std::unique_ptr<CURLU, CurlUrlDeleter> parsed(curl_url());
  if (!parsed) {
    *error = "libcurl: out of memory";
    return false;
  }
  if (CURLUcode rc = curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0); rc != CURLUE_OK) {
    *error = "bad URL " + url + ": " + curl_url_strerror(rc);
    return false;
  }
  // "https://host:10420" means the exporter's /metrics, as in the docs; libcurl would ask for /.
  const size_t authority = url.find("://") + 3;
  const size_t authority_end = url.find_first_of("/?#", authority);
  if (authority_end == std::string::npos || url[authority_end] != '/') {
    curl_url_set(parsed.get(), CURLUPART_PATH, "/metrics", 0);
  }
  const std::string where = UrlPart(parsed.get(), CURLUPART_HOST) + ":" +
                            UrlPart(parsed.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT);
  CURL* curl = s.curl.get();
  curl_easy_setopt(curl, CURLOPT_URL, UrlPart(parsed.get(), CURLUPART_URL).c_str());

  if (!options_.username.empty()) {
    // Read for every request, as Prometheus does, so that a rotated password takes effect.
    std::ifstream in(options_.password_file);
    std::string password;
    if (options_.password_file.empty() || !in || !std::getline(in, password)) {
      *error = "basic auth: cannot read a password from \"" + options_.password_file + "\"";
      return false;
    }
    if (password.ends_with('\r')) password.pop_back();
    curl_easy_setopt(curl, CURLOPT_USERNAME, options_.username.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, password.c_str());  // libcurl keeps a copy
  }

  s.body = body;
  s.too_large = false;
  s.status_line.clear();
  s.error_buffer[0] = '\0';
  const CURLcode rc = curl_easy_perform(curl);
  s.body = nullptr;
  if (rc != CURLE_OK) {
    body->clear();
    *error = DescribeFailure(curl, rc, s.error_buffer, s.too_large, where, tls, s.max_body);
    return false;
  }
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status > 299) {
    const std::string reason = options_.error_body && status >= 400 ? FirstLine(*body) : "";
    body->clear();
    // HTTP/2 has no reason phrase: the number alone then.
    *error = "HTTP " + (s.status_line.empty() ? std::to_string(status) : s.status_line);
    if (!reason.empty()) *error += ": " + reason;
    if (status >= 300 && status <= 399) {
      char* location = nullptr;
      curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &location);
      *error +=
          std::string(" (to ") + (location ? location : "?") + "; redirects are not followed)";
    }
    return false;
  }
  return true;
}

}  // namespace nvmeof::profile
