package sinter

// The C API's enums. The values come from sinter.h through cgo, never from this file; the C enums are
// append-only, so a value a newer library returns is still a valid value of these types (String prints it
// by number when the library has no name for it).

/*
#include <sinter/sinter.h>
*/
import "C"

import "fmt"

// DType is a scalar data type (sn_dtype).
type DType uint32

// Op is an op of the UOp dialect (sn_op); see the spec for each op's sources and arg.
type Op uint32

// AxisType is the loop kind of a Range (sn_axis_type).
type AxisType uint32

// AddrSpace is the address space of a buffer or pointer (sn_addrspace).
type AddrSpace uint32

// DType values.
const (
	DTypeInvalid DType = C.SN_DTYPE_INVALID
	Bool         DType = C.SN_DTYPE_BOOL
	Int8         DType = C.SN_DTYPE_INT8
	Int16        DType = C.SN_DTYPE_INT16
	Int32        DType = C.SN_DTYPE_INT32
	Int64        DType = C.SN_DTYPE_INT64
	Uint8        DType = C.SN_DTYPE_UINT8
	Uint16       DType = C.SN_DTYPE_UINT16
	Uint32       DType = C.SN_DTYPE_UINT32
	Uint64       DType = C.SN_DTYPE_UINT64
	Float16      DType = C.SN_DTYPE_FLOAT16
	BFloat16     DType = C.SN_DTYPE_BFLOAT16
	Float32      DType = C.SN_DTYPE_FLOAT32
	Float64      DType = C.SN_DTYPE_FLOAT64
	FP8E4M3      DType = C.SN_DTYPE_FP8E4M3
	FP8E5M2      DType = C.SN_DTYPE_FP8E5M2
	Index        DType = C.SN_DTYPE_INDEX
	Void         DType = C.SN_DTYPE_VOID
)

// Op values.
const (
	OpInvalid            Op = C.SN_OP_INVALID
	OpParam              Op = C.SN_OP_PARAM
	OpBuffer             Op = C.SN_OP_BUFFER
	OpConst              Op = C.SN_OP_CONST
	OpBinary             Op = C.SN_OP_BINARY
	OpDefineVar          Op = C.SN_OP_DEFINE_VAR
	OpPermute            Op = C.SN_OP_PERMUTE
	OpFlip               Op = C.SN_OP_FLIP
	OpReshape            Op = C.SN_OP_RESHAPE
	OpExpand             Op = C.SN_OP_EXPAND
	OpPad                Op = C.SN_OP_PAD
	OpShrink             Op = C.SN_OP_SHRINK
	OpIndex              Op = C.SN_OP_INDEX
	OpStack              Op = C.SN_OP_STACK
	OpReplicated         Op = C.SN_OP_REPLICATED
	OpSlice              Op = C.SN_OP_SLICE
	OpBitcast            Op = C.SN_OP_BITCAST
	OpReduce             Op = C.SN_OP_REDUCE
	OpFunction           Op = C.SN_OP_FUNCTION
	OpCall               Op = C.SN_OP_CALL
	OpTuple              Op = C.SN_OP_TUPLE
	OpGetTuple           Op = C.SN_OP_GET_TUPLE
	OpLoad               Op = C.SN_OP_LOAD
	OpCopy               Op = C.SN_OP_COPY
	OpStore              Op = C.SN_OP_STORE
	OpRange              Op = C.SN_OP_RANGE
	OpEnd                Op = C.SN_OP_END
	OpAfter              Op = C.SN_OP_AFTER
	OpGroup              Op = C.SN_OP_GROUP
	OpSink               Op = C.SN_OP_SINK
	OpLinear             Op = C.SN_OP_LINEAR
	OpRecip              Op = C.SN_OP_RECIP
	OpTrunc              Op = C.SN_OP_TRUNC
	OpCast               Op = C.SN_OP_CAST
	OpAdd                Op = C.SN_OP_ADD
	OpMul                Op = C.SN_OP_MUL
	OpMax                Op = C.SN_OP_MAX
	OpMod                Op = C.SN_OP_MOD
	OpIDiv               Op = C.SN_OP_IDIV
	OpCmpLT              Op = C.SN_OP_CMPLT
	OpCmpNE              Op = C.SN_OP_CMPNE
	OpXor                Op = C.SN_OP_XOR
	OpOr                 Op = C.SN_OP_OR
	OpAnd                Op = C.SN_OP_AND
	OpShr                Op = C.SN_OP_SHR
	OpShl                Op = C.SN_OP_SHL
	OpWhere              Op = C.SN_OP_WHERE
	OpNeg                Op = C.SN_OP_NEG
	OpSub                Op = C.SN_OP_SUB
	OpDiv                Op = C.SN_OP_DIV
	OpCmpGT              Op = C.SN_OP_CMPGT
	OpCmpGE              Op = C.SN_OP_CMPGE
	OpCmpLE              Op = C.SN_OP_CMPLE
	OpCmpEQ              Op = C.SN_OP_CMPEQ
	OpNot                Op = C.SN_OP_NOT
	OpExp2               Op = C.SN_OP_EXP2
	OpLog2               Op = C.SN_OP_LOG2
	OpSin                Op = C.SN_OP_SIN
	OpSqrt               Op = C.SN_OP_SQRT
	OpPow                Op = C.SN_OP_POW
	OpMulAcc             Op = C.SN_OP_MULACC
	OpThreeFry           Op = C.SN_OP_THREEFRY
	OpCDiv               Op = C.SN_OP_CDIV
	OpCMod               Op = C.SN_OP_CMOD
	OpContiguous         Op = C.SN_OP_CONTIGUOUS
	OpContiguousBackward Op = C.SN_OP_CONTIGUOUS_BACKWARD
	OpDetach             Op = C.SN_OP_DETACH
	OpStage              Op = C.SN_OP_STAGE
	OpVectorize          Op = C.SN_OP_VECTORIZE
	OpGEP                Op = C.SN_OP_GEP
	OpNoOp               Op = C.SN_OP_NOOP
	OpBarrier            Op = C.SN_OP_BARRIER
	OpIns                Op = C.SN_OP_INS
	OpSpecial            Op = C.SN_OP_SPECIAL
	OpIf                 Op = C.SN_OP_IF
	OpEndIf              Op = C.SN_OP_ENDIF
	OpWMMA               Op = C.SN_OP_WMMA
	OpCustom             Op = C.SN_OP_CUSTOM
	OpAtomicAdd          Op = C.SN_OP_ATOMIC_ADD
	OpCustomFunction     Op = C.SN_OP_CUSTOM_FUNCTION
	OpProgram            Op = C.SN_OP_PROGRAM
	OpSource             Op = C.SN_OP_SOURCE
)

