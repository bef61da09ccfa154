// Block queues as sysfs shows them (<sysfs>/block/D/queue): the parsing layer, apart from what
// the collectors make of it.
#pragma once

#include <string>
#include <vector>

namespace nvmeof {

// The blk-mq disks (those with requests: <sysfs>/block/D/mq) whose queue/iostats is 0, in
// directory order. The kernel neither accounts their requests nor fires block:block_io_done for
// them (6.5+: __blk_mq_end_request() reads the clock and accounts only a request with
// RQF_IO_STAT, RQF_STATS or a scheduler).
std::vector<std::string> DisksWithoutIostats(const std::string& sysfs);

}  // namespace nvmeof
