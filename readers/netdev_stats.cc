#include "readers/netdev_stats.h"

#include <net/if.h>

#include <cerrno>
#include <cstdint>

#include "base/fd.h"
#include "base/files.h"
#include "base/log.h"

namespace nvmeof {
namespace {

class KernelSource : public NetdevStatsSource {
 public:
  std::optional<EthtoolDriverInfo> Driver(const std::string& netdev) override {
    EthtoolDriverInfo info;
    if (int err = reader_.DriverInfo(netdev, &info)) {
      LogDebug("ETHTOOL_GDRVINFO failed", Kv("netdev", netdev) + " " + Kv("err", ErrnoName(err)));
      return std::nullopt;
    }
    return info;
  }

  std::optional<EthtoolStats> Ethtool(const std::string& netdev) override {
    EthtoolStats stats;
    if (int err = reader_.Stats(netdev, &stats.stats)) {
      LogDebug("ethtool statistics failed", Kv("netdev", netdev) + " " + Kv("err", ErrnoName(err)));
      return std::nullopt;
    }
    return stats;
  }

  bool Present(const std::string& netdev) override {
    return if_nametoindex(netdev.c_str()) != 0;  // the name table (SIOCGIFINDEX)
  }

  ReadStatus Dcb(const std::string& netdev, IeeePfc* out) override {
    const int err = ReadIeeePfc(netdev, out);
    if (err == 0) return ReadStatus::kOk;
    if (err == EOPNOTSUPP || err == ENODEV || err == ENOENT) return ReadStatus::kAbsent;
    LogDebug("DCB_CMD_IEEE_GET failed", Kv("netdev", netdev) + " " + Kv("err", ErrnoName(err)));
    return ReadStatus::kFailed;
  }

 private:
  EthtoolReader reader_;
};

// Whole file, bounded (a big mlx5 `ethtool -S` is a few hundred KiB).
std::optional<std::string> ReadText(const std::string& path) { return ReadFile(path, 16u << 20); }

class FixtureSource : public NetdevStatsSource {
 public:
  explicit FixtureSource(std::string dir) : dir_(std::move(dir)) {}

  std::optional<EthtoolDriverInfo> Driver(const std::string& netdev) override {
    auto text = ReadText(dir_ + "/" + netdev + "/driver");
    if (!text) return std::nullopt;
    auto info = ParseEthtoolDriver(*text);
    if (info.driver.empty()) return std::nullopt;
    return info;
  }

  std::optional<EthtoolStats> Ethtool(const std::string& netdev) override {
    auto text = ReadText(dir_ + "/" + netdev + "/stats");
    if (!text) return std::nullopt;
    EthtoolStats stats;
    stats.stats = ParseEthtoolStats(*text, &stats.malformed);
    return stats;
  }

  ReadStatus Dcb(const std::string& netdev, IeeePfc* out) override {
    const std::string path = dir_ + "/" + netdev + "/dcb_pfc";
    if (!Exists(path)) return ReadStatus::kAbsent;
    auto text = ReadText(path);
    if (!text || !ParseDcbPfc(*text, out)) return ReadStatus::kFailed;
    return ReadStatus::kOk;
  }

