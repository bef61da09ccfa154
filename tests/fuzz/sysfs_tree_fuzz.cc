// libFuzzer target for what the rdma, nvme_host and nvmet collectors read from sysfs and
// configfs (numbers, "N/A (no PMA)", GIDs, rates, states, addresses, ANA states): their parsers
// are private, so the input is written out as a scratch tree and the collectors scrape it.
//
// Input: records of
//   u8 kind (bit 0: symlink), u8 path length, path (relative, no ".."; "sys/..." is the sysfs
//   root, "cfg/..." the configfs root), u16 little-endian length, contents (a symlink's target,
//   which must stay inside the tree).
// Seeds: one per device of tests/fixtures/sysfs and configfs (tests/fuzz/seeds.py).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "base/log.h"
#include "base/metric_sink.h"
#include "collectors/registry.h"

namespace fs = std::filesystem;

namespace {

// Lexically inside the tree: relative, and no component climbs out.
bool Inside(const fs::path& p) {
  if (p.empty() || p.is_absolute()) return false;
  const fs::path n = p.lexically_normal();
  return !n.empty() && *n.begin() != ".." && n != ".";
}

void WriteTree(const std::string& root, const std::uint8_t* data, std::size_t size) {
  std::size_t at = 0;
  int records = 0;
  while (at + 2 <= size && records++ < 256) {
    const std::uint8_t kind = data[at];
    const std::size_t plen = data[at + 1];
    at += 2;
    if (at + plen + 2 > size) return;
    const std::string rel(reinterpret_cast<const char*>(data + at), plen);
    at += plen;
    std::uint16_t clen;
    std::memcpy(&clen, data + at, 2);
    at += 2;
    clen = static_cast<std::uint16_t>(std::min<std::size_t>(clen, size - at));
    const std::string contents(reinterpret_cast<const char*>(data + at), clen);
    at += clen;
    if (rel.find('\0') != std::string::npos || !Inside(rel)) continue;
    const fs::path path = fs::path(root) / fs::path(rel).lexically_normal();
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (kind & 1) {
      if (contents.find('\0') != std::string::npos) continue;
      if (!Inside(fs::path(rel).parent_path() / contents)) continue;
      fs::create_symlink(contents, path, ec);
    } else {
      std::ofstream(path, std::ios::binary) << contents;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string root = [] {
    nvmeof::SetLogLevel(nvmeof::LogLevel::kError);
    const char* base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(base) + "/nvmeof-sysfs-fuzz." + std::to_string(::getpid());
  }();
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root + "/sys", ec);
  fs::create_directories(root + "/cfg", ec);
  WriteTree(root, data, size);

  nvmeof::CollectorOptions options;
  options.paths.sysfs = root + "/sys";
  options.paths.configfs = root + "/cfg";
  options.paths.procfs = root + "/proc";
  for (auto make :
       {nvmeof::NewRdmaCollector, nvmeof::NewNvmeHostCollector, nvmeof::NewNvmetCollector}) {
    nvmeof::MetricSink sink;
    (void)make(options)->Collect(sink);
  }
  return 0;
}
