// `nvmeof_exporter explain`: why the slow NVMe-oF commands of the last minute were slow. It
// reads the flight recorders of running exporters (GET /api/v1/commands: a record file, loader/
// record_file.h), host side and target side, joins them per command with `report`'s join
// (join.h) and splits each host command's end to end into
//
//   host     host end to end - host wait        (block layer, driver, completion on the host)
//   network  host wait - target residence       (the fabric both ways, the target's transport)
//   target   target residence - drive           (nvmet; the whole residence where drive is unknown)
//   drive    target exec -> done                (the backing device; only where the target
//                                                record has both points: not at the default tier)
//
// where host wait = posted -> response received on the host and target residence = capsule
// received -> nvmet_req_complete on the target (join.h HostWait, TargetResidence). Durations
// are always taken on one machine; no clock is subtracted across machines.
//
// BuildExplanation is pure (unit-tested on canned record files); FetchAndExplain fetches with
// an injectable function (explain_fetch.cc); RunExplain (commands.h) is the command line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loader/record_file.h"

namespace nvmeof::profile {

// One exporter's answer: a record file of one role, or why there is none.
struct ExplainSource {
  std::string url;   // as given (or, for --targets auto, as derived)
  std::string role;  // "host" or "target"
  bool ok = false;
  std::string error;       // one line, when !ok
  bool limit_hit = false;  // as many records as asked for: older ones of the window are missing
  RecordFile file;
};

// The split components, in path order. kNetworkTarget is host wait when no target record
// splits it; kTarget includes the drive where the drive is unknown.
enum ExplainComponent { kHostPart, kNetwork, kTargetPart, kDrive, kNetworkTarget, kComponents };
// "host", "network", "target" (or "target (incl. drive)"), "drive", "network+target".
const char* ComponentName(int component, bool drive_known);
// The same as a JSON key: host, network, target, drive, network_target.
const char* ComponentKey(int component);

// One host command and its split, in seconds. A component that does not apply is NaN: without a
// target record, network/target/drive (and network+target = host wait is set); with one,
// network+target is NaN, and drive where the target record lacks its exec point.
struct ExplainCommand {
  const Record* host = nullptr;
  const Record* target = nullptr;  // the joined target record, or null
  std::size_t host_source = 0;     // index into the host sources
  int target_source = -1;          // index into the target sources, -1 = not joined
  double e2e = 0;
  double parts[kComponents] = {};
  int Largest() const;  // the component with the largest time (ties: path order)
};

struct TailPart {
  int component = kHostPart;
  double seconds = 0;          // summed over the tail's split commands
  double share = 0;            // of their summed end to end
  std::size_t largest_in = 0;  // tail commands whose largest component this is
};

// The commands at or above the threshold: the window's p99 of host end to end, or --min.
struct TailSummary {
  bool by_min = false;
  double threshold = 0;  // seconds
  std::size_t commands = 0;
  bool joined = false;          // split host/network/target[/drive]; else host/network+target
  bool drive_known = false;     // every split command of the tail has its drive time
  std::size_t split = 0;        // of `commands`, split as above (joined: those with a target)
  std::vector<TailPart> parts;  // largest first; parts[0] dominates
  bool clear = false;           // parts[0] holds at least half of the time
};

// Holds the records its commands point into: movable, not copyable.
struct Explanation {
  Explanation() = default;
  Explanation(Explanation&&) = default;
  Explanation& operator=(Explanation&&) = default;
  Explanation(const Explanation&) = delete;
  Explanation& operator=(const Explanation&) = delete;

  std::vector<ExplainSource> hosts, targets;  // as fetched (the records live here)
  std::uint64_t since_ns = 0, now_ns = 0;     // the window asked for (CLOCK_REALTIME)
  std::size_t host_records = 0, target_records = 0;
  std::size_t joined = 0, unmatched = 0;  // host commands with and without a target record
  std::size_t without_wait = 0;   // host records lacking the points of a wait: not split at all
  bool targets_answered = false;  // at least one target source answered
  bool drive_known = false;       // some joined command has its drive time
  double p99 = 0;                 // host end to end over the window
  std::vector<ExplainCommand> slowest;  // the slowest host commands, slowest first
  std::optional<TailSummary> tail;      // none when the window has no host command
};

// Joins and splits: takes the sources (their files are kept in the result, the commands point
// into them). min_seconds > 0 sets the tail's threshold instead of the p99.
Explanation BuildExplanation(std::vector<ExplainSource> hosts, std::vector<ExplainSource> targets,
                             std::size_t slowest, double min_seconds);

// A fetched answer, not read yet.
struct FetchedBody {
  ExplainSource* source = nullptr;
  std::string body;
};
// Reads each body into its source's file (ok, or error: not a record file, or not of the
// source's role), several at once (one thread per core): a busy window is a few hundred MB.
// The bodies are released as they are read.
void ReadBodies(std::vector<FetchedBody>* bodies);

// GETs url into *body; false with a one-line *error (HttpClient::Get's contract).
using ExplainFetch =
    std::function<bool(const std::string& url, std::string* body, std::string* error)>;

struct ExplainRequest {
  std::vector<std::string> hosts, targets;  // exporter URLs (a path of /metrics is dropped)
  bool targets_auto = false;  // also each host's controllers' traddr on the host URL's port
  double since_seconds = 60;
  double min_seconds = 0;  // 0: the tail is the p99
  std::size_t slowest = 10;
};

// The URL of an exporter's flight recorder query: base (scheme://authority[/prefix], a
// trailing /metrics dropped) + "/api/v1/commands?role=ROLE&since=S.SSS&limit=N".
std::string CommandsUrl(const std::string& base, const char* role, double since_seconds);
// --targets auto: the target exporters of a host exporter's controllers, from the
// nvmeof_controller_info series of its /metrics: scheme://traddr:port of `host_url` (pcie and
// empty addresses skipped, IPv6 in brackets), each once. *error when none can be read.
std::vector<std::string> AutoTargets(const std::string& host_url, const std::string& metrics,
                                     std::string* error);

// Fetches every source (one GET per URL, through `fetch`) and builds the explanation.
// Warnings (a target that does not answer, --targets auto finding none) go to `warnings`,
// one line each.
Explanation FetchAndExplain(const ExplainRequest& req, const ExplainFetch& fetch,
                            std::uint64_t now_ns, std::vector<std::string>* warnings);

}  // namespace nvmeof::profile
