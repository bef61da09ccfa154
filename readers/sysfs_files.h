// The sysfs files a collector reads on every scrape (attributes, directories of counter files,
// directory listings), kept open and listed once between scrapes.
//
// Why: an RDMA port has 20-90 counter files and a device a dozen attributes, and a scrape that
// opens, reads and closes each one, and lists each directory again, spends most of its time in
// openat, getdents64 and close (tests/bench/README.md "Keep-alive and one connection", "Files
// kept open and listed once"). Here each file is opened once and re-read with one pread at
// offset 0: sysfs (kernfs seq_file) shows an attribute afresh on every read from offset 0, so
// the value is as current as a new open's.
//
// A directory is looked at (one stat) once per scrape, on its first use after Sweep. Its
// listing and kept files are trusted while its inode, mtime and ctime stay the same, the listing
// was taken more than `racy` after those times (a change within the filesystem's timestamp
// granularity of the listing could leave them unchanged: git's "racy" rule), and for at most
// `max_age`: sysfs (kernfs) does not always move a directory's mtime when an entry is added, so
// an entry added to a directory the kernel already showed is seen within max_age. List, which
// callers use for the entries that come and go (devices, ports), lists afresh every scrape.
// Else it is listed again (an lseek and getdents64 on its kept fd; a new fd when its inode
// changed), and a file that went away is closed, a new one opened, and one whose inode changed (a
// device removed and re-created; a fixture tree rewritten by rename) reopened. A file written in
// place keeps its inode and is read afresh anyway. A read that fails on a kept fd (ENODEV once the
// device is gone) is retried once on a fresh open before the value counts as unreadable.
//
// Bounded: at most max_open_files descriptors stay open per instance, directories included
// (the process's own limit is RLIMIT_NOFILE, 1,024 under systemd by default); past that, files
// are read with open, read and close each time. A directory's own fd is always kept. One
// instance per collector; not thread-safe (a collector runs one scrape at a time:
// exporter/scraper.h).
#pragma once

#include <sys/types.h>
#include <time.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/fd.h"

namespace nvmeof {

class SysfsFiles {
 public:
  static constexpr size_t kMaxOpenFiles = 512;
  static constexpr std::chrono::nanoseconds kRacy = std::chrono::seconds(2);
  static constexpr std::chrono::nanoseconds kMaxAge = std::chrono::seconds(30);

  explicit SysfsFiles(size_t max_open_files = kMaxOpenFiles, std::chrono::nanoseconds racy = kRacy,
                      std::chrono::nanoseconds max_age = kMaxAge)
      : max_open_(max_open_files), racy_(racy), max_age_(max_age) {}
  SysfsFiles(const SysfsFiles&) = delete;
  SysfsFiles& operator=(const SysfsFiles&) = delete;

  // A counter file: its name, and its value as ReadU64 reads it (nullopt: unreadable or not one
  // unsigned decimal number). The name is this object's: valid until the next call for the same
  // directory, or Sweep.
  struct Counter {
    std::string_view name;
    std::optional<std::uint64_t> value;
  };
  using Counters = std::vector<Counter>;

  // Every entry of directory `dir` but "." and "..", sorted by name, read as a counter; nullopt
  // if `dir` is not a directory that can be opened (and its files are closed).
  std::optional<Counters> ReadCounters(const std::string& dir);

  // The entry names of `dir` as ListDir gives them, listed afresh: sorted, without "." and "..";
  // empty if it is not a directory that can be opened.
  std::vector<std::string> List(const std::string& dir);

  // Whether `dir` is a directory that can be opened.
  bool HasDir(const std::string& dir) { return Look(dir) != nullptr; }

  // The file `name` in `dir` as ReadFile(dir + "/" + name) reads it: its text without trailing
  // whitespace; nullopt if absent, unreadable or over 64 KiB. A name the kept listing does not
  // have is opened all the same (and not kept): an entry added since is not missed.
  std::optional<std::string> ReadAttribute(const std::string& dir, std::string_view name);

  // Ends a scrape: closes the files of every directory not used since the last call, so a
  // device that went away holds no descriptors; the next use of each directory looks at it
  // again. Call once per scrape, after the reads.
  void Sweep();

  size_t open_files() const { return open_; }
  // Directory listings taken so far (the first look at each directory, and each change).
  size_t listings() const { return listings_; }

 private:
  struct File {
    std::string name;
    ino_t ino = 0;
    UniqueFd fd;
  };
  struct Dir {
    UniqueFd fd;
    ino_t ino = 0;
    timespec mtime{}, ctime{};
    bool trusted = false;      // the stat above vouches for `files`
    std::vector<File> files;   // the listing, sorted by name; fds kept as read
    std::uint64_t looked = 0;  // the scrape (Sweep count + 1) of the last look
    std::uint64_t listed = 0;  // the scrape of the last listing
    std::chrono::steady_clock::time_point listed_at;
  };
  // The directory at `path`, looked at once in this scrape (listed again if it changed, or if
  // `fresh` and not yet listed in this scrape), or nullptr if it is not a directory that can be
  // opened.
  Dir* Look(const std::string& path, bool fresh = false);
  bool Relist(Dir& dir);  // lists dir.files again, keeping the fds of unchanged files
  File* Find(Dir& dir, std::string_view name);
  // Reads `file` from offset 0 into *out, on its kept fd or a fresh one (then kept, with `keep`,
  // while under the bound). False if it cannot be opened or read.
  bool Read(Dir& dir, File& file, std::string* out, bool keep = true);
  void Close(Dir& dir);  // its files and its own fd

  std::map<std::string, Dir, std::less<>> dirs_;
  std::vector<char> listing_;  // getdents64's buffer, kept between reads
  std::string text_;           // a file's text, kept between reads
  size_t max_open_;
  std::chrono::nanoseconds racy_;
  std::chrono::nanoseconds max_age_;
  size_t open_ = 0;
  size_t listings_ = 0;
  std::uint64_t scrape_ = 1;
};

}  // namespace nvmeof
