#include "readers/ethtool.h"

#include <linux/ethtool.h>
#include <linux/netlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace nvmeof {
namespace {

// Strings from the kernel are fixed-size arrays that a driver may fill without a terminator.
std::string FixedString(const char* s, std::size_t n) { return std::string(s, ::strnlen(s, n)); }

// Retries when the statistics count changes between the calls; a device being reconfigured
// settles within a scrape or is skipped for this one.
constexpr int kAttempts = 3;

}  // namespace

int SiocEthtool(const std::string& netdev, void* cmd) {
  if (netdev.empty() || netdev.size() >= IFNAMSIZ) return ENODEV;
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
  if (fd < 0) return errno;
  struct ifreq ifr;
  std::memset(&ifr, 0, sizeof ifr);
  std::memcpy(ifr.ifr_name, netdev.data(), netdev.size());
  ifr.ifr_data = static_cast<char*>(cmd);
  int rc = ::ioctl(fd, SIOCETHTOOL, &ifr);
  int err = rc < 0 ? errno : 0;
  ::close(fd);
  return err;
}

GuardedBuffer::GuardedBuffer(std::size_t size, std::size_t align) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  if (size == 0 || align == 0 || (align & (align - 1)) != 0 || align > 16 || size % align != 0) {
    return;
  }
  const std::size_t body = (size + page - 1) / page * page;
  void* map =
      ::mmap(nullptr, body + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return;
  char* base = static_cast<char*>(map);
  if (::mprotect(base + body, page, PROT_NONE) != 0) {
    ::munmap(map, body + page);
    return;
  }
  map_ = map;
  map_size_ = body + page;
  data_ = base + body - size;
  size_ = size;
}

GuardedBuffer::~GuardedBuffer() {
  if (map_) ::munmap(map_, map_size_);
}

EthtoolReader::EthtoolReader() : ioctl_(SiocEthtool) {}
EthtoolReader::EthtoolReader(IoctlFn ioctl) : ioctl_(std::move(ioctl)) {}

int EthtoolReader::DriverInfo(const std::string& netdev, EthtoolDriverInfo* out) const {
  struct ethtool_drvinfo info;
  std::memset(&info, 0, sizeof info);
  info.cmd = ETHTOOL_GDRVINFO;
  if (int err = ioctl_(netdev, &info)) return err;
  out->driver = FixedString(info.driver, sizeof info.driver);
  out->version = FixedString(info.version, sizeof info.version);
  out->firmware_version = FixedString(info.fw_version, sizeof info.fw_version);
  out->bus_info = FixedString(info.bus_info, sizeof info.bus_info);
  return 0;
}

int EthtoolReader::Stats(const std::string& netdev, std::vector<EthtoolStat>* out) const {
  out->clear();
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    // ETHTOOL_GSSET_INFO: the kernel only clears bits of the mask we pass and writes one u32 per
    // remaining bit, so room for one is enough.
    alignas(struct ethtool_sset_info) unsigned char
        sset_buf[sizeof(struct ethtool_sset_info) + sizeof(std::uint32_t)] = {};
    auto* sset = reinterpret_cast<struct ethtool_sset_info*>(sset_buf);
    sset->cmd = ETHTOOL_GSSET_INFO;
    sset->sset_mask = 1ULL << ETH_SS_STATS;
    if (int err = ioctl_(netdev, sset)) return err;
    if (!(sset->sset_mask & (1ULL << ETH_SS_STATS))) return EOPNOTSUPP;
    const std::uint32_t n = sset->data[0];
    if (n == 0) return 0;
    if (n > kMaxStats) return E2BIG;

    GuardedBuffer strings(sizeof(struct ethtool_gstrings) + std::size_t{n} * ETH_GSTRING_LEN,
                          alignof(struct ethtool_gstrings));
    GuardedBuffer stats(sizeof(struct ethtool_stats) + std::size_t{n} * sizeof(std::uint64_t),
                        alignof(struct ethtool_stats));
    if (!strings.data() || !stats.data()) return ENOMEM;

    auto* gs = static_cast<struct ethtool_gstrings*>(strings.data());
    gs->cmd = ETHTOOL_GSTRINGS;
    gs->string_set = ETH_SS_STATS;
    gs->len = n;  // fixed kernels answer 0 when the count no longer matches
    int err = ioctl_(netdev, gs);
    if (err == EFAULT) continue;  // the count grew: the kernel ran into the guard page
    if (err) return err;
    if (gs->len != n) continue;

    auto* st = static_cast<struct ethtool_stats*>(stats.data());
    st->cmd = ETHTOOL_GSTATS;
    st->n_stats = n;
    err = ioctl_(netdev, st);
    if (err == EFAULT) continue;
    if (err) return err;
    if (st->n_stats != n) continue;  // names and values would no longer line up

    out->reserve(n);
    const char* names = reinterpret_cast<const char*>(gs->data);
    for (std::uint32_t i = 0; i < n; ++i) {
      out->push_back(
          {FixedString(names + std::size_t{i} * ETH_GSTRING_LEN, ETH_GSTRING_LEN), st->data[i]});
    }
    return 0;
  }
  return EAGAIN;
}

}  // namespace nvmeof
