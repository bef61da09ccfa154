// Small readers for sysfs, procfs and configfs trees. None of them throw: a file that is
// missing, unreadable or not what we expect is "no value" and the caller skips the series.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nvmeof {

// Whole file with trailing whitespace removed; nullopt if it cannot be opened or read, or is
// longer than max_bytes. 64 KiB by default: attribute files; a bigger one is not what we think.
std::optional<std::string> ReadFile(const std::string& path, size_t max_bytes = 64 * 1024);

// Label text of an attribute: the file's text, or "" when the kernel does not have it (e.g.
// hostnqn on pcie) or it cannot be read.
std::string ReadFileOr(const std::string& path);

// A file holding one unsigned decimal integer (as every sysfs counter does). nullopt for
// anything else, e.g. "N/A (no PMA)" on iWARP ports, empty files, or garbage.
std::optional<std::uint64_t> ReadU64(const std::string& path);
std::optional<std::uint64_t> ParseU64(std::string_view text);

// A directory of one-number files (sysfs counters/, hw_counters/): every entry, sorted by name
// as ListDir, with its value as ReadU64 reads it (nullopt: unreadable or not a number); empty
// if the directory cannot be opened. Cheaper than ListDir + ReadU64 per entry, which a scrape
// does for hundreds of files: each file is opened relative to the directory (no path walk
// from the root) and read with one read(2), since a sysfs attribute comes whole from its first
// read and a short read of a regular file is its end (a file that fills the buffer is read on).
std::vector<std::pair<std::string, std::optional<std::uint64_t>>> ReadU64Dir(
    const std::string& path);

// Entry names in a directory, sorted, without "." and ".."; empty if it does not exist.
std::vector<std::string> ListDir(const std::string& path);
bool IsDir(const std::string& path);
bool Exists(const std::string& path);

// Last path component of a symlink's target ("../../nvme-subsys0" -> "nvme-subsys0").
std::optional<std::string> ReadLinkBase(const std::string& path);

}  // namespace nvmeof
