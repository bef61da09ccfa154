// Driver info and statistics of a netdev through the SIOCETHTOOL ioctl: what `ethtool -i` and
// `ethtool -S` print. These "get" commands need no privileges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nvmeof {

struct EthtoolDriverInfo {
  std::string driver;  // "mlx5_core", "ice", "bnxt_en", "veth", "virtio_net"
  std::string version;
  std::string firmware_version;
  std::string bus_info;
};

struct EthtoolStat {
  std::string name;
  std::uint64_t value = 0;
};

// Every call returns 0 or an errno value: ENODEV (the netdev is gone), EOPNOTSUPP (the driver has
// no statistics), EPERM, EAGAIN (the driver's statistics count kept changing), E2BIG (more than
// kMaxStats statistics).
class EthtoolReader {
 public:
  // Issues one SIOCETHTOOL ioctl for `netdev` with ifr_data = `cmd`; returns 0 or an errno
  // value. The default opens a datagram socket per call; tests pass a fake driver.
  using IoctlFn = std::function<int(const std::string& netdev, void* cmd)>;

  // A bound on what we allocate for one netdev: mlx5 with 128 channels lists about 15,000.
  static constexpr std::uint32_t kMaxStats = 1u << 16;

  EthtoolReader();
  explicit EthtoolReader(IoctlFn ioctl);

  int DriverInfo(const std::string& netdev, EthtoolDriverInfo* out) const;
  // Names and values, in the driver's order. The count comes from ETHTOOL_GSSET_INFO and may
  // change before ETHTOOL_GSTRINGS / ETHTOOL_GSTATS (channels reconfigured, PFC toggled on mlx5):
  // a mismatch is retried, never read past the buffer.
  int Stats(const std::string& netdev, std::vector<EthtoolStat>* out) const;

 private:
  IoctlFn ioctl_;
};

// The real ioctl: an AF_INET datagram socket, or AF_NETLINK if the kernel has no IPv4 (as
// ethtool(8) does). Exposed for tests.
int SiocEthtool(const std::string& netdev, void* cmd);

// A writable area of `size` bytes that ends exactly at an inaccessible page. Kernels without the
// December 2025 fix to net/ethtool/ioctl.c ignore the length user space passes to
// ETHTOOL_GSTRINGS / ETHTOOL_GSTATS and copy as many entries as the driver has now (fixed kernels
// answer 0 entries on a mismatch). If that grew since we asked, the copy runs into the guard page
// and the ioctl fails with EFAULT instead of overwriting our heap.
class GuardedBuffer {
 public:
  // `size` must be a multiple of `align` (a power of two, at most 16) so the end lands on the page.
  GuardedBuffer(std::size_t size, std::size_t align);
  ~GuardedBuffer();
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  void* data() const { return data_; }  // nullptr if the mapping failed
  std::size_t size() const { return size_; }

 private:
  void* map_ = nullptr;
  std::size_t map_size_ = 0;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace nvmeof
