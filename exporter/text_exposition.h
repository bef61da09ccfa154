// The text exposition format 0.0.4, written by hand into one std::string: prometheus-cpp's
// TextSerializer goes through std::ostream a few bytes at a time (tests/bench/scrape_bench.sh
// compares the two), ours appends whole lines and formats numbers with std::to_chars.
//
// The output has TextSerializer's lines in TextSerializer's order (HELP, TYPE, then per
// series; a histogram's _count, _sum, then _bucket lines with +Inf last), so scrapers see the
// same series. It differs on purpose in three ways, each a fix:
// - a non-integral float is the shortest string that parses back to the same double (%.16g,
//   TextSerializer's, drops the 17th digit: 0.1+0.2 came out as 0.3); integral values below
//   1e16 stay plain digits, so counters read as before;
// - NaN is written "NaN" (TextSerializer: "Nan"; Prometheus' parser takes both);
// - HELP escapes backslash and newline as the format requires (TextSerializer copies it raw,
//   so a newline in HELP broke the exposition).
// Text 0.0.4 has no exemplars and no created timestamps: OpenMetrics and protobuf carry them.
#pragma once

#include <prometheus/metric_family.h>

#include <span>
#include <string>

#include "base/metric_sink.h"

namespace nvmeof {

inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr char kOpenMetricsContentType[] =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

// Appends every family, in order, to `out`. Families without series still get HELP and TYPE,
// as TextSerializer writes them.
void AppendText(std::span<const prometheus::MetricFamily> families, std::string* out);

// The same in OpenMetrics 1.0 text: TYPE before HELP, a counter family named without its
// `_total` (a counter without the suffix goes out as `unknown`), untyped as `unknown`, HELP
// escaping '"' too, histogram buckets before _sum and _count, timestamps in seconds, and
// `# EOF` last. Sample lines, names and values are the 0.0.4 writer's. With `side` (MetricSink's
// SideOf), a histogram bucket carries its exemplar (`... 17 # {command="h-1"} 0.0123
// 1733500000.123`, timestamp only where it has one), and a counter (served as `counter`) or
// histogram with a created timestamp gets a `_created` sample last (`nvmeof_x_created{...}
// 1733400000.5`), carrying the series' timestamp like its other samples.
void AppendOpenMetrics(std::span<const prometheus::MetricFamily> families, std::string* out);
void AppendOpenMetrics(std::span<const prometheus::MetricFamily> families, const SideLookup& side,
                       std::string* out);

// One sample value as the text format writes it (see above): "NaN", "+Inf", "-Inf", "-0",
// integral values below 1e16 as digits, anything else std::to_chars' shortest round trip.
void AppendTextDouble(double value, std::string* out);

}  // namespace nvmeof
