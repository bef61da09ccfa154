// Which exposition each Accept header gets, with the headers real scrapers send.
#include "exporter/negotiation.h"

#include <gtest/gtest.h>

namespace nvmeof {
namespace {

Exposition Format(const char* accept) { return NegotiateExposition(accept).format; }

TEST(Negotiation, LikePrometheus) {
  // Prometheus 2.42 with --enable-feature=native-histograms:
  EXPECT_EQ(Format("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
                   "encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"),
            Exposition::kProtobuf);
  // ... and without it: OpenMetrics first.
  EXPECT_EQ(Format("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                   "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
            Exposition::kOpenMetrics);
  // Prometheus 3.5's default scrape_protocols, with its name escaping.
  const Negotiated p3 = NegotiateExposition(
      "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
      "application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;"
      "escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2");
  EXPECT_EQ(p3.format, Exposition::kOpenMetrics);
  EXPECT_EQ(p3.escaping, "allow-utf-8");
  EXPECT_EQ(ContentType(p3),
            "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=allow-utf-8");
  // A scraper that asks for text only gets 0.0.4, as before, with expfmt's default escaping.
  EXPECT_EQ(Format("text/plain;version=0.0.4"), Exposition::kText);
  EXPECT_EQ(ContentType(NegotiateExposition("text/plain;version=0.0.4")),
            "text/plain; version=0.0.4; charset=utf-8; escaping=underscores");
}

TEST(Negotiation, CurlAndOddHeadersGetText) {
  EXPECT_EQ(Format(nullptr), Exposition::kText);
  EXPECT_EQ(Format(""), Exposition::kText);
  EXPECT_EQ(Format("*/*"), Exposition::kText);
  EXPECT_EQ(Format("application/json"), Exposition::kText);  // nothing we serve: the default
  EXPECT_EQ(Format(",,;;=,q=x"), Exposition::kText);
  // Protobuf only when it is the delimited MetricFamily.
  EXPECT_EQ(Format("application/vnd.google.protobuf"), Exposition::kText);
  EXPECT_EQ(Format("application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
                   "encoding=text"),
            Exposition::kText);
  EXPECT_EQ(Format("application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
                   "encoding=delimited"),
            Exposition::kProtobuf);
  // An OpenMetrics version we do not write is not OpenMetrics 1.0.
  EXPECT_EQ(Format("application/openmetrics-text;version=2.0.0"), Exposition::kText);
  // An unknown escaping is ignored, as expfmt ignores it: the default is stated.
  EXPECT_EQ(NegotiateExposition("application/openmetrics-text;escaping=bogus").escaping,
            "underscores");
}

TEST(Negotiation, QualityDecidesAndTiesPreferProtobufThenOpenMetrics) {
  EXPECT_EQ(Format("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
                   "encoding=delimited;q=0,text/plain"),
            Exposition::kText);  // q=0: not acceptable
  EXPECT_EQ(Format("text/plain;q=0.9,application/vnd.google.protobuf;"
                   "proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5"),
            Exposition::kText);
  EXPECT_EQ(Format("text/plain;q=0.5,application/openmetrics-text;q=0.5"),
            Exposition::kOpenMetrics);
  EXPECT_EQ(Format("application/openmetrics-text,application/vnd.google.protobuf;"
                   "proto=io.prometheus.client.MetricFamily;encoding=delimited"),
            Exposition::kProtobuf);
}

// The Content-Type states the escaping the body satisfies, as prometheus/common's expfmt
// (NegotiateIncludingOpenMetrics) states it: the scraper's on the chosen type if it is one of
// the four schemes, else underscores (expfmt's default NameEscapingScheme). The body is the same
// for all: every name served is a legacy name, which no scheme changes.
TEST(Negotiation, EscapingIsStatedAsExpfmtStatesIt) {
  auto type = [](const char* accept) { return ContentType(NegotiateExposition(accept)); };
  for (const char* scheme : {"allow-utf-8", "underscores", "dots", "values"}) {
    const std::string om = std::string("application/openmetrics-text;version=1.0.0;escaping=") +
                           scheme + ";q=0.6,text/plain;version=0.0.4;q=0.3";
    EXPECT_EQ(type(om.c_str()),
              std::string("application/openmetrics-text; version=1.0.0; charset=utf-8; "
                          "escaping=") +
                  scheme);
  }
  // Prometheus 3.5 with native histograms (protobuf first, no escaping on it) and its text
  // fallbacks with allow-utf-8: the chosen protobuf gets the default.
  EXPECT_EQ(type("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
                 "encoding=delimited;q=0.6,application/openmetrics-text;version=1.0.0;"
                 "escaping=allow-utf-8;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"),
            "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
            "encoding=delimited; escaping=underscores");
  // Prometheus 3.5 told to scrape text 1.0.0 only: text/plain with its escaping.
  EXPECT_EQ(type("text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5,*/*;q=0.4"),
            "text/plain; version=0.0.4; charset=utf-8; escaping=allow-utf-8");
  // Protobuf with an escaping of its own.
  EXPECT_EQ(type("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
                 "encoding=delimited;escaping=allow-utf-8"),
            "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
            "encoding=delimited; escaping=allow-utf-8");
  // Unknown, empty, differently spelt: ignored, the default stated.
  EXPECT_EQ(type("application/openmetrics-text;version=1.0.0;escaping=bogus"),
            "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores");
  EXPECT_EQ(type("application/openmetrics-text;escaping="),
            "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores");
  EXPECT_EQ(type("text/plain;escaping=Allow-UTF-8"),
            "text/plain; version=0.0.4; charset=utf-8; escaping=underscores");
  // curl, no header: text 0.0.4, the default stated.
  EXPECT_EQ(type(nullptr), "text/plain; version=0.0.4; charset=utf-8; escaping=underscores");
  EXPECT_EQ(type("*/*"), "text/plain; version=0.0.4; charset=utf-8; escaping=underscores");
  // Only the chosen type's escaping counts: OpenMetrics wins on q, text's escaping is not used.
  EXPECT_EQ(type("text/plain;escaping=dots;q=0.2,application/openmetrics-text;q=0.9"),
            "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores");
}

}  // namespace
}  // namespace nvmeof
