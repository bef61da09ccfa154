// A fake kernel side of the bpf collector's NVMe-oF series (an NvmeofSource serving a fixed
// snapshot) and one scrape of the bpf collector over it: the set-up of bpf_nvmeof_test and
// cardinality_test.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/metric_sink.h"
#include "collectors/bpf.h"
#include "collectors/collector_options.h"
#include "loader/block.h"
#include "loader/nvmeof.h"

namespace nvmeof {

class FakeNvmeof : public NvmeofSource {
 public:
  NvmeofSnapshot snap;
  AttachPlan plan;
  bool Read(NvmeofSnapshot* out) override {
    *out = snap;
    return true;
  }
  AttachPlan Plan() const override { return plan; }
  void Forget(const std::vector<std::uint64_t>& ids) override {
    forgotten->insert(forgotten->end(), ids.begin(), ids.end());
  }
  // Shared: the collector (and this fake) is gone when the test looks.
  std::shared_ptr<std::vector<std::uint64_t>> forgotten =
      std::make_shared<std::vector<std::uint64_t>>();
};

// A fake whose snapshot holds these names (series id -> disk name or NQN) and series.
inline std::unique_ptr<FakeNvmeof> MakeFakeNvmeof(
    std::vector<std::pair<std::uint64_t, std::string>> names, std::vector<NvmeofSeries> series) {
  auto fake = std::make_unique<FakeNvmeof>();
  fake->snap.names = std::move(names);
  fake->snap.series = std::move(series);
  return fake;
}

// One scrape of a bpf collector whose NVMe-oF side reads `source` (its block side loaded, with
// no source); a failed Collect fails the test.
inline MetricSink CollectNvmeof(const CollectorOptions& options,
                                std::unique_ptr<NvmeofSource> source) {
  NvmeofLoad nv;
  nv.availability = {true, "ok", ""};
  nv.source = std::move(source);
  BlockLoad block;
  block.availability = {true, "ok", ""};
  auto c = NewBpfCollectorFrom(options, std::move(block), std::move(nv));
  MetricSink sink;
  EXPECT_TRUE(c->Collect(sink));
  return sink;
}

}  // namespace nvmeof
