/* sinter_dlpack.h - DLPack 1.x interchange of Sinter buffers (CPU and CUDA memory, zero-copy where possible).
 *
 * The structs below are DLPack 1.x's (https://dmlc.github.io/dlpack/latest/c_api.html) under
 * Sinter's own names, so this header does not clash with whichever dlpack.h a program also
 * includes (Debian ships DLPack 0.6, which lacks the versioned struct). They are binary-identical to
 * DLPackVersion, DLDevice, DLDataType, DLTensor and DLManagedTensorVersioned: a
 * `DLManagedTensorVersioned *` from any DLPack 1.x producer may be cast to `sn_dlpack_tensor *`
 * and back.
 */
#ifndef SINTER_SINTER_DLPACK_H
#define SINTER_SINTER_DLPACK_H

#include "sinter/sinter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The DLPack version these structs follow. */
#define SN_DLPACK_MAJOR_VERSION 1
#define SN_DLPACK_MINOR_VERSION 0

/* DLDeviceType values (CPU and CUDA memory are exchanged). */
#define SN_DLPACK_DEVICE_CPU 1
#define SN_DLPACK_DEVICE_CUDA 2
#define SN_DLPACK_DEVICE_CUDA_HOST 3
#define SN_DLPACK_DEVICE_ROCM 10

/* DLDataTypeCode values. */
#define SN_DLPACK_INT 0
#define SN_DLPACK_UINT 1
#define SN_DLPACK_FLOAT 2
#define SN_DLPACK_BFLOAT 4
#define SN_DLPACK_BOOL 6

/* Bits of sn_dlpack_tensor.flags. */
#define SN_DLPACK_FLAG_READ_ONLY 1u
#define SN_DLPACK_FLAG_IS_COPIED 2u

typedef struct sn_dlpack_version { /* DLPackVersion */
  uint32_t major;
  uint32_t minor;
} sn_dlpack_version;

typedef struct sn_dlpack_device { /* DLDevice */
  int32_t device_type;            /* DLDeviceType (a C enum, int-sized) */
  int32_t device_id;
} sn_dlpack_device;

typedef struct sn_dlpack_dtype { /* DLDataType */
  uint8_t code;                  /* SN_DLPACK_INT, _UINT, _FLOAT, _BFLOAT, _BOOL */
  uint8_t bits;
  uint16_t lanes;
} sn_dlpack_dtype;

typedef struct sn_dlpack_dl_tensor { /* DLTensor */
  void *data;
  sn_dlpack_device device;
  int32_t ndim;
  sn_dlpack_dtype dtype;
  int64_t *shape;
  int64_t *strides; /* in elements; NULL = compact row-major */
  uint64_t byte_offset;
} sn_dlpack_dl_tensor;

typedef struct sn_dlpack_tensor { /* DLManagedTensorVersioned */
  sn_dlpack_version version;
  void *manager_ctx;
  void (*deleter)(struct sn_dlpack_tensor *self);
  uint64_t flags;
  sn_dlpack_dl_tensor dl_tensor;
} sn_dlpack_tensor;

/* Exports a buffer without copying: the returned tensor points at the buffer's memory and keeps it
   alive until the consumer calls tensor->deleter(tensor) (exactly once). CPU buffers (device CPU,
   data = element 0) and CUDA buffers (device (CUDA, its index), data = the allocation's device
   address, byte_offset = the buffer's offset in it); others are SN_E_UNSUPPORTED. NULL on failure. */
SN_API sn_dlpack_tensor *sn_buffer_to_dlpack(sn_buffer *buffer, sn_error **err);

/* Imports a DLPack 1.x tensor as a buffer on `device`: a CPU tensor onto a CPU device, a CUDA
   tensor onto the CUDA device of its index (another pairing is SN_E_UNSUPPORTED naming both). Needs
   version major 1 and a supported dtype (bool, int/uint 8-64, float 16/32/64, bfloat16) with one lane.
   - A writable tensor with compact row-major strides (or NULL strides) and element-aligned data is
     imported without copying: the buffer is that memory and owns the tensor, whose deleter runs
     when the last buffer or view of it is released.
   - Any other strides (in elements: non-compact, 0 on broadcast axes, negative) and tensors with
     the READ_ONLY flag are copied into a fresh row-major buffer (Sinter buffers are contiguous
     windows, and programs may write the buffers they get): the tensor's deleter runs before this
     returns, and later writes to either memory are not seen in the other. Such data need not be
     element-aligned. (CPU memory only: such a CUDA tensor is SN_E_UNSUPPORTED.)
   On failure the caller still owns the tensor (its deleter was not called). */
SN_API sn_buffer *sn_buffer_from_dlpack(sn_device *device, sn_dlpack_tensor *tensor, sn_error **err);

#ifdef __cplusplus
}
#endif

#endif /* SINTER_SINTER_DLPACK_H */
