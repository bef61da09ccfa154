/* A field of a classic tracepoint's record, as its tracefs format file gives it: the programs
 * that read records on kernels without module BTF (5.10; nvmeof.bpf.c, lifecycle_tp.bpf.h) hold
 * one per field in const volatile rodata, which the exporter fills before load
 * (readers/tracepoint_format.h). C and C++. */
#ifndef NVMEOF_BPF_TP_FIELD_H_
#define NVMEOF_BPF_TP_FIELD_H_

struct nvmeof_tp_field {
  unsigned short offset, size;
};

#endif /* NVMEOF_BPF_TP_FIELD_H_ */
