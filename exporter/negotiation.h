// Which exposition a scrape gets, from its Accept header: the delimited MetricFamily protobuf,
// OpenMetrics 1.0 text, or text 0.0.4, whichever it ranks highest (q), with text for a client
// that names none of them (curl's */*).
#pragma once

#include <string>

namespace nvmeof {

enum class Exposition { kText, kOpenMetrics, kProtobuf };

struct Negotiated {
  Exposition format = Exposition::kText;
  // The name escaping the scraper asked for on the chosen type (allow-utf-8, underscores, dots,
  // values; Prometheus 3 sends it), "" if none. Every name and label name this exporter serves
  // is a legacy Prometheus name, which each scheme leaves as it is: the body is the same, and
  // the Content-Type says which scheme it satisfies.
  std::string escaping;
};

// A null header is text. Ties in q go to protobuf, then OpenMetrics, then text: the order
// Prometheus lists them in.
Negotiated NegotiateExposition(const char* accept);

// The Content-Type of a scrape's body in that exposition.
std::string ContentType(const Negotiated& negotiated);

}  // namespace nvmeof
