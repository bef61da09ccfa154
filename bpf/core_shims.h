/* CO-RE shims: struct layouts that changed across kernels, resolved at load time by libbpf.
 *
 * Every reader takes `direct`: true in tp_btf/fentry programs, where the verifier knows the BTF
 * type of the pointer and plain loads are allowed (cheapest), false in raw_tp/kprobe programs,
 * which must go through bpf_probe_read_kernel (BPF_CORE_READ). Callers pass a literal, so the
 * other branch is compiled out. */
#ifndef NVMEOF_BPF_CORE_SHIMS_H_
#define NVMEOF_BPF_CORE_SHIMS_H_

#include <bpf/bpf_core_read.h>

#include "sample.h"

/* Before 5.17 the request carried its gendisk; later kernels only have rq->q->disk. */
struct request___old {
  struct gendisk* rq_disk;
} __attribute__((preserve_access_index));

#define NVMEOF_READ(direct, src, field) ((direct) ? (src)->field : BPF_CORE_READ((src), field))

/* gendisk.diskseq (5.15, "block: add a sequence number to disks"): a number the kernel gives
 * each disk it makes, never reused before a reboot. */
struct gendisk___diskseq {
  __u64 diskseq;
} __attribute__((preserve_access_index));

#define NVMEOF_DISK_KEY(disk, read)                               \
  (bpf_core_field_exists(((struct gendisk___diskseq*)0)->diskseq) \
       ? (__u32)read((struct gendisk___diskseq*)(disk), diskseq)  \
       : ((__u32)read((disk), major) << 20) | (__u32)read((disk), first_minor))
#define NVMEOF_PLAIN_READ(src, field) ((src)->field)

/* The disk of a request as the block series key it (nvmeof_block_key.disk): its diskseq where
 * the kernel has one, so a disk made anew under an old dev_t (a reconnected NVMe-oF namespace)
 * starts its own counts; before 5.15 its dev_t, major << 20 | minor (what block tracepoints
 * print). 0 if the request has no disk. */
static __always_inline __u32 nvmeof_rq_disk_key(struct request* rq, bool direct) {
  struct gendisk* disk;
  if (bpf_core_field_exists(((struct request___old*)0)->rq_disk)) {
    disk = BPF_CORE_READ((struct request___old*)rq, rq_disk);
    return disk ? NVMEOF_DISK_KEY(disk, BPF_CORE_READ) : 0;
  }
  if (direct) {
    disk = rq->q->disk;
    return disk ? NVMEOF_DISK_KEY(disk, NVMEOF_PLAIN_READ) : 0;
  }
  disk = BPF_CORE_READ(rq, q, disk);
  return disk ? NVMEOF_DISK_KEY(disk, BPF_CORE_READ) : 0;
}

/* REQ_OP_* occupy the low 8 bits of cmd_flags; READ=0 WRITE=1 FLUSH=2 DISCARD=3 since 4.10. */
static __always_inline __u32 nvmeof_rq_op(struct request* rq, bool direct) {
  __u32 op = NVMEOF_READ(direct, rq, cmd_flags) & 0xff;
  return op <= 3 ? op : 4;
}

/* log2(lbs / 512) for a logical block size that is a power of 2 from 512 B to 64 KiB, without
 * a branch per candidate size: the bits set in lbs / 512 - 1, counted. */
static __always_inline __u32 nvmeof_lbs_shift(__u32 lbs) {
  __u32 v = ((lbs >> 9) - 1) & 0x7f;
  v = v - ((v >> 1) & 0x55);
  v = (v & 0x33) + ((v >> 2) & 0x33);
  return (v + (v >> 4)) & 0x0f;
}

/* Whether a host request is one of the 1 in N (sample.h): by its start in logical blocks (the
 * command's SLBA) and its tag (the command id's low 12 bits), so the host picks the commands
 * the target picks from the wire, and the two sides' flight records pair up. Every host hook
 * reaches the request, so each decides alone; the same answer for plain loads (direct) and
 * probed reads, as a request's hooks may be of either kind (5.10: tp_btf block tracepoints,
 * raw_tp nvme ones). The block size's read is sized by CO-RE: an unsigned short before 5.19's
 * queue_limits rework, unsigned int since. */
