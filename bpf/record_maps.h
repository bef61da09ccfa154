/* The per-command record of bpf/record.bpf.c (`nvmeof_exporter record`, `top` without --from),
 * shared with userspace (loader/record_loader.cc), C and C++.
 *
 * record.bpf.c is an object of its own, with its own maps: loading it beside a running exporter
 * changes nothing the exporter counts (its programs attach to the same hooks as a second
 * program each; hooks run every attached program). Points and their order are nvmeof_maps.h's,
 * so a record's spans get the same stage names as /metrics. */
#ifndef NVMEOF_BPF_RECORD_H_
#define NVMEOF_BPF_RECORD_H_

#include "nvmeof_maps.h"

#define NVMEOF_RECORD_DISK_SIZE 32 /* DISK_NAME_LEN */

/* One command, written to the ring buffer when it ends on this node. */
struct nvmeof_record {
  unsigned long long ts[NVMEOF_POINTS]; /* per point (NVMEOF_HP_* / NVMEOF_TP_*), 0 = not passed */
  unsigned long long slba;              /* from the command (cdw10-11) */
  unsigned int bytes;                   /* host: the request's bytes; target: transfer_len */
  unsigned short nlb;                   /* 0's based, as on the wire (cdw12 bits 15:0) */
  unsigned short qid;                   /* host: hctx index + 1; target: sq->qid */
  unsigned short cid;                   /* command id, as on the wire */
  unsigned short cntlid;                /* controller id; 0 = not known */
  unsigned char role;                   /* enum nvmeof_role */
  unsigned char opcode;                 /* NVMe I/O opcode: 0x02 read, 0x01 write, ... */
  unsigned char trtype;                 /* NVMEOF_TRTYPE_*; 0 = PCIe (host without fabrics) */
  unsigned char pad[5];
  char disk[NVMEOF_RECORD_DISK_SIZE]; /* host: disk name (nvme0c1n1); target: "" */
  char nqn[NVMEOF_NQN_SIZE];          /* subsystem NQN; "" = not known */
  char hostnqn[NVMEOF_NQN_SIZE];      /* the host NQN of the command's controller; "" = not known */
};

/* Per-CPU counters (index into rec_counters). */
enum nvmeof_record_counter {
  NVMEOF_RCTR_LOST = 0, /* a record found no room in the ring buffer (the loader's Counters()
                           adds the program runs the kernel skipped: recursion) */
  NVMEOF_RCTR_INFLIGHT_FULL = 1, /* a sampled command found no room in the in-flight table */
  NVMEOF_RCTR_HOST_COMMANDS = 2, /* host I/O commands completed (every one, not sampled) */
  NVMEOF_RCTR_TARGET_COMMANDS = 3,
  NVMEOF_RCTR_COUNT = 4,
};

/* Exact command counts per group for `top` (every command, not only sampled ones). */
struct nvmeof_record_group {
  unsigned long long id; /* host: gendisk address; target: nvmet_subsys address */
  unsigned char role;
  unsigned char trtype; /* host: 0 in the kernel, the disk's from map rec_trtypes (the loader) */
  unsigned char opcode;
  unsigned char size; /* size class + 1 (as nvmeof_series.size): 4KiB 16KiB 64KiB 256KiB larger */
  unsigned int pad;
};

#define NVMEOF_RECORD_INFLIGHT_MAX 8192
#define NVMEOF_RECORD_GROUPS_MAX 1024
#define NVMEOF_RECORD_RING_DEFAULT (16u << 20) /* bytes; set at load (power of 2) */

#endif /* NVMEOF_BPF_RECORD_H_ */
