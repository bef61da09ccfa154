#include "base/label_value.h"

#include <cstdint>

namespace nvmeof {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool IsPlainAscii(unsigned char c) { return c >= 0x20 && c < 0x7F; }

// Decodes one well-formed UTF-8 sequence at s[i]. Returns its length (1..4) and sets *cp, or 0
// with *bad set to the length of the maximal ill-formed subpart to replace by one U+FFFD.
std::size_t Decode(std::string_view s, std::size_t i, std::uint32_t* cp, std::size_t* bad) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  std::size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    *cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    *cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    *cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    *bad = 1;  // continuation byte, C0/C1 (overlong 2-byte), F5..FF
    return 0;
  }
  for (std::size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) {
      *bad = k;  // truncated at the end
      return 0;
    }
    const auto b = static_cast<unsigned char>(s[i + k]);
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) {
      *bad = k;  // the subpart so far; b starts over
      return 0;
    }
    *cp = (*cp << 6) | (b & 0x3F);
  }
  return len;
}

bool IsControl(std::uint32_t cp) { return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F); }

}  // namespace

bool SanitizeLabelValue(std::string* value) {
  const std::string_view in(*value);
  std::size_t i = 0;
  while (i < in.size() && IsPlainAscii(static_cast<unsigned char>(in[i]))) ++i;
  if (i == in.size() && in.size() <= kMaxLabelValueBytes) return false;  // the common case

  std::string out(in.substr(0, i));
  out.reserve(in.size());
  bool changed = false;
  while (i < in.size()) {
    std::uint32_t cp = 0;
    std::size_t bad = 0;
    const std::size_t len = Decode(in, i, &cp, &bad);
    if (len == 0) {
      out += kReplacement;
      changed = true;
      i += bad;
    } else if (IsControl(cp)) {
      changed = true;
      i += len;
    } else {
      out.append(in.substr(i, len));
      i += len;
    }
  }
  if (out.size() > kMaxLabelValueBytes) {
    std::size_t cut = kMaxLabelValueBytes - kLabelValueTruncationMark.size();
    // out is valid UTF-8 now: back up over continuation bytes to a code point's first byte.
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
    out += kLabelValueTruncationMark;
    changed = true;
  }
  if (changed) *value = std::move(out);
  return changed;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && (i == 0 || c < '0' || c > '9')) return false;
  }
  return true;
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && (i == 0 || c < '0' || c > '9')) return false;
  }
  return true;
}

}  // namespace nvmeof
