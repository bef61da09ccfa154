/* Latency histogram bucket math, shared by the BPF programs and the exporter (C and C++).
 *
 * Buckets sit on the bounds of Prometheus native histograms, schema 3: native bucket j holds
 * values in (2^((j-1)/8), 2^(j/8)] SECONDS, 8 buckets per power of two. The exporter serves
 * the in-kernel counts as native buckets without re-bucketing: native index j = i - 184 for
 * in-kernel bucket i. Measured in nanoseconds the bounds are 1e9 * 2^(j/8) ns; since
 * 8*log2(1e9) = 239.1788..., every octave [2^e, 2^(e+1)) ns holds the same 8 edges at
 * 2^e * 2^((t + 0.1788...)/8), t = 0..7, and native index j = 8e + t - 239.
 *
 * 2^(k/8) is irrational, so the edges are integer thresholds on the 10 bits below the leading
 * one (mantissa m in [1024, 2048)): NVMEOF_HIST_Q(t) = round(1024 * 2^((t + 0.1788...)/8)).
 * The edge that the index math applies, Q(t) * 2^(e-10) ns, is within 0.023% (2.3e-4
 * relative) of the exact 1e9 * 2^(j/8) ns; only a value that close to an edge can land in the
 * neighbouring bucket. tests/unit/bpf_histogram_test.cc checks every edge.
 *
 *   bucket 0                      zero bucket: [0, 2^-23 s] (<= 119.2 ns; native zero
 *                                 bucket with zero_threshold 2^-23 s, the schema-3 bound
 *                                 just below 128 ns)
 *   bucket i, 1 <= i <= 216       native bucket j = i - 184: (2^((j-1)/8), 2^(j/8)] s,
 *                                 119.2 ns .. 16 s
 *   bucket 217                    overflow: (16 s, inf)
 *
 * Index computation uses only shifts, compares and constants (BPF has no count-leading-zeros),
 * no loops.
 */
#ifndef NVMEOF_BPF_HIST_H_
#define NVMEOF_BPF_HIST_H_

#define NVMEOF_HIST_SCHEMA 3
#define NVMEOF_HIST_GROUPS 8 /* 2^schema buckets per octave */
#define NVMEOF_HIST_BUCKETS 218
/* Native schema-3 index of in-kernel bucket i (1 .. BUCKETS-2) is i - NVMEOF_HIST_NATIVE_OFFSET. */
#define NVMEOF_HIST_NATIVE_OFFSET 184
/* Zero bucket: native indices <= -184, i.e. values <= 2^-23 s. */
#define NVMEOF_HIST_ZERO_THRESHOLD_LOG2_S (-23)
/* Largest finite bound: native index 32, 2^(32/8) = 16 s. */
#define NVMEOF_HIST_MAX_NATIVE_INDEX (NVMEOF_HIST_BUCKETS - 2 - NVMEOF_HIST_NATIVE_OFFSET)
/* Bucket index = 8e + t - 55 for a value in octave e (2^e <= ns < 2^(e+1)) with t edges of the
 * octave at or below it: 55 = 239 - NVMEOF_HIST_NATIVE_OFFSET. */
#define NVMEOF_HIST_INDEX_BIAS 55

/* Edge t (0..7) of every octave, in 1/1024ths of the octave's base. */
#define NVMEOF_HIST_Q(t) \
  ((t) == 0   ? 1040     \
   : (t) == 1 ? 1134     \
   : (t) == 2 ? 1237     \
   : (t) == 3 ? 1349     \
   : (t) == 4 ? 1471     \
   : (t) == 5 ? 1604     \
   : (t) == 6 ? 1749     \
              : 1907)

/* floor(log2(v)) for v > 0: four halving steps, then the top nibble's log2 (2 bits each of
 * 0xffffaa50, nibble 0 at the bottom). */
static inline unsigned int nvmeof_log2_u64(unsigned long long v) {
  unsigned long long r = 0;
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
  return (unsigned int)(r + ((0xffffaa50U >> (2 * (v & 15))) & 3));
}

/* Bucket index of a latency in nanoseconds. The octave's edges Q(t) on the mantissa m
 * (1024..2047) are at least 94 apart, so each 64-wide bin b = m / 64 - 16 holds at most one: t
 * is the edges below the bin (4 bits of NVMEOF_HIST_BELOW each), plus one if m % 64 reaches the
 * bin's own edge (a byte of NVMEOF_HIST_OFF_LO/HI each; 64: none). The last two bins, above all
 * eight edges, say 7 + an edge at 0, so t <= 8 stays visible to the verifier. Constants, not
 * tables: no .rodata, no loads; a shift where there were eight compares, for every span of
 * every sampled command. tests/unit/bpf_histogram_test.cc checks every mantissa. */
#define NVMEOF_HIST_BELOW 0x7777665554332210ULL
#define NVMEOF_HIST_OFF_LO 0x403f054015402e10ULL
#define NVMEOF_HIST_OFF_HI 0x0000334015400440ULL
static inline unsigned int nvmeof_hist_index(unsigned long long ns) {
  /* 64-bit: no zero-extension between the steps in BPF */
  unsigned long long e, m, b, i;
  if (ns < 64) return 0; /* octave 6 ends the zero bucket; below it is all zero bucket */
  e = nvmeof_log2_u64(ns);
  if (e >= 34) return NVMEOF_HIST_BUCKETS - 1;   /* 17.2 s and up: past 16 s */
  m = e >= 10 ? ns >> (e - 10) : ns << (10 - e); /* 1024..2047 */
  b = (m >> 6) & 15;
  i = 8 * e + ((NVMEOF_HIST_BELOW >> (4 * b)) & 7) +
      ((m & 63) >= (((b < 8 ? NVMEOF_HIST_OFF_LO : NVMEOF_HIST_OFF_HI) >> (8 * (b & 7))) & 0xff));
  if (i <= NVMEOF_HIST_INDEX_BIAS) return 0;
  i -= NVMEOF_HIST_INDEX_BIAS;
  return i >= NVMEOF_HIST_BUCKETS - 1 ? NVMEOF_HIST_BUCKETS - 1 : (unsigned int)i;
}

/* Smallest latency in ns that lands above bucket i (the integer edge the index math applies
 * at the top of bucket i); 0 for the overflow bucket (+Inf). */
static inline unsigned long long nvmeof_hist_edge_ns(unsigned int i) {
  unsigned int e, t;
  if (i >= NVMEOF_HIST_BUCKETS - 1) return 0;
  e = (i + NVMEOF_HIST_INDEX_BIAS) / 8;
  t = (i + NVMEOF_HIST_INDEX_BIAS) % 8;
  return (((unsigned long long)NVMEOF_HIST_Q(t) << e) + 1023) >> 10;
}

#endif /* NVMEOF_BPF_HIST_H_ */
