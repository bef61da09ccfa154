/* Latency histogram bucket math, shared by the BPF programs and the exporter (C and C++).
 *
 * Buckets are log-linear: every power of two of nanoseconds is split into 8 buckets whose
 * bounds are 1/64ths of the octave's base, chosen so that every bucket is at most 10% wider
 * than its lower bound (upper/lower <= 1.1). histogram_quantile() picks the bucket holding the
 * quantile and interpolates inside it; the true value lies in the same bucket, so the estimate
 * is off by at most one bucket width: <= 10% of the true value. Plain log2 buckets are off by
 * up to 2x, and 8 equal sub-buckets by up to 12.5% (the first one of each octave).
 *
 *   bucket 0                      [0, 2^MIN_SHIFT) ns (128 ns)
 *   bucket 1 + (e - MIN)*8 + g    [2^(e-6) * (64 + B[g]), 2^(e-6) * (64 + B[g+1])) ns,
 *                                 e = floor(log2(v)), B = {0,6,13,20,28,37,47,58,64}
 *   bucket BUCKETS-1              [2^MAX_SHIFT, inf) ns (17.2 s)
 *
 * Index computation uses only shifts and compares (BPF has no count-leading-zeros).
 */
#ifndef NVMEOF_BPF_HIST_H_
#define NVMEOF_BPF_HIST_H_

#define NVMEOF_HIST_MIN_SHIFT 7
#define NVMEOF_HIST_MAX_SHIFT 34
#define NVMEOF_HIST_GROUPS 8
#define NVMEOF_HIST_BUCKETS \
  (2 + (NVMEOF_HIST_MAX_SHIFT - NVMEOF_HIST_MIN_SHIFT) * NVMEOF_HIST_GROUPS)

/* Start of group g (0..8) within an octave, in 1/64ths above the base (64/64). */
#define NVMEOF_HIST_GROUP_START(g) \
  ((g) == 0   ? 0                  \
   : (g) == 1 ? 6                  \
   : (g) == 2 ? 13                 \
   : (g) == 3 ? 20                 \
   : (g) == 4 ? 28                 \
   : (g) == 5 ? 37                 \
   : (g) == 6 ? 47                 \
   : (g) == 7 ? 58                 \
              : 64)

static inline unsigned int nvmeof_log2_u64(unsigned long long v) {
  unsigned int r = 0;
  if (v >> 32) {
    v >>= 32;
    r += 32;
  }
  if (v >> 16) {
    v >>= 16;
    r += 16;
  }
  if (v >> 8) {
    v >>= 8;
    r += 8;
  }
  if (v >> 4) {
    v >>= 4;
    r += 4;
  }
  if (v >> 2) {
    v >>= 2;
    r += 2;
  }
  if (v >> 1) {
    r += 1;
  }
  return r;
}

/* Bucket index of a latency in nanoseconds. */
static inline unsigned int nvmeof_hist_index(unsigned long long ns) {
  unsigned int e, m, g;
  if (ns < (1ULL << NVMEOF_HIST_MIN_SHIFT)) return 0;
  e = nvmeof_log2_u64(ns);
  if (e >= NVMEOF_HIST_MAX_SHIFT) return NVMEOF_HIST_BUCKETS - 1;
  m = (unsigned int)(ns >> (e - 6)) & 63; /* 6 bits below the leading one */
  g = (m >= 6) + (m >= 13) + (m >= 20) + (m >= 28) + (m >= 37) + (m >= 47) + (m >= 58);
  return 1 + (e - NVMEOF_HIST_MIN_SHIFT) * NVMEOF_HIST_GROUPS + g;
}

/* Exclusive upper bound of bucket i in nanoseconds; 0 for the overflow bucket (+Inf). */
static inline unsigned long long nvmeof_hist_upper_ns(unsigned int i) {
  unsigned int e, g;
  if (i == 0) return 1ULL << NVMEOF_HIST_MIN_SHIFT;
  if (i >= NVMEOF_HIST_BUCKETS - 1) return 0;
  e = NVMEOF_HIST_MIN_SHIFT + (i - 1) / NVMEOF_HIST_GROUPS;
  g = (i - 1) % NVMEOF_HIST_GROUPS;
  return (unsigned long long)(64 + NVMEOF_HIST_GROUP_START(g + 1)) << (e - 6);
}

#endif /* NVMEOF_BPF_HIST_H_ */
