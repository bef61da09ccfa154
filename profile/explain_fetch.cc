// `explain`'s sources: the flight recorder URLs of the exporters given (and, with --targets
// auto, of the targets the host exporters' controllers are connected to), fetched through an
// injectable function and read as record files (explain.h).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <set>
#include <thread>

#include "profile/explain.h"
#include "profile/record_scan.h"
#include "profile/top_frame.h"

namespace nvmeof::profile {

namespace {

// The newest this many records of the window: the most one answer of /api/v1/commands holds
// (exporter/commands_api.h kCommandsLimitMax; a larger limit is a 400). The flight recorder
// holds about 150k (16 MiB, 30 s by default); a window that had more is said to be cut.
constexpr std::size_t kLimit = 100'000;
// A target record ends before its host record: asked for from a little earlier.
constexpr double kTargetSlackSeconds = 1;

struct UrlParts {
  std::string scheme;     // "http" or "https"
  std::string authority;  // host[:port], without user info
  std::string path;       // from the first '/', without query or fragment
};

UrlParts SplitUrl(const std::string& url) {
  UrlParts u;
  const size_t colon = url.find("://");
  if (colon == std::string::npos) return u;
  u.scheme = url.substr(0, colon);
  const size_t a = colon + 3;
  const size_t a_end = std::min(url.find_first_of("/?#", a), url.size());
  u.authority = url.substr(a, a_end - a);
  if (const size_t at = u.authority.rfind('@'); at != std::string::npos)
    u.authority.erase(0, at + 1);
  if (a_end < url.size() && url[a_end] == '/') {
    const size_t p_end = std::min(url.find_first_of("?#", a_end), url.size());
    u.path = url.substr(a_end, p_end - a_end);
  }
  return u;
}

// ":PORT" of an authority, or "" when it names none.
std::string PortOf(const std::string& authority) {
  const size_t close = authority.rfind(']');
  const size_t colon = authority.rfind(':');
  if (colon == std::string::npos || (close != std::string::npos && colon < close)) return "";
  return authority.substr(colon);
}

// scheme://authority/prefix: the exporter's root, with a trailing /metrics dropped.
std::string BaseUrl(const std::string& url) {
  const UrlParts u = SplitUrl(url);
  std::string path = u.path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (path.ends_with("/metrics")) path.resize(path.size() - 8);
  while (!path.empty() && path.back() == '/') path.pop_back();
  return u.scheme + "://" + u.authority + path;
}

// An error, with what a 404 without a reason of its own means here.
std::string Describe(const std::string& error) {
  if (error == "HTTP 404" || error == "HTTP 404 Not Found")
    return error +
           " (no flight recorder: it is off on that exporter, or the exporter has no "
           "/api/v1/commands)";
  return error;
}

// GETs a source's records; the body is read later (ReadBodies), with the others.
void FetchSource(ExplainSource* s, const std::string& url, const char* role, double since,
                 const ExplainFetch& fetch, std::vector<FetchedBody>* bodies) {
  s->url = url;
  s->role = role;
  std::string body, error;
  if (!fetch(CommandsUrl(url, role, since), &body, &error)) {
    s->error = Describe(error);
    return;
  }
  bodies->push_back({s, std::move(body)});
}

void ReadBody(FetchedBody* b) {
  ExplainSource& s = *b->source;
  std::string error;
  const bool read = ReadRecordBody(b->body, &s.file, &error);
  b->body = std::string();
  if (!read) {
    s.error = "not a record file: " + error;
  } else if (s.file.header.role != s.role) {
    s.error = "asked for " + s.role + " records, it answered " + s.file.header.role + " records";
  } else {
    s.ok = true;
    s.limit_hit = s.file.records.size() >= kLimit;
  }
}

}  // namespace

std::string CommandsUrl(const std::string& base, const char* role, double since_seconds) {
  char since[48];
  std::snprintf(since, sizeof since, "%.3f", since_seconds);
  return BaseUrl(base) + "/api/v1/commands?role=" + role + "&since=" + since +
         "&limit=" + std::to_string(kLimit);
}

std::vector<std::string> AutoTargets(const std::string& host_url, const std::string& metrics,
                                     std::string* error) {
  std::vector<Sample> samples;
  if (!ParseExposition(metrics, &samples, error)) return {};
  const UrlParts host = SplitUrl(host_url);
  const std::string port = PortOf(host.authority);
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& s : samples) {
    if (s.name != "nvmeof_controller_info") continue;
    const auto transport = s.labels.find("transport"), traddr = s.labels.find("traddr");
    if (traddr == s.labels.end() || traddr->second.empty()) continue;
    if (transport != s.labels.end() && transport->second == "pcie") continue;
    const std::string& a = traddr->second;
    const std::string url =
        host.scheme + "://" + (a.find(':') != std::string::npos ? "[" + a + "]" : a) + port;
    if (seen.insert(url).second) out.push_back(url);
  }
  if (out.empty())
    *error =
        "no NVMe-oF controller with a target address in its nvmeof_controller_info "
        "(no controller connected, or the nvme_host collector is off)";
  return out;
}

void ReadBodies(std::vector<FetchedBody>* bodies) {
  const size_t threads =
      std::min<size_t>(bodies->size(), std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < bodies->size();) ReadBody(&(*bodies)[i]);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

Explanation FetchAndExplain(const ExplainRequest& req, const ExplainFetch& fetch,
                            std::uint64_t now_ns, std::vector<std::string>* warnings) {
  const double since = static_cast<double>(now_ns) * 1e-9 - req.since_seconds;
  std::vector<std::string> target_urls = req.targets;
  std::set<std::string> known(target_urls.begin(), target_urls.end());
  for (const auto& url : req.hosts) {
    if (!req.targets_auto) break;
    std::string body, error;
    std::vector<std::string> found;
    if (fetch(BaseUrl(url) + "/metrics", &body, &error)) found = AutoTargets(url, body, &error);
    if (found.empty()) warnings->push_back("--targets auto: " + url + ": " + error);
    for (auto& t : found)
      if (known.insert(t).second) target_urls.push_back(std::move(t));
  }
  // Sized first: the bodies point at their sources.
  std::vector<ExplainSource> hosts(req.hosts.size()), targets(target_urls.size());
  std::vector<FetchedBody> bodies;
  for (size_t i = 0; i < hosts.size(); ++i)
    FetchSource(&hosts[i], req.hosts[i], "host", since, fetch, &bodies);
  for (size_t i = 0; i < targets.size(); ++i)
    FetchSource(&targets[i], target_urls[i], "target", since - kTargetSlackSeconds, fetch, &bodies);
  ReadBodies(&bodies);
  for (const auto& h : hosts)
    if (!h.ok) warnings->push_back("host " + h.url + ": " + h.error);
  for (const auto& t : targets)
    if (!t.ok)
      warnings->push_back("target " + t.url + ": " + t.error +
                          "; the host side is shown without it");
  Explanation x =
      BuildExplanation(std::move(hosts), std::move(targets), req.slowest, req.min_seconds);
  x.since_ns = now_ns - static_cast<std::uint64_t>(req.since_seconds * 1e9);
  x.now_ns = now_ns;
  return x;
}

}  // namespace nvmeof::profile
