// Package dlpacktest makes DLPack tensors the way another library would, for the tests of package sinter:
// float32 data in C memory, any strides and flags, and a deleter that only counts its calls (so that a second
// call shows up as a count of 2 rather than a double free). Go test files cannot use cgo themselves.
package dlpacktest

/*
#cgo CFLAGS: -I${SRCDIR}/../../../../capi/include
#include <stdlib.h>
#include <string.h>
#include <sinter/sinter_dlpack.h>

typedef struct foreign {
  sn_dlpack_tensor t;  // first: the tensor's address is the struct's
  int64_t shape[8];
  int64_t strides[8];
  int deleted;
} foreign;

static void foreign_deleter(sn_dlpack_tensor *self) { ((foreign *)self->manager_ctx)->deleted++; }

static foreign *foreign_new(const float *values, size_t n, const int64_t *shape, const int64_t *strides,
                            int ndim, uint64_t flags, uint8_t code, uint8_t bits, uint32_t major) {
  foreign *f = (foreign *)calloc(1, sizeof *f);
  float *data = (float *)malloc(n > 0 ? n * sizeof *data : 1);
  int i;
  if (f == NULL || data == NULL || ndim > 8) {
    free(f);
    free(data);
    return NULL;
  }
  if (n > 0) memcpy(data, values, n * sizeof *data);
  for (i = 0; i < ndim; i++) {
    f->shape[i] = shape[i];
    if (strides != NULL) f->strides[i] = strides[i];
  }
  f->t.version.major = major;
  f->t.manager_ctx = f;
  f->t.deleter = foreign_deleter;
  f->t.flags = flags;
  f->t.dl_tensor.data = data;
  f->t.dl_tensor.device.device_type = SN_DLPACK_DEVICE_CPU;
  f->t.dl_tensor.ndim = ndim;
  f->t.dl_tensor.dtype.code = code;
  f->t.dl_tensor.dtype.bits = bits;
  f->t.dl_tensor.dtype.lanes = 1;
  f->t.dl_tensor.shape = f->shape;
  f->t.dl_tensor.strides = strides != NULL ? f->strides : NULL;
  return f;
}

static void foreign_free(foreign *f) {
  free(f->t.dl_tensor.data);
  free(f);
}
*/
import "C"

import "unsafe"

// Tensor is a DLPack tensor in C memory and its deleter's call count. Free releases it (never the deleter).
type Tensor struct {
	f *C.foreign
}

// Options describe a Tensor beyond its values and shape.
type Options struct {
	Strides  []int64 // in elements; nil: compact row-major (the strides pointer is NULL)
	ReadOnly bool    // sets the READ_ONLY flag
	Code     uint8   // dtype code; 0 with Bits 0 means float32
	Bits     uint8
	Major    uint32 // DLPack major version; 0 means 1
}

// New makes a tensor holding values (float32 elements unless opts say otherwise) of the given shape.
func New(values []float32, shape []int64, opts Options) *Tensor {
	var vp *C.float
	if len(values) > 0 {
		vp = (*C.float)(C.malloc(C.size_t(len(values)) * 4))
		defer C.free(unsafe.Pointer(vp))
		copy(unsafe.Slice((*float32)(unsafe.Pointer(vp)), len(values)), values)
	}
	cshape := cInt64s(shape)
	defer C.free(unsafe.Pointer(cshape))
	var cstrides *C.int64_t
	if opts.Strides != nil {
		cstrides = cInt64s(opts.Strides)
		defer C.free(unsafe.Pointer(cstrides))
	}
	var flags C.uint64_t
	if opts.ReadOnly {
		flags = C.SN_DLPACK_FLAG_READ_ONLY
	}
	code, bits := C.uint8_t(C.SN_DLPACK_FLOAT), C.uint8_t(32)
	if opts.Code != 0 || opts.Bits != 0 {
		code, bits = C.uint8_t(opts.Code), C.uint8_t(opts.Bits)
	}
	major := C.uint32_t(1)
	if opts.Major != 0 {
		major = C.uint32_t(opts.Major)
	}
	f := C.foreign_new(vp, C.size_t(len(values)), cshape, cstrides, C.int(len(shape)), flags, code, bits, major)
	if f == nil {
		panic("dlpacktest: out of memory or rank > 8")
	}
	return &Tensor{f: f}
}

func cInt64s(v []int64) *C.int64_t {
	p := (*C.int64_t)(C.malloc(C.size_t(len(v)+1) * 8))
	copy(unsafe.Slice((*int64)(unsafe.Pointer(p)), len(v)), v)
	return p
}

// Pointer is the tensor's address (a DLManagedTensorVersioned *).
func (t *Tensor) Pointer() unsafe.Pointer { return unsafe.Pointer(&t.f.t) }

// Data is the tensor's data pointer.
func (t *Tensor) Data() unsafe.Pointer { return t.f.t.dl_tensor.data }

// Deleted is how many times the deleter has run.
func (t *Tensor) Deleted() int { return int(t.f.deleted) }

// Free releases the tensor's memory; call it once nothing uses the tensor any more.
func (t *Tensor) Free() { C.foreign_free(t.f) }
