// Test-side tools for the exposition writers (exporter/text_exposition.h,
// exporter/protobuf_exposition.h), shared by the unit tests, the round-trip fuzz target
// (tests/fuzz/writers_fuzz.cc) and the scrape benchmark:
// - a strict parser of the text format 0.0.4, written apart from the writer so a round trip
//   through both checks the writer against the format, not against itself;
// - comparisons of what was parsed back (text, or delimited protobuf decoded by libprotobuf)
//   with the model that was written: an empty string when equal, else the first difference;
// - the previous protobuf writer, built from libprotobuf's generated message classes: the
//   reference the direct writer must equal byte for byte, and the "before" of the benchmark.
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exporter/protobuf_exposition.h"

namespace google::protobuf {
class Message;
}  // namespace google::protobuf

namespace nvmeof::test {

struct TextSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // unescaped, in order
  std::string value;                                        // as written
  std::optional<std::int64_t> timestamp_ms;
};

struct TextFamily {
  std::string name;
  std::optional<std::string> help;  // unescaped
  std::string type;                 // counter, gauge, summary, histogram, untyped
  std::vector<TextSample> samples;
};

// Parses a whole text exposition. Strict: every line ends in '\n'; only "# HELP", "# TYPE"
// and sample lines; names and label names match the format's character sets; a label value
// escapes only \\, \" and \n; a HELP line escapes only \\ and \n; a sample belongs to the
// family of the last HELP/TYPE (its name, or name_count/_sum/_bucket where the type has them);
// no label name twice in a sample; a value is NaN, +Inf, -Inf or a decimal float. nullopt and
// `error` (with the line number) when the text breaks any of that.
std::optional<std::vector<TextFamily>> ParseText(std::string_view text, std::string* error);

// A sample value of the text format as a double (NaN, +Inf, -Inf, or the whole string a
// decimal float), or nullopt.
std::optional<double> ParseTextValue(std::string_view s);

// Whether text parsed back from `families` (written by AppendText) carries exactly the
// model: the same families in order with HELP, TYPE, and per series the lines TextSerializer
// writes, with every label value byte for byte and every value the same double (any NaN for
// NaN; -0 apart from 0) or, for counts, the same integer. "" when equal.
std::string CompareText(std::span<const prometheus::MetricFamily> families,
                        const std::vector<TextFamily>& parsed);

// Parses delimited MetricFamily messages with libprotobuf (ParseDelimitedFromZeroCopyStream)
// and compares them with the model, as AppendProtobuf writes it: families without series left
// out, classic buckets without +Inf unless it has an exemplar (and none for native-only
// histograms), native fields, exemplars and created timestamps only where `side` gives them.
// "" when equal.
std::string CompareProtobuf(std::span<const prometheus::MetricFamily> families,
                            const SideLookup& side, std::string_view delimited);
std::string CompareProtobuf(std::span<const prometheus::MetricFamily> families,
                            const NativeLookup& native, std::string_view delimited);

// The protobuf exposition through libprotobuf's generated classes (one MetricFamily message
// reused, SerializeToString, then the varint prefix): the writer before AppendProtobuf.
// Fields the compiled schema (Debian's client_model 0.3.0) does not name yet (created
// timestamps, Histogram.exemplars) go in as unknown fields, which libprotobuf writes after the
// known ones: where upstream's field numbers put them.
std::string SerializeProtobufMessages(std::span<const prometheus::MetricFamily> families,
                                      const SideLookup& side);
std::string SerializeProtobufMessages(std::span<const prometheus::MetricFamily> families,
                                      const NativeLookup& native);

// Each occurrence of message field `number` of `message`, serialized, whether the compiled
// schema names the field (read by reflection) or not (read from the unknown fields): upstream
// client_model's Counter.created_timestamp (3), Histogram.created_timestamp (15) and
// Histogram.exemplars (16) with Debian's schema.
std::vector<std::string> MessageFields(const google::protobuf::Message& message, int number);

}  // namespace nvmeof::test
