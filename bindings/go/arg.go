package sinter

/*
#include <stdlib.h>
#include <string.h>
#include <sinter/sinter.h>
*/
import "C"

import "unsafe"

// ArgKind says which fields of an Arg are meaningful (sn_arg_kind).
type ArgKind uint32

// Arg kinds; see sn_arg_kind in sinter.h for which op uses which.
const (
	ArgNone   ArgKind = C.SN_ARG_NONE
	ArgInt    ArgKind = C.SN_ARG_INT    // Int: Const of bool/int/index dtype, GetTuple index, Gep lane
	ArgFloat  ArgKind = C.SN_ARG_FLOAT  // Float: Const of a float dtype
	ArgInts   ArgKind = C.SN_ARG_INTS   // Ints: Permute order, Flip flags, Replicated axes, Gep lanes
	ArgDType  ArgKind = C.SN_ARG_DTYPE  // DType: Cast / Bitcast target
	ArgString ArgKind = C.SN_ARG_STRING // Str: Binary data, Source text, Special name, ...
	ArgReduce ArgKind = C.SN_ARG_REDUCE // ReduceOp + Ints (the reduced axes)
	ArgRange  ArgKind = C.SN_ARG_RANGE  // ID (loop id) + AxisType
	ArgBuffer ArgKind = C.SN_ARG_BUFFER // ID (0 = new buffer), Size, Device, AddrSpace
	ArgParam  ArgKind = C.SN_ARG_PARAM  // ID (slot), Device, AddrSpace
	ArgVar    ArgKind = C.SN_ARG_VAR    // Str (name), Min, Max
	ArgMem    ArgKind = C.SN_ARG_MEM    // Device, AddrSpace
	ArgSlice  ArgKind = C.SN_ARG_SLICE  // Size + DType
)

// Arg is the arg of a node, mirroring sn_arg: Kind says which fields are used, the others stay zero.
type Arg struct {
	Kind      ArgKind
	Int       int64
	Float     float64
	Ints      []int64
	DType     DType
	ReduceOp  Op
	Str       []byte
	ID        int64
	AxisType  AxisType
	AddrSpace AddrSpace // zero (AddrSpaceNone) means the default, GLOBAL
	Size      int64
	Device    string
	Min, Max  int64
}

// toC copies the arg into C memory (a C struct handed to C must not point into Go memory). free releases
// it; it is safe to call even when the returned pointer is nil.
func (a Arg) toC() (*C.sn_arg, func(), error) {
	if a.Kind == ArgNone {
		return nil, func() {}, nil
	}
	var allocs []unsafe.Pointer
	alloc := func(n int) unsafe.Pointer {
		p := C.calloc(1, C.size_t(n))
		allocs = append(allocs, p)
		return p
	}
	free := func() {
		for _, p := range allocs {
			C.free(p)
		}
	}
	c := (*C.sn_arg)(alloc(int(unsafe.Sizeof(C.sn_arg{}))))
	var cerr *C.sn_error
	if err := checkCode(C.sn_arg_init(c, C.size_t(unsafe.Sizeof(*c)), &cerr), cerr); err != nil {
		free()
		return nil, func() {}, err
	}
	c.kind = C.sn_arg_kind(a.Kind)
	c.int_value = C.int64_t(a.Int)
	c.float_value = C.double(a.Float)
	if len(a.Ints) > 0 {
		p := alloc(len(a.Ints) * 8)
		copy(unsafe.Slice((*int64)(p), len(a.Ints)), a.Ints)
		c.ints = (*C.int64_t)(p)
		c.nints = C.size_t(len(a.Ints))
	}
	c.dtype = C.sn_dtype(a.DType)
	c.reduce_op = C.sn_op(a.ReduceOp)
	if len(a.Str) > 0 {
		p := alloc(len(a.Str))
		copy(unsafe.Slice((*byte)(p), len(a.Str)), a.Str)
		c.str = (*C.char)(p)
		c.str_len = C.size_t(len(a.Str))
	}
	c.id = C.int64_t(a.ID)
	c.axis_type = C.sn_axis_type(a.AxisType)
	if a.AddrSpace != AddrSpaceNone {
		c.addrspace = C.sn_addrspace(a.AddrSpace)
	}
	c.size = C.int64_t(a.Size)
	if a.Device != "" {
		p := alloc(len(a.Device) + 1)
		copy(unsafe.Slice((*byte)(p), len(a.Device)), a.Device)
		c.device = (*C.char)(p)
	}
	c.min = C.int64_t(a.Min)
	c.max = C.int64_t(a.Max)
	return c, free, nil
}

// argFromC copies an arg the library filled in (its pointers point into the graph).
func argFromC(c *C.sn_arg) Arg {
	a := Arg{
		Kind: ArgKind(c.kind), Int: int64(c.int_value), Float: float64(c.float_value), DType: DType(c.dtype),
		ReduceOp: Op(c.reduce_op), ID: int64(c.id), AxisType: AxisType(c.axis_type),
		AddrSpace: AddrSpace(c.addrspace), Size: int64(c.size), Min: int64(c.min), Max: int64(c.max),
	}
	if c.ints != nil && c.nints > 0 {
		a.Ints = append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(c.ints)), int(c.nints))...)
	}
	if c.str != nil && c.str_len > 0 {
		a.Str = C.GoBytes(unsafe.Pointer(c.str), C.int(c.str_len))
	}
	if c.device != nil {
		a.Device = C.GoString(c.device)
	}
	return a
}
