#include "loader/flight_reader.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/files.h"
#include "base/log.h"
#include "loader/block.h"
#include "loader/libbpf.h"
#include "loader/nvmeof.h"

namespace nvmeof {

FlightReader::FlightReader(int ring_fd, int names_fd, int hostnqns_fd, std::string sysfs,
                           std::shared_ptr<FlightRecorder> recorder)
    : names_fd_(names_fd),
      hostnqns_fd_(hostnqns_fd),
      sysfs_(std::move(sysfs)),
      recorder_(std::move(recorder)) {
  ring_ = ring_buffer__new(ring_fd, &FlightReader::OnRecord, this, nullptr);
  if (!ring_) {
    LogWarn("flight recorder: cannot read the kernel's ring buffer", Kv("err", ErrnoName(errno)));
    return;
  }
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      // The wait ends early only when the kernel wakes it; the consume reads every record,
      // also those written without a wakeup (which epoll does not report).
      epoll_event event{};
      int n = epoll_wait(ring_buffer__epoll_fd(ring_), &event, 1, 1000);
      if (n >= 0 || errno == EINTR) {
        std::lock_guard<std::mutex> lock(mu_);  // identities_, once per batch
        n = ring_buffer__consume(ring_);
      } else {
        n = -errno;
      }
      if (n < 0) {
        LogWarn("flight recorder: reading the kernel's ring buffer failed",
                Kv("err", ErrnoName(-n)));
        return;
      }
      Flush();
    }
  });
}

FlightReader::~FlightReader() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (ring_) ring_buffer__free(ring_);
}

void FlightReader::Forget(const std::vector<std::uint64_t>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto id : ids) identities_.erase(id);
}

// The records the last poll read, into the recorder in one go.
void FlightReader::Flush() {
  if (batch_.empty()) return;
  recorder_->Add(std::move(batch_));
  batch_.clear();
  offset_known_ = false;
}

// CLOCK_REALTIME - CLOCK_MONOTONIC, read once per poll.
std::int64_t FlightReader::RealtimeOffset() {
  if (offset_known_) return realtime_offset_;
  timespec mono{}, real{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  auto ns = [](const timespec& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
  };
  realtime_offset_ = ns(real) - ns(mono);
  offset_known_ = true;
  return realtime_offset_;
}

int FlightReader::OnRecord(void* ctx, void* data, size_t size) {
  if (size < sizeof(nvmeof_flight_record)) return 0;
  nvmeof_flight_record r;
  std::memcpy(&r, data, sizeof r);
  static_cast<FlightReader*>(ctx)->Add(r);
  return 0;
}

void FlightReader::Add(const nvmeof_flight_record& r) {
  FlightEntry e;
  e.role = r.role;
  std::uint64_t first = 0, last = 0;
  for (int i = 0; i < NVMEOF_POINTS; ++i) {
    e.ts[i] = r.ts[i];
    if (!r.ts[i]) continue;
    if (!first) first = r.ts[i];
    last = std::max<std::uint64_t>(last, r.ts[i]);
  }
  if (!last) return;
  e.e2e_ns = last - first;
  e.time_ns = static_cast<std::uint64_t>(static_cast<std::int64_t>(last) + RealtimeOffset());
  e.slba = r.slba;
  e.size = r.bytes;
  e.qid = r.qid;
  e.cid = r.cid;
  e.cntlid = r.cntlid;
  e.nlb = r.nlb;
  e.op = BlockOpName(nvme_op(r.opcode)).data();
  e.identity = IdentityOf(r);  // under mu_ (the reader thread's consume)
  batch_.push_back(std::move(e));
}

std::string FlightReader::Name(int fd, std::uint64_t key) {
  char name[NVMEOF_NQN_SIZE] = {};
  if (bpf_map_lookup_elem(fd, &key, name) != 0) return {};
  return std::string(name, strnlen(name, sizeof name));
}

std::shared_ptr<const FlightIdentity> FlightReader::IdentityOf(const nvmeof_flight_record& r) {
  // Keyed by the series and, on a target, the controller: both are kernel addresses.
  const std::uint64_t key = r.series ^ (r.ctrl * 0x9E3779B97F4A7C15ULL) ^ r.role;
  if (auto it = identities_.find(key); it != identities_.end()) return it->second;
  FlightIdentity id;
  const std::string name = Name(names_fd_, nvmeof_name_key(r.series, r.role));
  if (r.role == NVMEOF_ROLE_HOST) {
    id.device = name;
    id.controller = ControllerOfDisk(name);
    if (!id.controller.empty()) {
      const std::string dir = sysfs_ + "/class/nvme/" + id.controller + "/";
      id.transport = std::string(TrimAttribute(ReadFileOr(dir + "transport")));
      id.subsys = std::string(TrimAttribute(ReadFileOr(dir + "subsysnqn")));
      id.hostnqn = std::string(TrimAttribute(ReadFileOr(dir + "hostnqn")));
    }
  } else {
    id.subsys = name;
    id.hostnqn = Name(hostnqns_fd_, r.ctrl);
    id.transport = std::string(NvmeofTransportName(r.trtype));
  }
  auto shared = recorder_->Intern(std::move(id));
  // A name not written yet (the kernel writes it at the series' first command) is looked up
  // again at the next record.
  if (!name.empty()) identities_.emplace(key, shared);
  return shared;
}

void ShrinkFlightRing(bpf_object* obj) {
  if (bpf_map* ring = bpf_object__find_map_by_name(obj, "nv_flight"))
    bpf_map__set_max_entries(ring, static_cast<std::uint32_t>(sysconf(_SC_PAGESIZE)));
}

}  // namespace nvmeof
