// Directories of one-number files (sysfs counters/, hw_counters/) that a collector reads on
// every scrape, with their files kept open between scrapes.
//
// Why: an RDMA port has 20-90 such files, and a scrape that opens, reads and closes each one
// spends most of its time in openat and close (tests/bench/README.md "Keep-alive and one
// connection"). Here each file is opened once and re-read with one pread at offset 0: sysfs
// (kernfs seq_file) shows an attribute afresh on every read from offset 0, so the value is as
// current as a new open's. The directory is kept open too and listed again on every read (a
// stat of its path, then a seek and getdents on the kept fd; a new fd when the path's inode
// changed), and each file is keyed by name and inode: a file that went away is closed, a new
// one is opened, and one whose inode changed (a device removed and re-created; a fixture tree
// rewritten by rename) is reopened. A read that fails on a kept fd (ENODEV once the device is
// gone) is retried once on a fresh open before the value counts as unreadable.
//
// Bounded: at most max_open_files descriptors stay open per instance, directories included
// (the process's own limit is RLIMIT_NOFILE, 1,024 under systemd by default); past that, files
// are read with open, read and close as before. A directory's own fd is always kept: a port has
// two. One instance per collector; not thread-safe (a collector runs one scrape at a time:
// exporter/scraper.h).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectors/base/fd.h"

namespace nvmeof {

class CounterDirs {
 public:
  static constexpr size_t kMaxOpenFiles = 512;

  explicit CounterDirs(size_t max_open_files = kMaxOpenFiles) : max_open_(max_open_files) {}
  CounterDirs(const CounterDirs&) = delete;
  CounterDirs& operator=(const CounterDirs&) = delete;

  using Entries = std::vector<std::pair<std::string, std::optional<std::uint64_t>>>;

  // Every entry of the directory but "." and "..", sorted by name, with its value as ReadU64
  // reads it (nullopt: unreadable or not one unsigned decimal number); nullopt if the path is
  // not a directory that can be opened (and its files are closed).
  std::optional<Entries> Read(const std::string& path);

  // Closes the files of every directory not read since the last call: call once per scrape,
  // after the reads, so a device that went away holds no descriptors.
  void Sweep();

  size_t open_files() const { return open_; }

 private:
  struct File {
    ino_t ino = 0;
    UniqueFd fd;
  };
  struct Dir {
    ino_t ino = 0;
    UniqueFd fd;
    std::map<std::string, File> files;
    bool read = false;  // since the last Sweep
  };
  // The directory's entries but "." and ".." with their inodes, sorted; false if unreadable.
  bool List(Dir& dir, std::vector<std::pair<std::string, ino_t>>* names);
  void Close(Dir& dir);  // its files and its own fd

  std::map<std::string, Dir> dirs_;
  std::vector<char> listing_;  // getdents64's buffer, kept between reads
  size_t max_open_;
  size_t open_ = 0;
};

}  // namespace nvmeof
