// Where the pfc collector's numbers come from: a netdev's driver, ethtool statistics and DCB
// IEEE PFC, from the running kernel (SIOCETHTOOL, rtnetlink) or from `ethtool -S` style text
// fixtures, behind one interface so the collector runs on either.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "readers/dcb.h"
#include "readers/ethtool.h"

namespace nvmeof {

struct EthtoolStats {
  std::vector<EthtoolStat> stats;
  size_t malformed = 0;  // fixture lines that were not "name: value" (always 0 from the kernel)
};

// kAbsent: the netdev simply has no such data (no DCB on veth): no series, not an error.
// kFailed: it could not be read: counted as a skipped series.
enum class ReadStatus { kOk, kAbsent, kFailed };

class NetdevStatsSource {
 public:
  virtual ~NetdevStatsSource() = default;
  // ETHTOOL_GDRVINFO; nullopt if unreadable (netdev gone, EPERM, ...).
  virtual std::optional<EthtoolDriverInfo> Driver(const std::string& netdev) = 0;
  // ETHTOOL_GSTRINGS + ETHTOOL_GSTATS; nullopt if unreadable (incl. EOPNOTSUPP).
  virtual std::optional<EthtoolStats> Ethtool(const std::string& netdev) = 0;
  // DCB_CMD_IEEE_GET -> DCB_ATTR_IEEE_PFC.
  virtual ReadStatus Dcb(const std::string& netdev, IeeePfc* out) = 0;
  // Whether the netdev is still there, for telling a netdev removed during a scrape from one
  // that cannot be read. The kernel's name table says so before sysfs does: an unregistering
  // netdev leaves the table first. Fixture netdevs never go.
  virtual bool Present(const std::string& netdev) {
    static_cast<void>(netdev);
    return true;
  }
};

// SIOCETHTOOL and rtnetlink on the running kernel (the exporter's network namespace).
std::unique_ptr<NetdevStatsSource> NewKernelNetdevStatsSource();

// Text files, one directory per netdev:
//   DIR/<netdev>/stats    `ethtool -S <netdev>` output ("NIC statistics:\n     name: value")
//   DIR/<netdev>/driver   `ethtool -i <netdev>` output, or just the driver name
//   DIR/<netdev>/dcb_pfc  optional: "pfc_cap 8\npfc_en 0x08\nmbc 0\ndelay 0\n"
//                         "requests 0 0 0 1234 0 0 0 0\nindications 0 0 0 567 0 0 0 0"
//                         (no file: no DCB on that netdev)
std::unique_ptr<NetdevStatsSource> NewFixtureNetdevStatsSource(std::string dir);

// Parsers behind the fixture source, exposed for tests. `bad_lines` counts lines that are not
// "name: value" with a decimal value (those are dropped).
std::vector<EthtoolStat> ParseEthtoolStats(std::string_view text, size_t* bad_lines);
EthtoolDriverInfo ParseEthtoolDriver(std::string_view text);
bool ParseDcbPfc(std::string_view text, IeeePfc* out);

}  // namespace nvmeof
