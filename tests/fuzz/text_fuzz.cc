// libFuzzer target for the text parsers of procfs, sysfs and `ethtool` style files: the input is
// one file's contents, given to every parser (each must accept any bytes).
// Seeds: tests/fixtures/procfs/net/*, tests/fixtures/ethtool/*/* (tests/fuzz/run.sh).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/files.h"
#include "base/label_value.h"
#include "readers/netdev_stats.h"
#include "readers/proc_net.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)nvmeof::ParseU64(text);
  nvmeof::NetStatTable table;
  nvmeof::ParseNetStatPairs(text, &table);
  nvmeof::ParseSnmp6(text, &table);
  std::size_t bad = 0;
  (void)nvmeof::ParseEthtoolStats(text, &bad);
  (void)nvmeof::ParseEthtoolDriver(text);
  nvmeof::IeeePfc pfc;
  (void)nvmeof::ParseDcbPfc(text, &pfc);
  std::string label = text;
  (void)nvmeof::SanitizeLabelValue(&label);
  (void)nvmeof::IsValidLabelName(text);
  (void)nvmeof::IsValidMetricName(text);
  return 0;
}