static __always_inline bool nvmeof_rq_picked(struct request* rq, bool direct, __u64 limit) {
  struct request_queue* q;
  __u32 lbs = 0, tag;
  __u64 sector;
  if (limit == ~0ULL) return true;
  if (direct) {
    sector = rq->__sector;
    tag = (__u32)rq->tag;
    lbs = rq->q->limits.logical_block_size;
  } else {
    sector = BPF_CORE_READ(rq, __sector);
    tag = (__u32)BPF_CORE_READ(rq, tag);
    q = BPF_CORE_READ(rq, q);
    if (q)
      bpf_probe_read_kernel(&lbs, bpf_core_field_size(q->limits.logical_block_size),
                            __builtin_preserve_access_index(&q->limits.logical_block_size));
  }
  /* 512 B and 4 KiB blocks, nearly every disk, skip the bit count: every hook of every request
   * pays for the pick (tests/bench/README.md, Round 15). */
  return nvmeof_picked_cmd(sector >> (lbs == 512    ? 0
                                      : lbs == 4096 ? 3
                                                    : nvmeof_lbs_shift(lbs)),
                           tag, limit);
}

/* Module types (nvme-core, nvme-rdma, nvme-tcp, nvmet, nvmet-rdma, nvmet-tcp, ib_core) are not in
 * the build machine's vmlinux.h. Only the fields the programs read are declared; libbpf finds
 * their offsets in the running kernel's module BTF at load time. Field names checked against
 * the module BTF of Debian 6.1.0-57 and 6.12.117. */
struct ib_cqe___nv {
  void* done;
} __attribute__((preserve_access_index));

struct ib_wc___nv {
  struct ib_cqe___nv* wr_cqe; /* in an anonymous union with wr_id */
} __attribute__((preserve_access_index));

struct nvme_rdma_qe___nv {
  struct ib_cqe___nv cqe;
} __attribute__((preserve_access_index));

struct nvme_ctrl___nv {
  unsigned short cntlid;
} __attribute__((preserve_access_index));

/* nvme_req(rq): the start of every NVMe driver's per-request data (blk_mq_rq_to_pdu()). */
struct nvme_request___nv {
  void* cmd; /* struct nvme_command */
  struct nvme_ctrl___nv* ctrl;
} __attribute__((preserve_access_index));

/* blk_mq_rq_to_pdu(): the driver's per-request data follows struct request. */
struct nvme_rdma_request___nv {
  struct nvme_rdma_qe___nv sqe;
} __attribute__((preserve_access_index));

struct nvmet_subsys___nv {
  char* subsysnqn;
} __attribute__((preserve_access_index));

struct nvmet_ctrl___nv {
  struct nvmet_subsys___nv* subsys;
  unsigned short cntlid;
  char hostnqn[224]; /* NVMF_NQN_FIELD_LEN (256) since 5.x; only its offset is used */
} __attribute__((preserve_access_index));

struct nvmet_sq___nv {
  struct nvmet_ctrl___nv* ctrl;
  unsigned short qid;
} __attribute__((preserve_access_index));

struct nvmf_disc_rsp_page_entry___nv {
  unsigned char trtype;
  unsigned short portid;
} __attribute__((preserve_access_index));

struct nvmet_port___nv {
  struct nvmf_disc_rsp_page_entry___nv disc_addr;
} __attribute__((preserve_access_index));

struct nvmet_req___nv {
  void* cmd; /* struct nvme_command: the opcode is its first byte (NVMe base spec) */
  struct nvmet_sq___nv* sq;
  unsigned long transfer_len;
  struct nvmet_port___nv* port;
} __attribute__((preserve_access_index));

struct nvmet_rdma_rsp___nv {
  struct ib_cqe___nv read_cqe;
  struct nvmet_req___nv req;
} __attribute__((preserve_access_index));

struct nvmet_tcp_cmd___nv {
  struct nvmet_req___nv req;
} __attribute__((preserve_access_index));

struct nvmet_tcp_queue___nv {
  struct nvmet_sq___nv nvme_sq;
} __attribute__((preserve_access_index));

#endif /* NVMEOF_BPF_CORE_SHIMS_H_ */
