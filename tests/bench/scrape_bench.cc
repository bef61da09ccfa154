// Scrape cost on a synthetic host at issue 12's scale: HISTOGRAMS latency histograms (default
// 450: 4 controllers x 8 namespaces, reads and writes, all stages) with realistic fine buckets
// (about 30 populated of 218), plus COUNTERS plain counters.
//
//   scrape_bench [HISTOGRAMS COUNTERS ROUNDS]
//     1. serializers in process, each ROUNDS times: our text writer (AppendText) beside
//        prometheus-cpp's TextSerializer, our protobuf writer (AppendProtobuf) beside the one
//        built on libprotobuf's message classes, each with and without gzip (level 1, as
//        served): bytes, samples, p50/p99 ms per scrape, ns per sample, ours/old ratios; then
//        the histograms alone: ns per histogram;
//     2. the same host served for real: a collector that builds the series from stored fine
//        buckets on every scrape (as the BPF collector does from its map snapshot), the
//        exporter's Scraper and WebServer on 127.0.0.1, ROUNDS HTTP scrapes per format:
//        p50/p99 ms per scrape, then the process's RSS.
//   scrape_bench --http NAME=URL... ROUNDS
//     scrapes each URL in turn, ROUNDS times (one connection per scrape, Connection: close):
//     p50/p99 ms, scrapes per second, and each one's time as a ratio of the first's.
// Timings are not asserted: this is a benchmark (scrape_bench.sh), not a test; its smoke test
// (ctest scrape_bench_smoke) only checks that it runs and that the writers agree on sizes.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/collector.h"
#include "base/fd.h"
#include "bpf/hist.h"
#include "exporter/counter_resets.h"
#include "exporter/protobuf_exposition.h"
#include "exporter/scraper.h"
#include "exporter/text_exposition.h"
#include "exporter/web_server.h"
#include "loader/histogram.h"
#include "tests/unit/exposition_support.h"

namespace {

using Clock = std::chrono::steady_clock;
using Fine = std::vector<unsigned long long>;

// The host's fine buckets, drawn once: log-normal latencies around 80 us.
std::vector<Fine> Draw(int histograms) {
  std::mt19937_64 rng(1);
  std::lognormal_distribution<double> lat(std::log(80e-6), 0.6);
  std::vector<Fine> out;
  for (int h = 0; h < histograms; ++h) {
    Fine fine(NVMEOF_HIST_BUCKETS, 0);
    for (int i = 0; i < 20000; ++i) {
      ++fine[nvmeof_hist_index(static_cast<unsigned long long>(lat(rng) * 1e9))];
    }
    out.push_back(std::move(fine));
  }
  return out;
}

void Build(const std::vector<Fine>& fines, int counters, const std::string& mode,
           nvmeof::MetricSink* sink) {
  static const auto layout = nvmeof::BucketLayout::Default();
  for (size_t h = 0; h < fines.size(); ++h) {
    std::uint64_t count = 0;
    double sum = 0;
    for (size_t i = 0; i < fines[h].size(); ++i) {
      count += fines[h][i];
      sum += static_cast<double>(fines[h][i]) * 80e-6;
    }
    nvmeof::Labels labels = {
        {"role", "host"},
        {"transport", "rdma"},
        {"op", h % 2 ? "read" : "write"},
        {"stage", "stage" + std::to_string(h % 7)},
        {"controller", "nvme" + std::to_string(h / 112)},
        {"nvme_namespace", "nvme" + std::to_string(h / 112) + "n" + std::to_string(h % 8 + 1)}};
    sink->Histogram(
        "nvmeof_stage_latency_seconds", "Stage latency.", std::move(labels), layout.bounds(),
        layout.Cumulative(fines[h].data()), count, sum,
        mode == "classic" ? nullptr : nvmeof::NativeFromFine(fines[h].data(), mode == "both"));
  }
  for (int c = 0; c < counters; ++c) {
    sink->Counter("nvmeof_rdma_port_counter_total", "A counter.",
                  {{"rdma_device", "mlx5_" + std::to_string(c / 64)},
                   {"counter", "c" + std::to_string(c % 64)}},
                  static_cast<double>(c) * 12345);
  }
}

// Per-round times. Medians are what to compare on a loaded machine: a descheduled round
// lands in the tail (p99) and the mean, not in the median.
struct Stats {
  double p50_ms, p99_ms, p50_ns;
};

Stats Time(const std::function<void()>& f, int rounds) {
  f();  // warm up (and let the output strings reach their size)
  std::vector<double> ns;
  for (int i = 0; i < rounds; ++i) {
    const auto start = Clock::now();
    f();
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count());
  }
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) {
    return ns[std::min(ns.size() - 1, static_cast<size_t>(q * ns.size()))];
  };
  return {at(0.50) / 1e6, at(0.99) / 1e6, at(0.50)};
}

