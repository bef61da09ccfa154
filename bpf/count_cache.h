/* Exact per-series counts in front of a per-CPU hash: a per-CPU array of slots, each owned by
 * one series key for the object's life (count_cache.bpf.h). A count lands in a slot its key
 * owns (one of NVMEOF_COUNT_WAYS from its hash's), or in the hash when other keys own those;
 * userspace adds them by key, and since each only grows, so does the sum. Shared by the BPF
 * objects and their loaders. */
#ifndef NVMEOF_BPF_COUNT_CACHE_H_
#define NVMEOF_BPF_COUNT_CACHE_H_

#define NVMEOF_COUNT_KEY_WORDS 3 /* the largest key: struct nvmeof_series (24 bytes) */

/* tag: 0 free; 2 being claimed; odd: owned (the key's hash | 1). Userspace reads odd ones. */
struct nvmeof_count_slot {
  unsigned long long tag;
  unsigned long long key[NVMEOF_COUNT_KEY_WORDS];
  unsigned long long count;
};

#define NVMEOF_COUNT_SLOT_BITS 7 /* 128 slots x 40 bytes = 5 KiB per CPU and object */
#define NVMEOF_COUNT_SLOTS (1U << NVMEOF_COUNT_SLOT_BITS)
#define NVMEOF_COUNT_WAYS 4 /* slots a key may take, from its hash's on (count_cache.bpf.h) */

#endif /* NVMEOF_BPF_COUNT_CACHE_H_ */
