// GET /api/v1/commands: the flight recorder's recent commands (loader/flight_recorder.h), as a
// record file (loader/record_file.h, version 1: a header line, one JSON line per command, an end
// line), so that `explain` and `report` read it with the record file's reader. The schema is in
// docs/metrics.md "Recent commands".
#pragma once

#include <cstdint>
#include <string>

#include "exporter/web_server.h"
#include "loader/flight_recorder.h"

namespace nvmeof {

// What the header line says about this node.
struct CommandsNode {
  std::string hostname, kernel;
  std::uint64_t sample_every = 1;
};

// The most records one response holds (`limit` may ask for fewer).
inline constexpr std::size_t kCommandsLimitMax = 100000;

// Parameters: role (host or target; default host), since (unix seconds: ended at or after),
// min_seconds (end to end at least), controller, nqn, ref, limit (default 1000). A malformed,
// unknown or repeated parameter gets 400 with the reason; a null recorder (turned off) 404.
WebServer::EndpointReply ServeCommands(const FlightRecorder* recorder, const CommandsNode& node,
                                       const WebServer::QueryArgs& args);

}  // namespace nvmeof
