// `explain`'s output (explain.h): text, or one JSON object per refresh.
//
// JSON keys (durations in seconds, times in CLOCK_REALTIME ns; null where a value is unknown):
//   window            {since_ns, until_ns, seconds}: the window asked for
//   sources           [{url, role, ok, records, lost, limit_hit, error (when !ok)}]
//   host_commands, target_records, joined, unmatched, without_wait (counts)
//   targets_answered  at least one target source answered (else the host side only)
//   drive_known       some joined command's target record has its exec point
//   p99_seconds       host end to end over the window
//   slowest           [{time_ns (of its end), ref, node, controller, device, subsystem,
//                       transport, op, size, qid, cid, slba, e2e_seconds, joined, target_ref,
//                       largest (component key), components: {host, network, target, drive,
//                       network_target}}]; target is the residence less the drive where drive
//                       is known, the whole residence where it is not
//   tail              {threshold: "p99" or "min", threshold_seconds, commands, split, joined,
//                       drive_known, components: [{component (key), name, seconds, share,
//                       largest_in}] largest first, dominant (key), dominant_share, clear}
//                       or null for an empty window
#pragma once

#include <ostream>
#include <string>

#include "profile/explain.h"

namespace nvmeof::profile {

void PrintExplainText(const Explanation& x, std::ostream& out);
void PrintExplainJson(const Explanation& x, std::ostream& out);

// For an empty window: "no records: ..." saying which exporters were asked and what they hold.
std::string NoRecordsMessage(const Explanation& x);

}  // namespace nvmeof::profile
