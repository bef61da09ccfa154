// The records of a recording as the kernel wrote them, kept until it stops (`record`,
// profile/record.cc). Formatting a JSON line costs as much as all the programs do per record
// (tests/bench/README.md), spent on the measured machine while it runs. So the reader only
// appends each record here, to an unnamed file beside the output, and the JSON Lines are
// written once the recording has stopped and its programs are detached.
//
// A kernel record is 568 bytes, 480 of them its three names (disk, subsystem NQN, host NQN),
// which repeat: a node has a few controllers. So the spool keeps each name once, with an id, and
// a record as its 84 bytes before the names plus three ids: 97 bytes. Its stream, in host order
// (it never leaves the process):
//   'n', u32 id, u16 length, the name's bytes    a name, before the first record that uses it
//   'r', the record up to its names, u32 x 3     disk, subsystem NQN and host NQN ids
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/fd.h"
#include "bpf/record_maps.h"

namespace nvmeof::profile {

class RecordSpool {
 public:
  // An unnamed file in `dir` (O_TMPFILE; else a named one, unlinked at once). "" or why not.
  std::string Open(const std::string& dir);
  // Open beside the file `output`, else (a FIFO or /dev/stdout in a directory it cannot write)
  // in $TMPDIR or /tmp. "" or why neither.
  std::string OpenBeside(const std::string& output);

  // After Open succeeded. False once a write failed; error() says why.
  bool Add(const nvmeof_record& r);

  // Hands every record added, in order, to fn (names as the kernel wrote them, NUL-padded).
  // "" or why not.
  std::string ForEach(const std::function<void(const nvmeof_record&)>& fn);

  std::string error() const;
  std::uint64_t bytes() const { return bytes_; }  // written to the file so far

 private:
  static constexpr size_t kFlushAt = 1 << 20;  // bytes per write()
  // More than one Add puts: a record (97 bytes) and its three names (at most 3 x 7 + 480).
  static constexpr size_t kSlack = 2 * sizeof(nvmeof_record);
  static constexpr size_t kRecent = 16;  // names compared before a new id is given

  // The id of a record's name `field` (0 disk, 1 subsystem NQN, 2 host NQN).
  std::uint32_t Intern(int field, const char* name, size_t size);
  void Put(const void* p, size_t n);
  bool Flush();

  struct Name {
    std::string text;
    std::uint32_t id;
  };
  UniqueFd fd_;
  std::unique_ptr<char[]> buf_;  // kFlushAt + kSlack bytes
  size_t used_ = 0;
  std::vector<Name> recent_[3];  // per field, most recently used first
  std::uint32_t next_id_ = 0;
  std::uint64_t bytes_ = 0;
  int error_ = 0;
};

}  // namespace nvmeof::profile
