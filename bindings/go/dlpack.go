package sinter

/*
#include <stdlib.h>
#include <sinter/sinter_dlpack.h>

// DLPack's rule: whoever owns a managed tensor calls its deleter, once (a NULL deleter means nothing to free).
static void sngo_dlpack_delete(sn_dlpack_tensor *t) {
  if (t != NULL && t->deleter != NULL) t->deleter(t);
}
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// DLPack device types (DLDeviceType), data type codes (DLDataTypeCode) and flags, as in sinter_dlpack.h.
const (
	DLDeviceCPU      = C.SN_DLPACK_DEVICE_CPU
	DLDeviceCUDA     = C.SN_DLPACK_DEVICE_CUDA
	DLDeviceCUDAHost = C.SN_DLPACK_DEVICE_CUDA_HOST
	DLDeviceROCm     = C.SN_DLPACK_DEVICE_ROCM

	DLInt    = C.SN_DLPACK_INT
	DLUInt   = C.SN_DLPACK_UINT
	DLFloat  = C.SN_DLPACK_FLOAT
	DLBfloat = C.SN_DLPACK_BFLOAT
	DLBool   = C.SN_DLPACK_BOOL

	DLFlagReadOnly = C.SN_DLPACK_FLAG_READ_ONLY
	DLFlagIsCopied = C.SN_DLPACK_FLAG_IS_COPIED
)

// DLDataType is a DLPack element type: a code (DLInt, DLUInt, DLFloat, DLBfloat, DLBool), the bits of one
// lane and the number of lanes.
type DLDataType struct {
	Code  uint8
	Bits  uint8
	Lanes uint16
}

// DLPack is one DLPack 1.x managed tensor (DLManagedTensorVersioned; sn_dlpack_tensor in sinter_dlpack.h) that
// Go code owns. Exactly one of these ends its ownership, and the tensor's deleter runs at most once:
//   - Close calls the deleter (a finalizer does it for a forgotten DLPack);
//   - Device.FromDLPack hands the tensor to the new buffer, which calls the deleter when it no longer needs
//     the memory;
//   - Release hands the tensor to someone else, who must then call the deleter.
//
// After any of them the DLPack is empty: accessors return zero values, and Close does nothing. Like a Buffer,
// a DLPack must not be used from several goroutines at once.
type DLPack struct {
	p *C.sn_dlpack_tensor
}

func newDLPack(p *C.sn_dlpack_tensor) *DLPack {
	t := &DLPack{p: p}
	runtime.SetFinalizer(t, (*DLPack).Close)
	return t
}

// AdoptDLPack takes ownership of a DLManagedTensorVersioned that another library produced (ptr is its
// address), for Device.FromDLPack or Close. Nil for a nil ptr. Only DLPack 1.x tensors have this layout;
// FromDLPack checks the version.
func AdoptDLPack(ptr unsafe.Pointer) *DLPack {
	if ptr == nil {
		return nil
	}
	return newDLPack((*C.sn_dlpack_tensor)(ptr))
}

// ToDLPack exports b as a DLPack tensor without copying: its data is b's memory, which it keeps alive until
// the tensor's deleter runs (Close), even after b is closed. Buffers of the CPU and CUDA devices can be
// exported (a CUDA tensor's data is a device address); others are an *Error with CodeUnsupported.
func (b *Buffer) ToDLPack() (*DLPack, error) {
	if b.p == nil {
		return nil, ErrClosed
	}
	var cerr *C.sn_error
	p := C.sn_buffer_to_dlpack(b.p, &cerr)
	runtime.KeepAlive(b)
	if err := check(cerr); err != nil {
		return nil, err
	}
	return newDLPack(p), nil
}

// FromDLPack imports t as a buffer on d (a CPU device). A writable tensor with compact row-major strides
// and element-aligned data becomes the buffer without copying: the buffer owns the tensor and calls its
// deleter when the buffer and its views are released. Other tensors (strided, read-only) are copied and
// their deleter runs before FromDLPack returns. Either way t is empty afterwards. On failure (an *Error,
// e.g. CodeUnsupported for a dtype Sinter lacks, CodeVersion for a tensor that is not DLPack 1.x) t still
// owns the tensor.
func (d *Device) FromDLPack(t *DLPack) (*Buffer, error) {
	if d.p == nil || t == nil || t.p == nil {
		return nil, ErrClosed
	}
	var cerr *C.sn_error
	p := C.sn_buffer_from_dlpack(d.p, t.p, &cerr)
	runtime.KeepAlive(d)
	if err := check(cerr); err != nil {
		return nil, err
	}
	t.p = nil // the buffer owns the tensor now
	runtime.SetFinalizer(t, nil)
	return newBuffer(p), nil
}

// Pointer is the address of the DLManagedTensorVersioned, for reading it from C or another library; t still
// owns it. Nil when t is empty.
func (t *DLPack) Pointer() unsafe.Pointer {
	if t == nil {
		return nil
	}
	return unsafe.Pointer(t.p)
}

// Release gives up ownership and returns the tensor's address (nil when t is empty): whoever receives it
// calls the deleter. t is empty afterwards.
func (t *DLPack) Release() unsafe.Pointer {
	if t == nil || t.p == nil {
		return nil
	}
	p := t.p
	t.p = nil
	runtime.SetFinalizer(t, nil)
	return unsafe.Pointer(p)
}

// Close calls the tensor's deleter and empties t. Idempotent; a no-op on an empty or nil DLPack.
func (t *DLPack) Close() error {
	if t == nil || t.p == nil {
		return nil
	}
	p := t.p
	t.p = nil
	runtime.SetFinalizer(t, nil)
	C.sngo_dlpack_delete(p)
	return nil
}

// Version is the DLPack version the tensor follows (1.0 for Sinter's exports).
func (t *DLPack) Version() (major, minor uint32) {
	if t == nil || t.p == nil {
		return 0, 0
	}
	return uint32(t.p.version.major), uint32(t.p.version.minor)
}

// Data is the tensor's data pointer (DLTensor.data); the first element is ByteOffset bytes after it. The
// memory stays valid while t owns the tensor.
func (t *DLPack) Data() unsafe.Pointer {
	if t == nil || t.p == nil {
		return nil
	}
	return t.p.dl_tensor.data
}

// ByteOffset is DLTensor.byte_offset (0 for Sinter's exports).
func (t *DLPack) ByteOffset() uint64 {
	if t == nil || t.p == nil {
		return 0
	}
	return uint64(t.p.dl_tensor.byte_offset)
}

// NDim is the rank.
func (t *DLPack) NDim() int {
	if t == nil || t.p == nil {
		return 0
	}
	return int(t.p.dl_tensor.ndim)
}

// int64Array copies n values from a C int64_t array (nil for a NULL array).
func int64Array(p *C.int64_t, n int) []int64 {
	if p == nil || n <= 0 {
		return nil
	}
	out := make([]int64, n)
	copy(out, unsafe.Slice((*int64)(unsafe.Pointer(p)), n))
	return out
}

// Shape is the tensor's shape (a copy; empty for a scalar).
func (t *DLPack) Shape() []int64 {
	if t == nil || t.p == nil {
		return nil
	}
	s := int64Array(t.p.dl_tensor.shape, t.NDim())
	if s == nil {
		s = []int64{}
	}
	return s
}

// Strides are the tensor's strides in elements (a copy), or nil for compact row-major data, which is what
// Sinter exports.
func (t *DLPack) Strides() []int64 {
	if t == nil || t.p == nil {
		return nil
	}
	return int64Array(t.p.dl_tensor.strides, t.NDim())
}

// DataType is the element type.
func (t *DLPack) DataType() DLDataType {
	if t == nil || t.p == nil {
		return DLDataType{}
	}
	d := t.p.dl_tensor.dtype
	return DLDataType{Code: uint8(d.code), Bits: uint8(d.bits), Lanes: uint16(d.lanes)}
}

// Device is where the data lives: a DLPack device type (DLDeviceCPU, ...) and the device's index.
func (t *DLPack) Device() (deviceType, deviceID int32) {
	if t == nil || t.p == nil {
		return 0, 0
	}
	return int32(t.p.dl_tensor.device.device_type), int32(t.p.dl_tensor.device.device_id)
}

// Flags are the DLPack flags (DLFlagReadOnly, DLFlagIsCopied).
func (t *DLPack) Flags() uint64 {
	if t == nil || t.p == nil {
		return 0
	}
	return uint64(t.p.flags)
}
