// Serializer cost per sample: prometheus-cpp's TextSerializer (the text path) and the protobuf
// exposition (native histograms, or classic), each with and without gzip, on a synthetic host
// at issue 12's scale: HISTOGRAMS latency histograms (default 450: 4 controllers x 8
// namespaces, reads and writes, all stages) with realistic fine buckets (about 30 populated of
// 218), plus COUNTERS plain counters. Prints ns per sample and per histogram, side by side.
#include <prometheus/text_serializer.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bpf/hist.h"
#include "collectors/bpf/histogram.h"
#include "exporter/protobuf_exposition.h"
#include "exporter/web_server.h"

namespace {

using Clock = std::chrono::steady_clock;

nvmeof::MetricSink Build(int histograms, int counters, const std::string& mode) {
  nvmeof::MetricSink sink;
  std::mt19937_64 rng(1);
  std::lognormal_distribution<double> lat(std::log(80e-6), 0.6);
  const auto layout = nvmeof::BucketLayout::Default();
  for (int h = 0; h < histograms; ++h) {
    std::vector<unsigned long long> fine(NVMEOF_HIST_BUCKETS, 0);
    std::uint64_t count = 0;
    double sum = 0;
    for (int i = 0; i < 20000; ++i) {
      const double v = lat(rng);
      ++fine[nvmeof_hist_index(static_cast<unsigned long long>(v * 1e9))];
      ++count;
      sum += v;
    }
    nvmeof::Labels labels = {
        {"role", "host"},
        {"transport", "rdma"},
        {"op", h % 2 ? "read" : "write"},
        {"stage", "stage" + std::to_string(h % 7)},
        {"controller", "nvme" + std::to_string(h / 112)},
        {"device", "nvme" + std::to_string(h / 112) + "n" + std::to_string(h % 8 + 1)}};
    sink.Histogram(
        "nvmeof_stage_latency_seconds", "Stage latency.", std::move(labels), layout.bounds(),
        layout.Cumulative(fine.data()), count, sum,
        mode == "classic" ? nullptr : nvmeof::NativeFromFine(fine.data(), mode == "both"));
  }
  for (int c = 0; c < counters; ++c) {
    sink.Counter("nvmeof_rdma_port_counter_total", "A counter.",
                 {{"rdma_device", "mlx5_" + std::to_string(c / 64)},
                  {"counter", "c" + std::to_string(c % 64)}},
                 static_cast<double>(c) * 12345);
  }
  return sink;
}

template <typename F>
double NsPerRun(F&& f, int runs) {
  f();  // warm up
  const auto start = Clock::now();
  for (int i = 0; i < runs; ++i) f();
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / runs;
}

}  // namespace

int main(int argc, char** argv) {
  const int histograms = argc > 1 ? std::atoi(argv[1]) : 450;
  const int counters = argc > 2 ? std::atoi(argv[2]) : 1000;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 20;
  std::printf("synthetic host: %d histograms, %d counters, %d runs each\n", histograms, counters,
              runs);
  std::printf("%-34s %10s %9s %12s %12s %14s\n", "path", "bytes", "samples", "ms/scrape",
              "ns/sample", "ns/histogram");
  // Text samples: 19 per classic histogram (16 buckets, +Inf, _sum, _count) + counters.
  const double text_samples = histograms * 19.0 + counters;
  // Protobuf native: one sample per histogram.
  const double native_samples = histograms + counters;
  double text_ns = 0;
  for (const char* mode : {"text", "text+gzip", "protobuf native", "protobuf native+gzip",
                           "protobuf classic", "protobuf both"}) {
    const std::string m(mode);
    const bool proto = m.rfind("protobuf", 0) == 0;
    const bool gz = m.find("gzip") != std::string::npos;
    const std::string pmode = m.find("classic") != std::string::npos ? "classic"
                              : m.find("both") != std::string::npos  ? "both"
                                                                     : "native";
    auto sink = Build(histograms, counters, proto ? pmode : "native");
    const auto families = nvmeof::MetricSink(sink).Take();
    std::string out;
    const double ns = NsPerRun(
        [&] {
          if (proto) {
            out = nvmeof::SerializeProtobuf(sink);
          } else {
            std::ostringstream text;
            prometheus::TextSerializer().Serialize(text, families);
            out = text.str();
          }
          if (gz) out = nvmeof::Gzip(out);
        },
        runs);
    const double samples = proto && pmode == "native" ? native_samples
                           : proto && pmode == "both" ? text_samples + histograms
                                                      : text_samples;
    if (m == "text") text_ns = ns;
    std::printf("%-34s %10zu %9.0f %12.2f %12.1f %14.1f   (x%.2f of text)\n", mode, out.size(),
                samples, ns / 1e6, ns / samples, counters ? 0.0 : ns / histograms, ns / text_ns);
  }
  return 0;
}
