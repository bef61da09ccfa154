/* Map keys and values of block.bpf.c, shared with the exporter (C and C++). */
#ifndef NVMEOF_BPF_BLOCK_MAPS_H_
#define NVMEOF_BPF_BLOCK_MAPS_H_

#include "hist.h"

/* Request ops as exported in the `op` label. */
enum nvmeof_block_op {
  NVMEOF_OP_READ = 0,
  NVMEOF_OP_WRITE = 1,
  NVMEOF_OP_FLUSH = 2,
  NVMEOF_OP_DISCARD = 3,
  NVMEOF_OP_OTHER = 4,
  NVMEOF_OP_COUNT = 5,
};

/* Stages of one request: allocated -> issued to the driver -> completed. */
enum nvmeof_block_stage {
  NVMEOF_STAGE_QUEUE = 0,  /* rq->start_time_ns -> block_rq_issue */
  NVMEOF_STAGE_DEVICE = 1, /* block_rq_issue -> block_rq_complete */
  NVMEOF_STAGE_TOTAL = 2,  /* rq->start_time_ns -> block_rq_complete */
  NVMEOF_STAGE_COUNT = 3,
};

/* Per-CPU event counters (index into the `counters` array map). */
enum nvmeof_block_counter {
  NVMEOF_CTR_INFLIGHT_EVICTED = 0, /* an issue timestamp was overwritten: its request untimed */
  NVMEOF_CTR_MAP_FULL = 1,         /* a new (device, op) did not fit into block_hists */
  NVMEOF_CTR_COUNT = 2,
};

struct nvmeof_block_key {
  unsigned int disk; /* the disk's diskseq (5.15+), else its dev_t (core_shims.h) */
  unsigned int op;   /* enum nvmeof_block_op */
};

/* The key as one word, for its count slot (count_cache.h): disk low, op high. */
static inline unsigned long long nvmeof_block_key_word(const struct nvmeof_block_key* k) {
  return (unsigned long long)k->op << 32 | k->disk;
}

struct nvmeof_block_hist {
  unsigned long long requests; /* every completed request, sampled or not */
  unsigned long long count[NVMEOF_STAGE_COUNT];
  unsigned long long sum_ns[NVMEOF_STAGE_COUNT];
  unsigned long long buckets[NVMEOF_STAGE_COUNT][NVMEOF_HIST_BUCKETS];
};

/* In-flight issue timestamps: a set-associative table keyed by the request pointer, 4 ways
 * per 64-byte set. Array lookups are inlined by the verifier and take no lock, unlike a hash
 * map update per I/O. A full set evicts one way (counted as NVMEOF_CTR_INFLIGHT_EVICTED). */
#define NVMEOF_INFLIGHT_WAYS 4
#define NVMEOF_INFLIGHT_SET_BITS 12
#define NVMEOF_INFLIGHT_SETS (1U << NVMEOF_INFLIGHT_SET_BITS)

struct nvmeof_inflight_way {
  unsigned long long rq; /* request pointer; 0 = free */
  unsigned long long issue_ns;
};

struct nvmeof_inflight_set {
  struct nvmeof_inflight_way way[NVMEOF_INFLIGHT_WAYS];
};

#endif /* NVMEOF_BPF_BLOCK_MAPS_H_ */
