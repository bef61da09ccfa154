#include "exporter/negotiation.h"

#include <cctype>
#include <cstdlib>
#include <string_view>

#include "exporter/protobuf_exposition.h"
#include "exporter/text_exposition.h"

namespace nvmeof {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool KnownEscaping(std::string_view e) {
  return e == "allow-utf-8" || e == "underscores" || e == "dots" || e == "values";
}

// One media range of an Accept header, with the parameters that matter here.
struct Range {
  std::string_view type, proto, encoding, version, escaping;
  double q = 1;
};

Range ParseRange(std::string_view item) {
  Range r;
  const size_t semi = item.find(';');
  r.type = Trim(item.substr(0, semi));
  std::string_view params = semi == std::string_view::npos ? std::string_view() : item.substr(semi);
  while (!params.empty()) {
    params.remove_prefix(1);  // ';'
    const size_t next = params.find(';');
    std::string_view p = Trim(params.substr(0, next));
    params = next == std::string_view::npos ? std::string_view() : params.substr(next);
    const size_t eq = p.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = Trim(p.substr(0, eq)), value = Trim(p.substr(eq + 1));
    if (EqualsNoCase(key, "q")) r.q = std::strtod(std::string(value).c_str(), nullptr);
    if (key == "proto") r.proto = value;
    if (key == "encoding") r.encoding = value;
    if (key == "version") r.version = value;
    if (key == "escaping") r.escaping = value;
  }
  return r;
}

}  // namespace

Negotiated NegotiateExposition(const char* accept) {
  Negotiated best;
  if (!accept) return best;
  double best_q = 0;
  std::string_view s(accept);
  while (!s.empty()) {
    const size_t comma = s.find(',');
    const Range r = ParseRange(s.substr(0, comma));
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    Exposition format;
    if (EqualsNoCase(r.type, "application/vnd.google.protobuf") &&
        r.proto == "io.prometheus.client.MetricFamily" && r.encoding == "delimited") {
      format = Exposition::kProtobuf;
    } else if (EqualsNoCase(r.type, "application/openmetrics-text") &&
               (r.version.empty() || r.version == "1.0.0" || r.version == "0.0.1")) {
      format = Exposition::kOpenMetrics;  // 0.0.1 differs from 1.0.0 in nothing served here
    } else if (EqualsNoCase(r.type, "text/plain") || r.type == "*/*") {
      format = Exposition::kText;
    } else {
      continue;
    }
    if (!(r.q > 0)) continue;
    // Ties: protobuf, then OpenMetrics, then text (the enum's order, highest last).
    if (r.q > best_q || (r.q == best_q && format > best.format)) {
      best_q = r.q;
      best.format = format;
      best.escaping = KnownEscaping(r.escaping) ? std::string(r.escaping) : kDefaultEscaping;
    }
  }
  return best;
}

std::string ContentType(const Negotiated& n) {
  std::string type;
  switch (n.format) {
    case Exposition::kProtobuf:
      type = kProtobufContentType;
      break;
    case Exposition::kOpenMetrics:
      type = kOpenMetricsContentType;
      break;
    case Exposition::kText:
      type = kTextContentType;
      break;
  }
  if (!n.escaping.empty()) type += "; escaping=" + n.escaping;
  return type;
}

}  // namespace nvmeof
