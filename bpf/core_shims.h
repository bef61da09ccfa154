/* CO-RE shims: struct layouts that changed across kernels, resolved at load time by libbpf.
 *
 * Every reader takes `direct`: true in tp_btf/fentry programs, where the verifier knows the BTF
 * type of the pointer and plain loads are allowed (cheapest), false in raw_tp/kprobe programs,
 * which must go through bpf_probe_read_kernel (BPF_CORE_READ). Callers pass a literal, so the
 * other branch is compiled out. */
#ifndef NVMEOF_BPF_CORE_SHIMS_H_
#define NVMEOF_BPF_CORE_SHIMS_H_

#include <bpf/bpf_core_read.h>

/* Before 5.17 the request carried its gendisk; later kernels only have rq->q->disk. */
struct request___old {
  struct gendisk* rq_disk;
} __attribute__((preserve_access_index));

#define NVMEOF_READ(direct, src, field) ((direct) ? (src)->field : BPF_CORE_READ((src), field))

/* dev_t of the whole disk (what block tracepoints print), 0 if the request has none. */
static __always_inline __u32 nvmeof_rq_devt(struct request* rq, bool direct) {
  struct gendisk* disk;
  if (bpf_core_field_exists(((struct request___old*)0)->rq_disk)) {
    disk = BPF_CORE_READ((struct request___old*)rq, rq_disk);
    if (!disk) return 0;
    return ((__u32)BPF_CORE_READ(disk, major) << 20) | (__u32)BPF_CORE_READ(disk, first_minor);
  }
  if (direct) {
    disk = rq->q->disk;
    if (!disk) return 0;
    return ((__u32)disk->major << 20) | (__u32)disk->first_minor;
  }
  disk = BPF_CORE_READ(rq, q, disk);
  if (!disk) return 0;
  return ((__u32)BPF_CORE_READ(disk, major) << 20) | (__u32)BPF_CORE_READ(disk, first_minor);
}

/* REQ_OP_* occupy the low 8 bits of cmd_flags; READ=0 WRITE=1 FLUSH=2 DISCARD=3 since 4.10. */
static __always_inline __u32 nvmeof_rq_op(struct request* rq, bool direct) {
  __u32 op = NVMEOF_READ(direct, rq, cmd_flags) & 0xff;
  return op <= 3 ? op : 4;
}

#endif /* NVMEOF_BPF_CORE_SHIMS_H_ */