long StatusKb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::strlen(key));
  }
  return -1;
}

size_t TextSamples(const std::string& text) {
  size_t n = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t nl = text.find('\n', i);
    if (text[i] != '#') ++n;
    i = nl + 1;
  }
  return n;
}

// One HTTP/1.1 GET on a new connection; the body's size, or -1 (not 200, or an error).
long Get(const std::string& url, const std::string& headers) {
  // http://HOST:PORT/PATH, HOST an IPv4 address.
  const size_t host_start = url.find("://") + 3;
  const size_t colon = url.find(':', host_start);
  const size_t slash = url.find('/', colon);
  const std::string host = url.substr(host_start, colon - host_start);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(url.c_str() + colon + 1)));
  inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  nvmeof::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0 || connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return -1;
  }
  const std::string req = "GET " + url.substr(slash) + " HTTP/1.1\r\nHost: " + host +
                          "\r\nConnection: close\r\n" + headers + "\r\n";
  if (write(fd.get(), req.data(), req.size()) != static_cast<ssize_t>(req.size())) return -1;
  std::string resp;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd.get(), buf, sizeof(buf));
    if (n <= 0) break;
    resp.append(buf, static_cast<size_t>(n));
  }
  const size_t body = resp.find("\r\n\r\n");
  if (resp.compare(0, 12, "HTTP/1.1 200") != 0 || body == std::string::npos) return -1;
  return static_cast<long>(resp.size() - body - 4);
}

constexpr char kAcceptProtobuf[] =
    "Accept: application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
    "encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3\r\n";
constexpr char kAcceptGzip[] = "Accept-Encoding: gzip\r\n";