// AxisType values.
const (
	AxisInvalid     AxisType = C.SN_AXIS_INVALID
	AxisGlobal      AxisType = C.SN_AXIS_GLOBAL
	AxisLocal       AxisType = C.SN_AXIS_LOCAL
	AxisWarp        AxisType = C.SN_AXIS_WARP
	AxisThread      AxisType = C.SN_AXIS_THREAD
	AxisLoop        AxisType = C.SN_AXIS_LOOP
	AxisReduce      AxisType = C.SN_AXIS_REDUCE
	AxisGroupReduce AxisType = C.SN_AXIS_GROUP_REDUCE
	AxisUpcast      AxisType = C.SN_AXIS_UPCAST
	AxisUnroll      AxisType = C.SN_AXIS_UNROLL
)

// AddrSpace values.
const (
	AddrSpaceNone   AddrSpace = C.SN_ADDRSPACE_NONE
	AddrSpaceGlobal AddrSpace = C.SN_ADDRSPACE_GLOBAL
	AddrSpaceLocal  AddrSpace = C.SN_ADDRSPACE_LOCAL
	AddrSpaceReg    AddrSpace = C.SN_ADDRSPACE_REG
)

func cname(p *C.char, kind string, v uint32) string {
	if p == nil {
		return fmt.Sprintf("%s(%d)", kind, v)
	}
	return C.GoString(p)
}

// String is the library's name, e.g. "float32".
func (d DType) String() string { return cname(C.sn_dtype_name(C.sn_dtype(d)), "DType", uint32(d)) }

// String is the library's name, e.g. "Add".
func (o Op) String() string { return cname(C.sn_op_name(C.sn_op(o)), "Op", uint32(o)) }

// String is the library's name, e.g. "LOOP".
func (a AxisType) String() string {
	return cname(C.sn_axis_type_name(C.sn_axis_type(a)), "AxisType", uint32(a))
}

// String is the library's name, e.g. "GLOBAL".
func (a AddrSpace) String() string {
	return cname(C.sn_addrspace_name(C.sn_addrspace(a)), "AddrSpace", uint32(a))
}

// IsFloat reports whether d is a floating-point dtype.
func (d DType) IsFloat() bool {
	switch d {
	case Float16, BFloat16, Float32, Float64, FP8E4M3, FP8E5M2:
		return true
	}
	return false
}