 private:
  std::string dir_;
};

// ---- Text parsing helpers --------------------------------------------------------------------

std::string_view Trim(std::string_view s) {
  const char* ws = " \t\r\n";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    auto nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

// Decimal, or hexadecimal with 0x (pfc_en is usually written as a mask).
std::optional<std::uint64_t> ParseNumber(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    std::uint64_t v = 0;
    for (char c : s.substr(2)) {
      int d;
      if (c >= '0' && c <= '9') {
        d = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        d = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        d = c - 'A' + 10;
      } else {
        return std::nullopt;
      }
      if (v > (UINT64_MAX >> 4)) return std::nullopt;
      v = v << 4 | static_cast<std::uint64_t>(d);
    }
    return v;
  }
  return ParseU64(s);
}

}  // namespace

std::vector<EthtoolStat> ParseEthtoolStats(std::string_view text, size_t* bad_lines) {
  std::vector<EthtoolStat> stats;
  size_t bad = 0;
  for (std::string_view line : Lines(text)) {
    line = Trim(line);
    if (line.empty()) continue;
    // The header ("NIC statistics:"); newer ethtool may print other group headers the same way.
    if (line.back() == ':' && line.find(": ") == std::string_view::npos) continue;
    // Split at the last ": ": bnxt_en names contain one ("[0]: rx_ucast_packets").
    const auto colon = line.rfind(": ");
    if (colon == std::string_view::npos || colon == 0) {
      ++bad;
      continue;
    }
    auto value = ParseU64(Trim(line.substr(colon + 2)));
    if (!value) {
      ++bad;
      continue;
    }
    stats.push_back({std::string(line.substr(0, colon)), *value});
  }
  if (bad_lines) *bad_lines = bad;
  return stats;
}

EthtoolDriverInfo ParseEthtoolDriver(std::string_view text) {
  EthtoolDriverInfo info;
  bool keyed = false;
  for (std::string_view line : Lines(text)) {
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    keyed = true;
    const auto key = Trim(line.substr(0, colon));
    const auto value = std::string(Trim(line.substr(colon + 1)));
    if (key == "driver") info.driver = value;
    if (key == "version") info.version = value;
    if (key == "firmware-version") info.firmware_version = value;
    if (key == "bus-info") info.bus_info = value;
  }
  if (!keyed) {
    const auto name = Trim(text);
    if (name.find_first_of(" \t\n") == std::string_view::npos) info.driver = std::string(name);
  }
  return info;
}

bool ParseDcbPfc(std::string_view text, IeeePfc* out) {
  IeeePfc pfc;
  bool have_en = false, have_req = false, have_ind = false;
  for (std::string_view line : Lines(text)) {
    line = Trim(line);
    if (line.empty()) continue;
    std::vector<std::string_view> words;
    size_t pos = 0;
    while (pos < line.size()) {
      const auto b = line.find_first_not_of(" \t", pos);
      if (b == std::string_view::npos) break;
      auto e = line.find_first_of(" \t", b);
      if (e == std::string_view::npos) e = line.size();
      words.push_back(line.substr(b, e - b));
      pos = e;
    }
    const auto key = words[0];
    if (key == "requests" || key == "indications") {
      if (words.size() != 9) return false;
      auto& dst = key == "requests" ? pfc.requests : pfc.indications;
      for (int i = 0; i < 8; ++i) {
        auto v = ParseNumber(words[i + 1]);
        if (!v) return false;
        dst[i] = *v;
      }
      (key == "requests" ? have_req : have_ind) = true;
      continue;
    }
    if (words.size() != 2) return false;
    auto v = ParseNumber(words[1]);
    if (!v) return false;
    if (key == "pfc_en" && *v <= 0xff) {
      pfc.pfc_en = static_cast<std::uint8_t>(*v);
      have_en = true;
    } else if (key == "pfc_cap" && *v <= 0xff) {
      pfc.pfc_cap = static_cast<std::uint8_t>(*v);
    } else if (key == "mbc" && *v <= 0xff) {
      pfc.mbc = static_cast<std::uint8_t>(*v);
    } else if (key == "delay" && *v <= 0xffff) {
      pfc.delay = static_cast<std::uint16_t>(*v);
    } else {
      return false;
    }
  }
  if (!have_en || !have_req || !have_ind) return false;
  *out = pfc;
  return true;
}

std::unique_ptr<NetdevStatsSource> NewKernelNetdevStatsSource() {
  return std::make_unique<KernelSource>();
}

std::unique_ptr<NetdevStatsSource> NewFixtureNetdevStatsSource(std::string dir) {
  return std::make_unique<FixtureSource>(std::move(dir));
}

}  // namespace nvmeof
