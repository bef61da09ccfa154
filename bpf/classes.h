/* How a command is classed, shared by the BPF programs and the exporter (C and C++): its op (the
 * `op` label) from its NVMe opcode, and its size class (the `size` label). The label values are
 * named in userspace only: BlockOpName() and SizeClassName() in loader/. */
#ifndef NVMEOF_BPF_CLASSES_H_
#define NVMEOF_BPF_CLASSES_H_

#include "block_maps.h"

/* Inlined into each BPF program (no BPF-to-BPF call); a plain inline function in C++. */
#define NVMEOF_CLASS_FN static inline __attribute__((always_inline))

/* Size classes of the optional `size` label, 1-based (0 = not classed): <= 4KiB, <= 16KiB,
 * <= 64KiB, <= 256KiB, larger. */
#define NVMEOF_SIZE_CLASSES 5

NVMEOF_CLASS_FN unsigned char nvmeof_size_class(unsigned long long bytes) {
  if (bytes <= 4096) return 1;
  if (bytes <= 16384) return 2;
  if (bytes <= 65536) return 3;
  if (bytes <= 262144) return 4;
  return 5;
}

/* NVMe I/O opcode -> NVMEOF_OP_*. */
NVMEOF_CLASS_FN unsigned char nvme_op(unsigned char opcode) {
  switch (opcode) {
    case 0x02:
      return NVMEOF_OP_READ;
    case 0x01:
      return NVMEOF_OP_WRITE;
    case 0x00:
      return NVMEOF_OP_FLUSH;
    case 0x09: /* dataset management (deallocate) */
      return NVMEOF_OP_DISCARD;
    default:
      return NVMEOF_OP_OTHER;
  }
}

#endif /* NVMEOF_BPF_CLASSES_H_ */
