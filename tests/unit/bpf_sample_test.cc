// bpf/sample.h: the 1 in N pick every hook of a command makes on its own. What it must hold:
// about 1 in N of any realistic stream is picked (sequential and random sectors, one request
// reused at queue depth 1, many requests), 1 in 1 picks everything, and a command's pick does
// not depend on the generation bits of its id.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "bpf/sample.h"

namespace nvmeof {
namespace {

// Picks of `n` commands; fields(i, &a, &b) gives command i's two hashed fields.
template <typename F>
double PickedShare(unsigned every, int n, F fields) {
  const unsigned long long limit = nvmeof_sample_every_hash_limit(every);
  int picked = 0;
  for (int i = 0; i < n; ++i) {
    unsigned long long a = 0, b = 0;
    fields(i, &a, &b);
    picked += nvmeof_picked(a, b, limit) ? 1 : 0;
  }
  return static_cast<double>(picked) / n;
}

// Within 6 standard deviations of a binomial share 1/every over n draws.
void ExpectShare(double share, unsigned every, int n, const char* what) {
  const double p = 1.0 / every, sd = std::sqrt(p * (1 - p) / n);
  EXPECT_NEAR(share, p, 6 * sd) << what << ", 1 in " << every;
}

TEST(BpfSample, OneInOnePicksEverything) {
  EXPECT_EQ(nvmeof_sample_every_hash_limit(0), ~0ULL);
  EXPECT_EQ(nvmeof_sample_every_hash_limit(1), ~0ULL);
  EXPECT_EQ(PickedShare(1, 100000,
                        [](int i, auto* a, auto* b) {
                          *a = ~0ULL - static_cast<unsigned long long>(i);
                          *b = static_cast<unsigned long long>(i) * 977;
                        }),
            1.0);
}

TEST(BpfSample, OneInNOfRealisticStreams) {
  const int n = 400000;
  std::mt19937_64 rng(7);
  for (unsigned every : {2u, 8u, 16u, 64u, 1000u}) {
    // One request (QD1) reading sequentially: 4 KiB steps of its start sector.
    ExpectShare(PickedShare(every, n,
                            [](int i, auto* a, auto* b) {
                              *a = 2048 + 8ULL * i;
                              *b = 0xffff888104a3c000ULL;
                            }),
                every, n, "one request, sequential sectors");
    // 64 requests (struct request addresses 0x200 apart) at random 4 KiB sectors.
    ExpectShare(PickedShare(every, n,
                            [&rng](int i, auto* a, auto* b) {
                              *a = (rng() % (1ULL << 28)) * 8;
                              *b = 0xffff888104a3c000ULL + 0x200ULL * (i % 64);
                            }),
                every, n, "64 requests, random sectors");
    // Wire fields (record, target): sequential SLBA, command ids of 32 tags, generation 0-15.
    ExpectShare(PickedShare(every, n,
                            [](int i, auto* a, auto* b) {
                              *a = static_cast<unsigned long long>(i);
                              *b = (static_cast<unsigned long long>(i / 32 % 16) << 12) | (i % 32);
                            }),
                every, n, "wire fields, sequential LBAs");
  }
}

// An NVMe command's pick (record, the target) is the same from the wire (command id with the
// host's generation counter in its top 4 bits) and from the host's request (its tag), and still
// 1 in N where the tag does not vary: QD1 on one queue, sequential LBAs.
TEST(BpfSample, CommandPickIgnoresTheGenerationCounter) {
  const unsigned long long limit = nvmeof_sample_every_hash_limit(8);
  int differ = 0;
  for (unsigned long long slba = 0; slba < 100000; ++slba) {
    const unsigned tag = static_cast<unsigned>(slba % 17);
    const int from_request = nvmeof_picked_cmd(slba, tag, limit);
    for (unsigned gen = 0; gen < 16; ++gen)
      differ += nvmeof_picked_cmd(slba, gen << 12 | tag, limit) != from_request;
  }
  EXPECT_EQ(differ, 0);
  const int n = 400000;
  for (unsigned every : {8u, 64u}) {
    const unsigned long long l = nvmeof_sample_every_hash_limit(every);
    int picked = 0;
    for (int i = 0; i < n; ++i) picked += nvmeof_picked_cmd(2048 + static_cast<unsigned>(i), 5, l);
    ExpectShare(static_cast<double>(picked) / n, every, n, "one tag, sequential LBAs");
  }
}

// Every request gets its share: no request address is never (or always) picked.
TEST(BpfSample, EveryRequestGetsItsShare) {
  const unsigned every = 8;
  const int per_request = 20000;
  std::mt19937_64 rng(11);
  for (int r = 0; r < 32; ++r) {
    const unsigned long long addr = 0xffff888100000000ULL + 0x180ULL * r;
    ExpectShare(PickedShare(every, per_request,
                            [&](int, auto* a, auto* b) {
                              *a = (rng() % (1ULL << 30)) * 8;
                              *b = addr;
                            }),
                every, per_request, "one request of 32");
  }
}

}  // namespace
}  // namespace nvmeof
