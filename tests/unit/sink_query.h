// Lookups into a MetricSink for collector tests: series by family and label subset.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/metric_sink.h"

namespace nvmeof {

using LabelMap = std::map<std::string, std::string>;

inline LabelMap ToMap(const prometheus::ClientMetric& m) {
  LabelMap out;
  for (const auto& l : m.label) out[l.name] = l.value;
  return out;
}

// Series of `family` whose labels include every pair in `want`.
inline std::vector<const prometheus::ClientMetric*> Select(const MetricSink& sink,
                                                           std::string_view family,
                                                           const LabelMap& want = {}) {
  std::vector<const prometheus::ClientMetric*> out;
  const auto* f = sink.Find(family);
  if (!f) return out;
  for (const auto& m : f->metric) {
    auto labels = ToMap(m);
    bool match = true;
    for (const auto& [k, v] : want) match = match && labels.count(k) && labels[k] == v;
    if (match) out.push_back(&m);
  }
  return out;
}

// A series' label value, or "<missing>".
inline std::string Label(const prometheus::ClientMetric& m, std::string_view name) {
  for (const auto& l : m.label) {
    if (l.name == name) return l.value;
  }
  return "<missing>";
}

// How many series of `family` have all the labels in `want`.
inline int Count(const MetricSink& sink, std::string_view family, const LabelMap& want = {}) {
  return static_cast<int>(Select(sink, family, want).size());
}

// Value of the single series of `family` matching `want`; NaN when not exactly one.
inline double Value(const MetricSink& sink, std::string_view family, const LabelMap& want = {}) {
  auto sel = Select(sink, family, want);
  if (sel.size() != 1) return std::nan("");
  const auto* f = sink.Find(family);
  return f->type == prometheus::MetricType::Counter ? sel[0]->counter.value : sel[0]->gauge.value;
}

}  // namespace nvmeof
