/* Reading a classic tracepoint's record by the offsets of its format file (tp_field.h). */
#ifndef NVMEOF_BPF_TP_FIELD_BPF_H_
#define NVMEOF_BPF_TP_FIELD_BPF_H_

#include "tp_field.h"

/* The bytes of a record a program copies at once: a bpf_probe_read_kernel call costs about 85
 * instructions, and the fields are read from the copy. The record sits in the per-CPU perf trace
 * buffer (8 KiB), so reading past a shorter record's end stays inside it. */
#define NVMEOF_TP_SPAN 128

/* An unsigned field of the copy: 1, 2, 4 or 8 bytes (the format file's size); 0 past the copy.
 * Through a pointer: a const volatile struct passed by value is copied as an aggregate, which
 * clang folds to its initializer (the program compiled to "return 0"). */
static __always_inline __u64 tp_field(const __u8* rec, const volatile struct nvmeof_tp_field* f) {
  const __u32 offset = f->offset, size = f->size;
  if (offset > NVMEOF_TP_SPAN - 8) return 0;
  if (size == 8) return *(const __u64*)(rec + offset);
  if (size == 4) return *(const __u32*)(rec + offset);
  if (size == 2) return *(const __u16*)(rec + offset);
  if (size == 1) return rec[offset];
  return 0;
}

/* The record's first NVMEOF_TP_SPAN bytes copied into `scratch` (a one-entry per-CPU array of
 * that size, the object's own), or 0. */
static __always_inline __u8* tp_copy(void* scratch, void* ctx) {
  __u32 zero = 0;
  __u8* rec = bpf_map_lookup_elem(scratch, &zero);
  if (rec && bpf_probe_read_kernel(rec, NVMEOF_TP_SPAN, ctx)) return 0;
  return rec;
}

/* One field read straight from the record, without the copy: for a program that most of the
 * time needs just that field to return (one small read instead of NVMEOF_TP_SPAN bytes). ~0 when
 * the read fails. */
static __always_inline __u64 tp_field_of(void* ctx, const volatile struct nvmeof_tp_field* f) {
  __u32 size = f->size;
  __u64 v = 0;
  if (size > sizeof(v)) size = sizeof(v);
  if (bpf_probe_read_kernel(&v, size, (const void*)((__u64)ctx + f->offset))) return ~0ULL;
  return v;
}

#endif /* NVMEOF_BPF_TP_FIELD_BPF_H_ */
