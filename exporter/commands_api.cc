#include "exporter/commands_api.h"

#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

namespace nvmeof {

namespace {

WebServer::EndpointReply BadRequest(const std::string& why) {
  return {400, "text/plain; charset=utf-8", why + "\n"};
}

// A finite, non-negative number of seconds.
bool ParseSeconds(const std::string& text, double* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && std::isfinite(*out) && *out >= 0;
}

}  // namespace

WebServer::EndpointReply ServeCommands(const FlightRecorder* recorder, const CommandsNode& node,
                                       const WebServer::QueryArgs& args) {
  if (!recorder) {
    return {404, "text/plain; charset=utf-8",
            "the flight recorder is off (bpf.flight_recorder_max_bytes: 0)\n"};
  }
  FlightQuery q;
  std::set<std::string> seen;
  for (const auto& [key, value] : args) {
    if (!seen.insert(key).second) return BadRequest("parameter " + key + " given twice");
    double seconds = 0;
    if (key == "role") {
      if (value != "host" && value != "target")
        return BadRequest("role: \"" + value + "\" is neither host nor target");
      q.role = value == "host" ? NVMEOF_ROLE_HOST : NVMEOF_ROLE_TARGET;
    } else if (key == "since") {
      if (!ParseSeconds(value, &seconds))
        return BadRequest("since: expected unix seconds, got \"" + value + "\"");
      q.since_ns = static_cast<std::uint64_t>(seconds * 1e9);
    } else if (key == "min_seconds") {
      if (!ParseSeconds(value, &seconds))
        return BadRequest("min_seconds: expected seconds >= 0, got \"" + value + "\"");
      q.min_ns = static_cast<std::uint64_t>(seconds * 1e9);
    } else if (key == "controller") {
      q.controller = value;
    } else if (key == "nqn") {
      q.nqn = value;
    } else if (key == "ref") {
      q.ref = value;
    } else if (key == "limit") {
      std::size_t limit = 0;
      const char* end = value.data() + value.size();
      auto [ptr, ec] = std::from_chars(value.data(), end, limit);
      if (ec != std::errc() || ptr != end || limit < 1 || limit > kCommandsLimitMax)
        return BadRequest("limit: expected 1 to " + std::to_string(kCommandsLimitMax) + ", got \"" +
                          value + "\"");
      q.limit = limit;
    } else {
      return BadRequest("unknown parameter " + key +
                        " (role, since, min_seconds, controller, nqn, ref, limit)");
    }
  }
  bool truncated = false;
  const std::vector<Record> records = recorder->Query(q, &truncated);
  RecordHeader header;
  header.hostname = node.hostname;
  header.kernel = node.kernel;
  header.role = q.role == NVMEOF_ROLE_HOST ? "host" : "target";
  header.sample_every = node.sample_every;
  std::ostringstream out;
  WriteHeader(header, out);
  for (const auto& r : records) WriteRecord(r, out);
  WriteEnd(records.size(), 0, out);
  return {200, "application/x-ndjson; charset=utf-8", out.str()};
}

}  // namespace nvmeof