int HttpCompare(int argc, char** argv) {
  const int rounds = std::atoi(argv[argc - 1]);
  std::vector<std::pair<std::string, std::string>> targets;
  for (int i = 2; i < argc - 1; ++i) {
    const std::string a = argv[i];
    targets.emplace_back(a.substr(0, a.find('=')), a.substr(a.find('=') + 1));
  }
  std::vector<std::vector<double>> ms(targets.size());
  std::vector<long> bytes(targets.size());
  for (size_t t = 0; t < targets.size(); ++t) bytes[t] = Get(targets[t].second, "");  // warm up
  for (int r = 0; r < rounds; ++r) {
    for (size_t t = 0; t < targets.size(); ++t) {  // interleaved: both see the same load
      const auto start = Clock::now();
      if (Get(targets[t].second, "") < 0) {
        std::fprintf(stderr, "scrape of %s failed\n", targets[t].second.c_str());
        return 1;
      }
      ms[t].push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
  }
  std::printf("%-28s %9s %9s %9s %11s %12s %12s\n", "exporter", "bytes", "p50 ms", "p99 ms",
              "scrapes/s", "mean ratio", "p50 ratio");
  double first_mean = 0, first_p50 = 0;
  for (size_t t = 0; t < targets.size(); ++t) {
    double total = 0;
    for (double x : ms[t]) total += x;
    std::sort(ms[t].begin(), ms[t].end());
    const double mean = total / rounds;
    const double p50 = ms[t][ms[t].size() / 2];
    if (t == 0) first_mean = mean, first_p50 = p50;
    std::printf("%-28s %9ld %9.2f %9.2f %11.0f %12.2f %12.2f\n", targets[t].first.c_str(), bytes[t],
                p50, ms[t][std::min(ms[t].size() - 1, ms[t].size() * 99 / 100)], 1000 / mean,
                mean / first_mean, p50 / first_p50);
  }
  return 0;
}

// The synthetic host as a collector: the series built fresh on each scrape from stored fine
// buckets, as the BPF collector builds them from its map snapshot.
class SyntheticHost : public nvmeof::Collector {
 public:
  SyntheticHost(std::vector<Fine> fines, int counters)
      : fines_(std::move(fines)), counters_(counters) {}
  std::string_view Name() const override { return "synthetic"; }
  bool Collect(nvmeof::MetricSink& out) override {
    Build(fines_, counters_, "native", &out);
    return true;
  }

 private:
  std::vector<Fine> fines_;
  int counters_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--http") return HttpCompare(argc, argv);
  const int histograms = argc > 1 ? std::atoi(argv[1]) : 450;
  const int counters = argc > 2 ? std::atoi(argv[2]) : 1000;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 200;
  std::printf(
      "synthetic host: %d histograms (16 classic buckets in text), %d counters; %d rounds "
      "per path; %u CPUs, load average %s\n",
      histograms, counters, rounds, std::thread::hardware_concurrency(), [] {
        static char buf[64] = "?";
        if (FILE* f = std::fopen("/proc/loadavg", "r")) {
          if (!std::fgets(buf, sizeof(buf), f)) buf[0] = 0;
          std::fclose(f);
          buf[std::strcspn(buf, " ")] = 0;
        }
        return buf;
      }());
  const auto fines = Draw(histograms);

  // 1. Serializers.
  std::printf("\n%-30s %10s %8s %9s %9s %10s %10s\n", "path", "bytes", "samples", "p50 ms",
              "p99 ms", "ns/sample", "ours/old");
  std::printf("%-30s %10s %8s %9s %9s %10s %10s\n", "", "", "", "", "", "(p50)", "(p50)");
  struct Row {
    const char* name;
    bool proto;
    const char* mode;  // native, classic, both
    bool ours, gzip;
  };
  const Row rows[] = {
      {"text TextSerializer (old)", false, "native", false, false},
      {"text ours", false, "native", true, false},
      {"text TextSerializer + gzip", false, "native", false, true},
      {"text ours + gzip", false, "native", true, true},
      {"protobuf native libprotobuf", true, "native", false, false},
      {"protobuf native ours", true, "native", true, false},
      {"protobuf native libpb + gzip", true, "native", false, true},
      {"protobuf native ours + gzip", true, "native", true, true},
      {"protobuf classic ours", true, "classic", true, false},
      {"protobuf both ours", true, "both", true, false},
  };
  double old_ns = 0;
  for (const auto& row : rows) {
    nvmeof::MetricSink sink;
    Build(fines, counters, row.mode, &sink);
    const auto& families = sink.families();
    const nvmeof::NativeLookup native = [&sink](size_t f, size_t m) { return sink.NativeOf(f, m); };
    std::string out;
    const auto stats = Time(
        [&] {
          if (row.proto && row.ours) {
            out.clear();
            nvmeof::AppendProtobuf(families, native, &out);
          } else if (row.proto) {
            out = nvmeof::test::SerializeProtobufMessages(families, native);
          } else if (row.ours) {
            out.clear();
            nvmeof::AppendText(families, &out);
          } else {
            std::ostringstream text;
            prometheus::TextSerializer().Serialize(text, families);
            out = text.str();
          }
          if (row.gzip) out = nvmeof::Gzip(out);
        },
        rounds);
    size_t samples = 0;
    if (!row.proto) {
      std::string text;
      nvmeof::AppendText(families, &text);
      samples = TextSamples(text);
    } else {
      for (const auto& f : families) samples += f.metric.size();  // one per series
    }
    if (!row.ours) old_ns = stats.p50_ns;
    char ratio[16] = "";
    if (row.ours && std::string(row.mode) == "native") {
      std::snprintf(ratio, sizeof(ratio), "%.3f", stats.p50_ns / old_ns);
    }
    std::printf("%-30s %10zu %8zu %9.2f %9.2f %10.1f %10s\n", row.name, out.size(), samples,
                stats.p50_ms, stats.p99_ms, stats.p50_ns / samples, ratio);
    if (row.proto && !row.gzip) {  // the two protobuf writers must agree byte for byte
      std::string ours;
      nvmeof::AppendProtobuf(families, native, &ours);
      if (ours != nvmeof::test::SerializeProtobufMessages(families, native)) {
        std::fprintf(stderr, "AppendProtobuf differs from libprotobuf's bytes\n");
        return 1;
      }
    }
  }

  // Histograms alone: ns per histogram (text: per 19-line classic histogram).
  std::printf("\n%-30s %12s %12s %10s   (p50)\n", "histograms alone", "old ns/hist", "ours ns/hist",
              "ours/old");
  {
    nvmeof::MetricSink sink;
    Build(fines, 0, "native", &sink);
    const auto& families = sink.families();
    const nvmeof::NativeLookup native = [&sink](size_t f, size_t m) { return sink.NativeOf(f, m); };
    std::string out;
    const double h = histograms;
    const double pb_old =
        Time([&] { out = nvmeof::test::SerializeProtobufMessages(families, native); }, rounds)
            .p50_ns /
        h;
    const double pb_ours = Time(
                               [&] {
                                 out.clear();
                                 nvmeof::AppendProtobuf(families, native, &out);
                               },
                               rounds)
                               .p50_ns /
                           h;
    const double text_old = Time(
                                [&] {
                                  std::ostringstream text;
                                  prometheus::TextSerializer().Serialize(text, families);
                                  out = text.str();
                                },
                                rounds)
                                .p50_ns /
                            h;
    const double text_ours = Time(
                                 [&] {
                                   out.clear();
                                   nvmeof::AppendText(families, &out);
                                 },
                                 rounds)
                                 .p50_ns /
                             h;
    std::printf("%-30s %12.0f %12.0f %10.3f\n", "protobuf native", pb_old, pb_ours,
                pb_ours / pb_old);
    std::printf("%-30s %12.0f %12.0f %10.3f\n", "text (19 samples each)", text_old, text_ours,
                text_ours / text_old);
  }

  // 2. Served for real.
  std::vector<std::unique_ptr<nvmeof::Collector>> collectors;
  collectors.push_back(std::make_unique<SyntheticHost>(fines, counters));
  nvmeof::Scraper host(std::move(collectors));
  nvmeof::WebOptions web;
  web.listen_address = "127.0.0.1:0";
  nvmeof::WebServer server(web, nvmeof::WebConfig{}, [&](double timeout, nvmeof::Exposition f) {
    return host.Scrape(std::chrono::duration_cast<nvmeof::Scraper::Duration>(
                           std::chrono::duration<double>(timeout)),
                       f);
  });
  std::string error;
  if (!server.Start(&error)) {
    std::fprintf(stderr, "web server: %s\n", error.c_str());
    return 1;
  }
  server.SetReady(true);
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/metrics";
  std::printf("\n%-30s %10s %9s %9s   (HTTP, collect + serialize + send, %d rounds)\n", "served",
              "bytes", "p50 ms", "p99 ms", rounds);
  {  // the share of collecting: building the series and the scraper's copy of them
    const auto stats = Time([&] { (void)host.CollectAll(std::chrono::seconds(10)); }, rounds);
    std::printf("%-30s %10s %9.2f %9.2f\n", "(collect only, no HTTP)", "", stats.p50_ms,
                stats.p99_ms);
  }
  {  // what a run's created timestamps at counter resets cost (exporter/counter_resets.h): the
     // collector's Collect alone, then Mark on its sink, each series known and not reset (the
     // steady state), side by side in this run
    SyntheticHost one(fines, counters);
    nvmeof::MetricSink sink;
    one.Collect(sink);
    nvmeof::CounterResets resets;
    double at = 1;
    resets.Mark(&sink, at);
    const auto build = Time(
        [&] {
          nvmeof::MetricSink s;
          one.Collect(s);
        },
        rounds);
    const auto mark = Time([&] { resets.Mark(&sink, at += 15); }, rounds);
    std::printf("%-30s %10zu %9.3f %9.3f   (%.1f%% of the collector's own run)\n",
                "(counter resets: Mark, series)", resets.tracked(), mark.p50_ms, mark.p99_ms,
                100 * mark.p50_ns / build.p50_ns);
  }
  for (const auto& format : std::vector<std::pair<const char*, std::string>>{
           {"text", ""},
           {"text + gzip", kAcceptGzip},
           {"protobuf native", kAcceptProtobuf},
           {"protobuf native + gzip", std::string(kAcceptProtobuf) + kAcceptGzip}}) {
    long bytes = 0;
    const auto stats = Time(
        [&] {
          bytes = Get(url, format.second);
          if (bytes < 0) {
            std::fprintf(stderr, "scrape failed\n");
            std::exit(1);
          }
        },
        rounds);
    std::printf("%-30s %10ld %9.2f %9.2f\n", format.first, bytes, stats.p50_ms, stats.p99_ms);
  }
  server.Stop();
  std::printf("\nRSS of this process (model, writers, server): now %.1f MiB, peak %.1f MiB\n",
              StatusKb("VmRSS:") / 1024.0, StatusKb("VmHWM:") / 1024.0);
  return 0;
}
