// `nvmeof_exporter explain`: its command line, one HTTP client for every exporter it reads, and
// the --watch loop (explain.h has the what, explain_render.h the output).
#include <time.h>

#include <chrono>
#include <thread>

#include "profile/cli.h"
#include "profile/commands.h"
#include "profile/explain.h"
#include "profile/explain_render.h"
#include "profile/http_get.h"

namespace nvmeof::profile {

namespace {

constexpr double kDefaultWatchSeconds = 2;  // as top's --interval

struct ExplainArgs {
  ExplainRequest req;
  HttpClientOptions client;
  bool json = false;
  double watch = 0;  // seconds between refreshes; 0 = once
};

const std::vector<FlagSpec>& ExplainFlags() {
  static const std::vector<FlagSpec> flags = [] {
    std::vector<FlagSpec> f = {
        {"host", FlagSpec::kValue,
         "A host's exporter (http:// or https://, its port; a path of /metrics is dropped):\n"
         "its flight recorder's host commands. Repeatable; at least one.",
         0, "URL"},
        {"target", FlagSpec::kValue,
         "A target's exporter: its target records split each host command's wait into\n"
         "network, target and drive. Repeatable.",
         0, "URL"},
        {"targets", FlagSpec::kValue,
         "auto: also the target of every NVMe-oF controller of each host (its traddr in the\n"
         "host's nvmeof_controller_info), at the host URL's scheme and port.",
         0, "auto"},
        {"since", FlagSpec::kValue,
         "The window: commands that ended in the last DURATION (500ms, 60s, 5m). Default 60s.", 0,
         "DURATION"},
        {"slowest", FlagSpec::kValue, "Show the N slowest commands. Default 10.", 0, "N"},
        {"min", FlagSpec::kValue,
         "The tail summary covers commands of at least this end to end (seconds, or 20ms)\n"
         "instead of those at or above the window's p99.",
         0, "SECONDS"},
        {"format", FlagSpec::kValue, "text, or json: one JSON object per refresh. Default text.", 0,
         "FORMAT"},
        {"watch", FlagSpec::kValue,
         "Refresh every SECONDS (default 2 when given alone) until interrupted, as top does.", 0,
         "SECONDS"},
        kHelpFlag,
    };
    const auto& client = HttpClientFlags();
    f.insert(f.end() - 1, client.begin(), client.end());
    return f;
  }();
  return flags;
}

// --watch takes an optional value: alone, last or before another flag it means the default.
std::vector<std::string> WatchDefault(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--watch") {
      out.push_back(args[i]);
    } else if (i + 1 < args.size() && !args[i + 1].starts_with("-")) {
      out.push_back("--watch=" + args[++i]);
    } else {
      out.push_back("--watch=" + std::to_string(kDefaultWatchSeconds));
    }
  }
  return out;
}

bool IsHttpUrl(const std::string& v) {
  return v.starts_with("http://") || v.starts_with("https://");
}

// The flags with values in (0, max] seconds: --since, --min, --watch.
bool GetSeconds(const ParsedArgs& p, const char* flag, double max, double* dst, std::string* e) {
  const std::string* v = p.Get(flag);
  if (!v || ParseDurationSeconds(*v, max, dst)) return true;
  *e = std::string("--") + flag + ": \"" + *v + "\" is not a duration in (0, " +
       std::to_string(static_cast<long>(max)) + " s] (e.g. 60s, 5m, 0.02)";
  return false;
}

// -1 to go on; else the exit status (0 after --help, 2 for bad usage).
int ParseExplainArgs(const std::vector<std::string>& args, ExplainArgs* a, std::ostream& out,
                     std::ostream& err) {
  static const std::string usage =
      Usage("explain --host=URL [--target=URL]... [--targets=auto] [flags]",
            "Why the slow NVMe-oF commands of the last minute were slow: the flight recorders of\n"
            "running exporters (GET /api/v1/commands), host and target joined per command, each\n"
            "host command's end to end split into host, network, target and drive, the slowest\n"
            "shown and the tail's dominant component named (docs/profiling.md).",
            ExplainFlags());
  ParsedArgs p;
  if (int rc = ParseCommand("explain", WatchDefault(args), ExplainFlags(), usage, 0, &p, out, err);
      rc >= 0)
    return rc;
  std::string e;
  for (const auto& f : p.flags) {
    if (f.name != "host" && f.name != "target") continue;
    if (!IsHttpUrl(f.value))
      return UsageError("explain",
                        "--" + f.name + ": \"" + f.value + "\" is not an http:// or https:// URL",
                        err);
    (f.name == "host" ? a->req.hosts : a->req.targets).push_back(f.value);
  }
  if (a->req.hosts.empty())
    return UsageError("explain", "--host=URL is required (see --help)", err);
  if (auto v = p.Get("targets")) {
    if (*v != "auto") return UsageError("explain", "--targets: \"" + *v + "\" is not auto", err);
    a->req.targets_auto = true;
  }
  if (auto v = p.Get("slowest")) {
    std::uint64_t n = 0;
    if (!ParseCount(*v, 100000, &n))
      return UsageError("explain", "--slowest: \"" + *v + "\" is not a whole number in [1, 100000]",
                        err);
    a->req.slowest = n;
  }
  if (!GetSeconds(p, "since", 7 * 86400, &a->req.since_seconds, &e) ||
      !GetSeconds(p, "min", 3600, &a->req.min_seconds, &e) ||
      !GetSeconds(p, "watch", 3600, &a->watch, &e) || !GetFormatJson(p, &a->json, &e) ||
      !GetHttpClientOptions(p, &a->client, &e))
    return UsageError("explain", e, err);
  return -1;
}

std::uint64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

int RunExplain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ExplainArgs a;
  if (int rc = ParseExplainArgs(args, &a, out, err); rc >= 0) return rc;
  a.client.max_body_bytes = std::size_t{1} << 30;  // a window of a busy node: 100s of MiB
  a.client.error_body = true;                      // the API's 400 says what it refused
  a.client.user_agent = "nvmeof_exporter explain";
  HttpClient client(a.client);  // one client, its connections kept from refresh to refresh
  const ExplainFetch fetch = [&client](const std::string& url, std::string* body,
                                       std::string* error) { return client.Get(url, body, error); };
  for (;;) {
    std::vector<std::string> warnings;
    const Explanation x = FetchAndExplain(a.req, fetch, RealtimeNs(), &warnings);
    if (a.watch > 0 && !a.json) out << "\x1b[H\x1b[2J";
    for (const auto& w : warnings) err << "nvmeof_exporter explain: " << w << "\n";
    if (a.json) {
      PrintExplainJson(x, out);
    } else if (x.tail || a.watch > 0) {
      PrintExplainText(x, out);
    }
    out.flush();
    if (!x.tail) {
      err << "nvmeof_exporter explain: " << NoRecordsMessage(x) << "\n";
      if (a.watch <= 0) return 1;
    }
    if (a.watch <= 0) return 0;
    std::this_thread::sleep_for(std::chrono::duration<double>(a.watch));
  }
}

}  // namespace nvmeof::profile
