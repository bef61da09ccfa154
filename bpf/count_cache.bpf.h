/* The BPF side of count_cache.h: a series' exact count without a hash lookup. A hash lookup
 * hashes the whole key and walks a bucket, about 150 instructions per command at each counting
 * hook; a slot costs a multiply, one inlined array lookup and a compare. */
#ifndef NVMEOF_BPF_COUNT_CACHE_BPF_H_
#define NVMEOF_BPF_COUNT_CACHE_BPF_H_

#include "count_cache.h"

/* The count of the `words`-word key `key` in the slot array `slots`, claiming its slot if free;
 * 0 when another key owns the slot (or is claiming it): the caller counts in its hash then. The
 * claim is a compare-and-swap because a program can interrupt another on the same CPU. */
static __always_inline __u64* count_slot(void* slots, const __u64* key, int words) {
  struct nvmeof_count_slot* s;
  __u64 h = key[0] * 0x9E3779B97F4A7C15ULL, tag;
  __u32 i;
  if (words > 1) h ^= key[1] * 0xC2B2AE3D27D4EB4FULL;
  if (words > 2) h ^= key[2] * 0x165667B19E3779F9ULL;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  i = (__u32)(h >> (64 - NVMEOF_COUNT_SLOT_BITS));
  tag = h | 1;
  s = bpf_map_lookup_elem(slots, &i);
  if (!s) return 0;
  if (s->tag != tag) {
    if (s->tag || __sync_val_compare_and_swap(&s->tag, 0, 2) != 0) return 0;
    s->key[0] = key[0];
    s->key[1] = words > 1 ? key[1] : 0;
    s->key[2] = words > 2 ? key[2] : 0;
    s->count = 0;
    __sync_lock_test_and_set(&s->tag, tag); /* after the key, for a reader on this CPU */
  }
  if (s->key[0] != key[0] || (words > 1 && s->key[1] != key[1]) ||
      (words > 2 && s->key[2] != key[2]))
    return 0;
  return &s->count;
}

#endif /* NVMEOF_BPF_COUNT_CACHE_BPF_H_ */
