// The record file of `record`/`report` (docs/profiling.md): JSON Lines, version 1.
//
//   line 1   {"format":"nvmeof-record","version":1,"hostname":..,"kernel":..,"role":"host",
//             "mechanism":"fentry","sample_every":8,"clock":"CLOCK_MONOTONIC"}
//   then     one object per sampled command (Record below; "ts" holds every point's timestamp in
//            ns of the header's clock, 0 = the command did not pass that point)
//   last     optionally {"end":true,"records":N,"lost":L,"commands":C}: L records the kernel
//            dropped (ring buffer or in-flight table full), C (optional) every command of the
//            file's role that completed during the recording, sampled or not. Readers ignore
//            keys they do not know, so optional keys need no version bump.
//
// Pure userspace: no BPF, no I/O beyond the stream it is given. JSON through nlohmann/json
// (Debian's nlohmann-json3-dev); the reader never throws.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "bpf/nvmeof_maps.h"

namespace nvmeof {

inline constexpr const char* kRecordFormat = "nvmeof-record";
inline constexpr int kRecordVersion = 1;

struct RecordHeader {
  int version = kRecordVersion;
  std::string hostname;
  std::string kernel;
  std::string role = "host";  // "host" or "target": what the file's commands are
  std::string mechanism;      // attach mechanism of the frame hooks (fentry, kprobe, ...)
  std::uint64_t sample_every = 1;
  std::string clock = "CLOCK_MONOTONIC";
};

struct Record {
  std::uint8_t role = NVMEOF_ROLE_HOST;  // enum nvmeof_role
  std::string transport;                 // rdma, tcp, pcie
  std::string op;                        // read, write, flush, discard, other
  std::uint64_t size = 0;                // bytes
  std::uint32_t qid = 0;
  std::uint32_t cid = 0;
  std::uint32_t cntlid = 0;  // 0 = not known
  std::string subsys;        // subsystem NQN ("" = not known)
  std::string hostnqn;       // "" = not known
  std::string device;        // host: disk name; target: "" (the subsystem names it)
  std::uint64_t slba = 0;
  std::uint32_t nlb = 0;          // number of logical blocks, 0's based as on the wire
  std::vector<std::uint64_t> ts;  // per point (host: NVMEOF_HP_*, target: NVMEOF_TP_*), 0 = none
  // Optional (the flight recorder's, GET /api/v1/commands): the wall clock (CLOCK_REALTIME ns)
  // of the command's end, and its handle on its node (flight_recorder.h CommandRef). Written
  // only when set.
  std::uint64_t time_ns = 0;
  std::string ref;
};

struct RecordFile {
  RecordHeader header;
  std::vector<Record> records;
  bool has_end = false;
  std::uint64_t lost = 0;      // from the end line
  std::uint64_t commands = 0;  // from the end line; 0 = not given
};

// Writes the header line / one record line / the end line (each ends in '\n').
void WriteHeader(const RecordHeader& header, std::ostream& out);
void WriteRecord(const Record& record, std::ostream& out);
void WriteEnd(std::uint64_t records, std::uint64_t lost, std::ostream& out);
void WriteEnd(std::uint64_t records, std::uint64_t lost, std::ostream& out, std::uint64_t commands);

// Reads a whole file. On error returns false and sets *error to one line naming the line number
// and what is wrong ("line 3: truncated record (no newline at end of file)", "version 2 is not
// supported (this build reads version 1)", ...).
bool ReadRecords(std::istream& in, RecordFile* file, std::string* error);
bool ReadRecordFile(const std::string& path, RecordFile* file, std::string* error);

// One command's end to end on its node: last passed point - first passed point (0 if < 2).
std::uint64_t EndToEnd(const Record& record);

}  // namespace nvmeof
