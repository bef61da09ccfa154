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
  // A scraper that asks for text only gets 0.0.4, as before.
  EXPECT_EQ(Format("text/plain;version=0.0.4"), Exposition::kText);
  EXPECT_EQ(ContentType(NegotiateExposition("text/plain;version=0.0.4")),
            "text/plain; version=0.0.4; charset=utf-8");
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
  // An unknown escaping is not echoed.
  EXPECT_EQ(NegotiateExposition("application/openmetrics-text;escaping=bogus").escaping, "");
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

}  // namespace
}  // namespace nvmeof
