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
// only if NativeHistogram::with_classic; the others carry their classic buckets.
std::string SerializeProtobuf(const MetricSink& sink);

// The native buckets of families[family].metric[metric], or nullptr (classic only).
using NativeLookup = std::function<const NativeHistogram*(size_t family, size_t metric)>;
// The same for any families, appended to `out`; written straight in the wire format (field
// numbers from the generated classes), byte for byte what libprotobuf writes for the same
// messages, at a fraction of the cost (tests/bench/README.md).
void AppendProtobuf(std::span<const prometheus::MetricFamily> families, const NativeLookup& native,
                    std::string* out);

}  // namespace nvmeof
