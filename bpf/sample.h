/* Which commands are timed (bpf.sample_every, `record -s N`): 1 in N, picked by a hash of two
 * fields that every hook of a command reads from its own arguments, so that each hook decides
 * alone and an unsampled command costs no map lookup. Shared by the BPF objects and the
 * exporter, which turns N into the limit the objects compare against (their rodata). */
#ifndef NVMEOF_BPF_SAMPLE_H_
#define NVMEOF_BPF_SAMPLE_H_

/* Derived from sample_every: the hash limit of 1 in sample_every. A hash at or below it is picked.
 * ~0 picks every command. */
static inline unsigned long long nvmeof_sample_every_hash_limit(unsigned int sample_every) {
  return sample_every <= 1 ? ~0ULL : ~0ULL / sample_every;
}

/* splitmix64's finalizer over the two fields, compared with the limit: its top bits, where a
 * multiply mixes in every bit below, decide. A compare, not `h % sample_every`: a 64-bit division
 * at each of a command's dozen hooks costs 20-90 cycles on x86. */
static inline int nvmeof_picked(unsigned long long a, unsigned long long b,
                                unsigned long long limit) {
  unsigned long long h = a * 0x9E3779B97F4A7C15ULL ^ b * 0xC2B2AE3D27D4EB4FULL;
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ULL;
  return h <= limit;
}

/* An NVMe command by its wire fields: the starting LBA and the command id's low 12 bits, which
 * are the host's request tag (nvme_cid(); the top 4 are a generation counter, 5.14+). So a
 * Linux host can decide a read or write from its request alone, with no read of the command it
 * built (record.bpf.c host_pick), and pick what the target picks from the wire. */
#define NVMEOF_CID_TAG_MASK 0x0fffu
static inline int nvmeof_picked_cmd(unsigned long long slba, unsigned int cid,
                                    unsigned long long limit) {
  return nvmeof_picked(slba, cid & NVMEOF_CID_TAG_MASK, limit);
}

#endif /* NVMEOF_BPF_SAMPLE_H_ */
