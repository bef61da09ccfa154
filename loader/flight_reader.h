// Moves the kernel's flight records (bpf/nvmeof_maps.h nvmeof_flight_record, ring buffer
// nv_flight) into the flight recorder (loader/flight_recorder.h) every second, sooner when the
// kernel's ring is half full, on a thread of its own: a scrape never waits for it, and a hung
// collector does not stop it. Names are looked up once per series and controller (nv_names,
// nv_hostnqns, the host controller's sysfs) and shared by every record of theirs. Built with
// NVMEOF_BPF only (libbpf).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bpf/nvmeof_maps.h"
#include "loader/flight_recorder.h"

struct bpf_object;
struct ring_buffer;

namespace nvmeof {

class FlightReader {
 public:
  // The fds of the NVMe-oF object's nv_flight, nv_names and nv_hostnqns; sysfs: the root the
  // host controllers' attributes are read under.
  FlightReader(int ring_fd, int names_fd, int hostnqns_fd, std::string sysfs,
               std::shared_ptr<FlightRecorder> recorder);
  ~FlightReader();  // stops the thread (within its second's wait)
  FlightReader(const FlightReader&) = delete;
  FlightReader& operator=(const FlightReader&) = delete;

  // Series ids the collector dropped (disks and subsystems gone): their addresses may be reused.
  void Forget(const std::vector<std::uint64_t>& ids);

 private:
  static int OnRecord(void* ctx, void* data, size_t size);
  void Add(const nvmeof_flight_record& r);
  void Flush();
  std::int64_t RealtimeOffset();
  std::string Name(int fd, std::uint64_t key);
  std::shared_ptr<const FlightIdentity> IdentityOf(const nvmeof_flight_record& r);

  const int names_fd_, hostnqns_fd_;
  const std::string sysfs_;
  const std::shared_ptr<FlightRecorder> recorder_;
  ring_buffer* ring_ = nullptr;
  std::vector<FlightEntry> batch_;  // the reader thread's
  std::int64_t realtime_offset_ = 0;
  bool offset_known_ = false;
  std::mutex mu_;  // identities_ (the reader thread and Forget)
  std::unordered_map<std::uint64_t, std::shared_ptr<const FlightIdentity>> identities_;
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: started after everything above
};

// The flight records' ring buffer (nv_flight) at its least, a page: for objects that write no
// records (the flight recorder off, a block object that does not end NVMe-oF commands, trials).
void ShrinkFlightRing(bpf_object* obj);

}  // namespace nvmeof
