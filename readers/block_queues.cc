#include "readers/block_queues.h"

#include "base/files.h"

namespace nvmeof {

std::vector<std::string> DisksWithoutIostats(const std::string& sysfs) {
  std::vector<std::string> out;
  for (const auto& disk : ListDir(sysfs + "/block")) {
    const std::string dir = sysfs + "/block/" + disk;
    if (IsDir(dir + "/mq") && ReadU64(dir + "/queue/iostats") == 0u) out.push_back(disk);
  }
  return out;
}

}  // namespace nvmeof
