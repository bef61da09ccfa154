// Label values come from the kernel (sysfs, configfs, netlink) and from device firmware: they are
// untrusted bytes. One invalid UTF-8 byte in one label value makes Prometheus reject the node's
// whole scrape, so every value is made safe here, in one pure function that MetricSink calls for
// every label of every series (no collector builds a label past it).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace nvmeof {

// The longest label value served, in bytes, truncation mark included.
inline constexpr std::size_t kMaxLabelValueBytes = 1024;
// Appended to a value cut at kMaxLabelValueBytes (U+2026 HORIZONTAL ELLIPSIS, 3 bytes).
inline constexpr std::string_view kLabelValueTruncationMark = "\xE2\x80\xA6";

// Makes *value a valid, printable, bounded label value; returns whether it changed anything.
//  - Invalid UTF-8 becomes U+FFFD, one per maximal ill-formed subsequence (the Unicode
//    recommended practice): stray continuation bytes, truncated sequences, overlong forms
//    (C0, C1, E0 80..9F, F0 80..8F), UTF-16 surrogates (ED A0..BF) and code points above
//    U+10FFFF (F4 90.., F5..FF).
//  - Control characters are removed: C0 (U+0000..U+001F, so NUL, tab and newline too), DEL
//    (U+007F) and C1 (U+0080..U+009F). A kernel string's trailing newline or embedded NUL
//    carries no meaning in a label.
//  - Longer than kMaxLabelValueBytes: cut on a code point boundary and kLabelValueTruncationMark
//    appended, the whole at most kMaxLabelValueBytes.
// Idempotent: a sanitized value passes unchanged.
bool SanitizeLabelValue(std::string* value);

// Prometheus label name syntax, [a-zA-Z_][a-zA-Z0-9_]*, and not "__"-prefixed (reserved).
bool IsValidLabelName(std::string_view name);
// Prometheus metric name syntax, [a-zA-Z_:][a-zA-Z0-9_:]*.
bool IsValidMetricName(std::string_view name);

}  // namespace nvmeof
