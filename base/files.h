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
// A read shorter than asked is taken as the end of the file, which holds for what this reads:
// regular files, sysfs and configfs attributes (the kernel shows one whole, from offset 0) and
// procfs files shown at once (single_open: /proc/net/snmp, /proc/self/status); not for procfs
// files shown a record at a time (/proc/net/tcp, /proc/net/dev), which a read can end short of
// their end.
std::optional<std::string> ReadFile(const std::string& path, size_t max_bytes = 64 * 1024);

// Why a read of `path` just failed, from errno, for a collector's failure reason
// (MetricSink::Fail): "/proc/net/snmp: No such file or directory". Call it right after the
// failed ReadFile (which leaves errno set; EFBIG when longer than max_bytes).
std::string FileFailure(const std::string& path);

// An attribute's text without its trailing newline, blanks and NULs, as ReadFile returns it.
std::string_view TrimAttribute(std::string_view text);

// Label text of an attribute: the file's text, or "" when the kernel does not have it (e.g.
// hostnqn on pcie) or it cannot be read.
std::string ReadFileOr(const std::string& path);

// A file holding one unsigned decimal integer (as every sysfs counter does). nullopt for
// anything else, e.g. "N/A (no PMA)" on iWARP ports, empty files, or garbage.
std::optional<std::uint64_t> ReadU64(const std::string& path);
std::optional<std::uint64_t> ParseU64(std::string_view text);

// Entry names in a directory, sorted, without "." and ".."; empty if it does not exist.
std::vector<std::string> ListDir(const std::string& path);
bool IsDir(const std::string& path);
bool Exists(const std::string& path);

// Last path component of a symlink's target ("../../nvme-subsys0" -> "nvme-subsys0").
std::optional<std::string> ReadLinkBase(const std::string& path);

}  // namespace nvmeof
