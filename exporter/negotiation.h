// Which exposition a scrape gets, from its Accept header: the delimited MetricFamily protobuf,
// OpenMetrics 1.0 text, or text 0.0.4, whichever it ranks highest (q), with text for a client
// that names none of them (curl's */*).
#pragma once

#include <string>

namespace nvmeof {

enum class Exposition { kText, kOpenMetrics, kProtobuf };

inline constexpr char kDefaultEscaping[] = "underscores";

struct Negotiated {
  Exposition format = Exposition::kText;
  // The name escaping the body satisfies, stated in its Content-Type as prometheus/common's
  // expfmt states it (Negotiate, NegotiateIncludingOpenMetrics): the one the scraper asked for
  // on the chosen type (allow-utf-8, underscores, dots, values; Prometheus 3 sends it), else
  // expfmt's default, underscores; an unknown one is ignored, as expfmt ignores it. Every name
  // and label name this exporter serves is a legacy Prometheus name, which expfmt leaves as it
  // is under every scheme (EscapeMetricFamily), so the body is the same for all.
  std::string escaping = kDefaultEscaping;
};

// A null header is text. Ties in q go to protobuf, then OpenMetrics, then text: the order
// Prometheus lists them in.
Negotiated NegotiateExposition(const char* accept);

// The Content-Type of a scrape's body in that exposition, ending in `; escaping=SCHEME` (none
// if `escaping` is empty).
std::string ContentType(const Negotiated& negotiated);

}  // namespace nvmeof
