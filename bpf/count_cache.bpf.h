/* The BPF side of count_cache.h: a series' exact count without a hash lookup. A hash lookup
 * hashes the whole key and walks a bucket, about 150 instructions per command at each counting
 * hook; a slot costs a multiply, one inlined array lookup and a compare. */
#ifndef NVMEOF_BPF_COUNT_CACHE_BPF_H_
#define NVMEOF_BPF_COUNT_CACHE_BPF_H_

#include "count_cache.h"

/* The count in slot `i` of `slots` if the `words`-word key `key` (hash tag `tag`) owns it,
 * claiming it if free; 0 when another key owns it or is claiming it. The claim is a
 * compare-and-swap because a program can interrupt another on the same CPU. */
static __always_inline __u64* count_slot_at(void* slots, __u32 i, __u64 tag, const __u64* key,
                                            int words) {
  struct nvmeof_count_slot* s = bpf_map_lookup_elem(slots, &i);
  if (!s) return 0;
  if (s->tag != tag) {
#ifndef NVMEOF_BPF_BEFORE_5_12
    if (s->tag || __sync_val_compare_and_swap(&s->tag, 0, 2) != 0) return 0;
#else
    /* Kernels before 5.12 have no BPF compare-and-swap or exchange (their verifier refuses a
     * program holding one: "BPF_STX uses reserved fields"), only the atomic add, whose result
     * a program cannot read. The slot is per-CPU, so only a program nested on this CPU can
     * race the claim, and it runs to its end inside it: the claimer adds 2 to a free tag and
     * owns the slot if the tag is 2 then. A nested claim that completed before the add leaves
     * its (odd) tag + 2: still odd, its key and count still read by userspace, the slot used
     * by neither afterwards (their counts go to the hash). */
    if (s->tag) return 0;
    __sync_fetch_and_add(&s->tag, 2);
    if (*(volatile __u64*)&s->tag != 2) return 0;
#endif
    s->key[0] = key[0];
    s->key[1] = words > 1 ? key[1] : 0;
    s->key[2] = words > 2 ? key[2] : 0;
    s->count = 0;
#ifndef NVMEOF_BPF_BEFORE_5_12
    __sync_lock_test_and_set(&s->tag, tag); /* after the key, for a reader on this CPU */
#else
    asm volatile("" ::: "memory"); /* the key first: a program nested here reads it */
    *(volatile __u64*)&s->tag = tag;
#endif
  }
  if (s->key[0] != key[0] || (words > 1 && s->key[1] != key[1]) ||
      (words > 2 && s->key[2] != key[2]))
    return 0;
  return &s->count;
}

/* The count of the `words`-word key `key` in the slot array `slots`: in the first of the
 * NVMEOF_COUNT_WAYS slots from its hash's that it owns or can claim; 0 when others own all of
 * them: the caller counts in its hash then. Direct-mapped (one slot), 128 slots put a second
 * series in the hash for about one node in ten with 6 series, and that series then paid a hash
 * lookup (about 300 instructions) on every command. A key claimed in two slots on one CPU (a
 * claim interrupted there) is counted in both: userspace adds slots by key. */
static __always_inline __u64* count_slot(void* slots, const __u64* key, int words) {
  __u64 h = key[0] * 0x9E3779B97F4A7C15ULL, tag, *c;
  __u32 i;
  int way;
  if (words > 1) h ^= key[1] * 0xC2B2AE3D27D4EB4FULL;
  if (words > 2) h ^= key[2] * 0x165667B19E3779F9ULL;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  i = (__u32)(h >> (64 - NVMEOF_COUNT_SLOT_BITS));
  tag = h | 1;
#pragma unroll
  for (way = 0; way < NVMEOF_COUNT_WAYS; way++) {
    c = count_slot_at(slots, (i + way) & (NVMEOF_COUNT_SLOTS - 1), tag, key, words);
    if (c) return c;
  }
  return 0;
}

#endif /* NVMEOF_BPF_COUNT_CACHE_BPF_H_ */
