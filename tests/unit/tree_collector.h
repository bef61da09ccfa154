// The set-up of the tests of a collector that reads one file system tree (nvme_host: sysfs,
// nvmet: configfs): the collector pointed at its checked-in tree under tests/fixtures or at a
// scratch tree, and the checks every such collector passes.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/metric_sink.h"
#include "collectors/collector_options.h"
#include "tests/unit/scratch_tree.h"
#include "tests/unit/sink_query.h"

namespace nvmeof {

// A checked-in tree under tests/fixtures: "sysfs", "layouts/<name>/sysfs", ...
inline std::string FixturePath(std::string_view tree) {
  return std::string(NVMEOF_FIXTURES) + "/" + std::string(tree);
}

// A collector that reads one tree, and how its tests configure it.
struct TreeCollector {
  std::unique_ptr<Collector> (*make)(const CollectorOptions&);  // as in the registry
  std::string Paths::*path;                 // the tree it reads: &Paths::sysfs, ...
  std::string_view fixture;                 // its checked-in tree
  void (*every_family)(CollectorOptions&);  // turns on the families off by default

  // The default options, with the tree at `root`.
  CollectorOptions Defaults(const std::string& root) const {
    CollectorOptions o;
    o.paths.*path = root;
    return o;
  }
  // The same with every family: what the tests scrape unless they say otherwise.
  CollectorOptions EveryFamily(const std::string& root) const {
    CollectorOptions o = Defaults(root);
    every_family(o);
    return o;
  }
  bool Collect(const std::string& root, MetricSink& sink) const {
    return make(EveryFamily(root))->Collect(sink);
  }
};

// Each test's own scrape of C's checked-in tree, every family on: ok_ (what Collect returned)
// and sink_.
template <const TreeCollector& C>
class FixtureScrape : public ::testing::Test {
 protected:
  void SetUp() override { ok_ = C.Collect(FixturePath(C.fixture), sink_); }
  void ExpectSucceededWithoutSkips() const {
    EXPECT_TRUE(ok_);
    EXPECT_EQ(sink_.skipped(), 0u);
  }

  MetricSink sink_;
  bool ok_ = false;
};

// A scratch tree for odd inputs (ScratchTree: Write, root_), scraped by C with every family on.
template <const TreeCollector& C>
class ScratchScrape : public ScratchTree {
 protected:
  std::unique_ptr<Collector> NewCollector() const { return C.make(C.EveryFamily(root_)); }
  bool Collect(MetricSink& sink) const { return NewCollector()->Collect(sink); }
};

// What a collector makes of a tree without its devices (the module not loaded, nothing
// configured) or of a root that is not there: success, with no series and no skips.
inline void ExpectEmptySuccess(Collector& collector) {
  MetricSink sink;
  EXPECT_TRUE(collector.Collect(sink));
  EXPECT_TRUE(sink.Empty());
  EXPECT_EQ(sink.skipped(), 0u);
}

// What every_family adds to the defaults on C's checked-in tree: the families of `added`, which
// the defaults do not serve, and no other; each family of `kept` is served either way, with the
// same number of series. The defaults skip nothing.
inline void ExpectEveryFamilyAdds(const TreeCollector& c, std::span<const char* const> added,
                                  std::initializer_list<const char*> kept) {
  const std::string root = FixturePath(c.fixture);
  MetricSink off, on;
  ASSERT_TRUE(c.make(c.Defaults(root))->Collect(off));
  ASSERT_TRUE(c.Collect(root, on));
  for (const char* f : added) {
    EXPECT_TRUE(Select(off, f).empty()) << f;
    EXPECT_FALSE(Select(on, f).empty()) << f;
  }
  EXPECT_EQ(on.families().size(), off.families().size() + added.size());
  EXPECT_EQ(off.skipped(), 0u);
  for (const char* f : kept) {
    EXPECT_FALSE(Select(off, f).empty()) << f;
    EXPECT_EQ(Select(off, f).size(), Select(on, f).size()) << f;
  }
}

// Each map of `want` is all the labels of one series of `family`: the one series whose labels
// named in `keys` have the map's values.
inline void ExpectSeriesLabels(const MetricSink& sink, std::string_view family,
                               const std::vector<std::string>& keys,
                               const std::vector<LabelMap>& want) {
  for (const auto& labels : want) {
    LabelMap key;
    for (const auto& k : keys) key[k] = labels.count(k) ? labels.at(k) : "<not in want>";
    const auto found = Select(sink, family, key);
    if (found.size() != 1) {
      ADD_FAILURE() << family << ": " << found.size() << " series for "
                    << ::testing::PrintToString(key);
      continue;
    }
    EXPECT_EQ(ToMap(*found[0]), labels) << family << " " << ::testing::PrintToString(key);
  }
}

}  // namespace nvmeof
