// The protobuf exposition format: length-delimited io.prometheus.client.MetricFamily messages
// (schema compiled at build time from Debian's golang-github-prometheus-client-model-dev).
// It is the only format that carries native histograms; see MetricSink's NativeHistogram.
#pragma once

#include <prometheus/metric_family.h>

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "base/metric_sink.h"

namespace nvmeof {

inline constexpr char kProtobufContentType[] =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
    "encoding=delimited";

// Every family of `sink`, in order, as varint-length-prefixed MetricFamily messages. Histograms
// with native buckets carry schema, zero bucket, spans and deltas, and their classic buckets
// only if NativeHistogram::with_classic; the others carry their classic buckets. The side data
// goes with them (SeriesSide):
// - a classic bucket carries its exemplar (Bucket.exemplar); the +Inf bucket, otherwise left
//   out (it is sample_count), is written when it has one;
// - a native histogram without classic buckets carries the exemplars that have a timestamp in
//   Histogram.exemplars (field 16; with classic buckets, Prometheus reads theirs);
// - a counter's or histogram's created timestamp: Counter.created_timestamp (3),
//   Histogram.created_timestamp (15), google.protobuf.Timestamp.
// Fields 3, 15 and 16 are upstream client_model's (0.6); Debian's 0.3.0 does not name them yet.
std::string SerializeProtobuf(const MetricSink& sink);

// The same for any families and their side data (`side`: MetricSink's SideOf), appended to
// `out`; written straight in the wire format (field numbers from the generated classes), byte
// for byte what libprotobuf writes for the same messages, at a fraction of the cost
// (tests/bench/README.md).
void AppendProtobuf(std::span<const prometheus::MetricFamily> families, const SideLookup& side,
                    std::string* out);

// The native buckets of families[family].metric[metric], or nullptr (classic only).
using NativeLookup = std::function<const NativeHistogram*(size_t family, size_t metric)>;
// The same with native buckets only (no exemplars, no created timestamps).
void AppendProtobuf(std::span<const prometheus::MetricFamily> families, const NativeLookup& native,
                    std::string* out);

}  // namespace nvmeof
