package sinter

/*
#include <stdlib.h>
#include <sinter/sinter.h>
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// UOp is a node of a Graph, used by value. It keeps its graph reachable and needs no Close; after the
// graph's Close its methods return ErrClosed (or zero values). Nodes are hash-consed, so two UOps are ==
// exactly when they are the same node, which is structural equality. The zero UOp is no node.
type UOp struct {
	p *C.sn_uop
	g *Graph
}

// Graph is the graph the node belongs to (nil for the zero UOp).
func (u UOp) Graph() *Graph { return u.g }

// IsZero reports whether u is the zero UOp (no node).
func (u UOp) IsZero() bool { return u.p == nil }

// query runs a C call on the node under its graph's lock.
func (u UOp) query(f func(cerr **C.sn_error)) error {
	return u.g.locked(func(*C.sn_graph) error {
		var cerr *C.sn_error
		f(&cerr)
		return check(cerr)
	})
}

// Op is the node's op (OpInvalid after the graph's Close).
func (u UOp) Op() Op {
	var op Op
	_ = u.query(func(cerr **C.sn_error) { op = Op(C.sn_uop_op(u.p, cerr)) })
	return op
}

// DType is the scalar dtype (a vector's element type, a pointer's pointee).
func (u UOp) DType() DType {
	var dt DType
	_ = u.query(func(cerr **C.sn_error) { dt = DType(C.sn_uop_dtype(u.p, cerr)) })
	return dt
}

// Lanes is the vector width of the dtype (1 for scalars).
func (u UOp) Lanes() int {
	var n int
	_ = u.query(func(cerr **C.sn_error) { n = int(C.sn_uop_lanes(u.p, cerr)) })
	return n
}

// IsPointer reports whether the dtype is a pointer.
func (u UOp) IsPointer() bool {
	var r C.int
	_ = u.query(func(cerr **C.sn_error) { r = C.sn_uop_is_pointer(u.p, cerr) })
	return r == 1
}

// PointerAddrSpace is the address space a pointer dtype points into (AddrSpaceNone for values).
func (u UOp) PointerAddrSpace() AddrSpace {
	var a AddrSpace
	_ = u.query(func(cerr **C.sn_error) { a = AddrSpace(C.sn_uop_pointer_addrspace(u.p, cerr)) })
	return a
}

// Srcs are the node's sources.
func (u UOp) Srcs() []UOp {
	var out []UOp
	_ = u.g.locked(func(*C.sn_graph) error {
		n := C.sn_uop_num_srcs(u.p, nil)
		out = make([]UOp, 0, int(n))
		for i := C.size_t(0); i < n; i++ {
			if s := C.sn_uop_src(u.p, i, nil); s != nil {
				out = append(out, u.g.wrap(s))
			}
		}
		return nil
	})
	return out
}

// Arg is the node's arg, copied out of the graph.
func (u UOp) Arg() (Arg, error) {
	var a Arg
	err := u.g.locked(func(*C.sn_graph) error {
		var raw C.sn_arg
		var cerr *C.sn_error
		if err := checkCode(C.sn_arg_init(&raw, C.size_t(unsafe.Sizeof(raw)), &cerr), cerr); err != nil {
			return err
		}
		if err := checkCode(C.sn_uop_arg(u.p, &raw, &cerr), cerr); err != nil {
			return err
		}
		a = argFromC(&raw)
		return nil
	})
	return a, err
}

// Dim is one dimension of a shape: a size, or (Sym not zero) a symbolic index expression.
type Dim struct {
	Size int64 // -1 when symbolic
	Sym  UOp
}

func (d Dim) String() string {
	if !d.Sym.IsZero() {
		return d.Sym.String()
	}
	return fmt.Sprint(d.Size)
}

// Shape is the node's shape: nil for nodes without one (void ops such as Sink), empty for scalars.
func (u UOp) Shape() ([]Dim, error) {
	var dims []Dim
	err := u.g.locked(func(*C.sn_graph) error {
		var cerr *C.sn_error
		rank := C.sn_uop_rank(u.p, &cerr)
		if err := check(cerr); err != nil || rank < 0 {
			return err
		}
		dims = make([]Dim, 0, int(rank))
		for i := C.size_t(0); i < C.size_t(rank); i++ {
			var v C.int64_t
			var sym *C.sn_uop
			if err := checkCode(C.sn_uop_dim(u.p, i, &v, &sym, &cerr), cerr); err != nil {
				return err
			}
			d := Dim{Size: int64(v)}
			if sym != nil {
				d.Sym = u.g.wrap(sym)
			}
			dims = append(dims, d)
		}
		return nil
	})
	return dims, err
}

// StaticShape is the shape as sizes; an error for nodes without a shape or with a symbolic dimension.
func (u UOp) StaticShape() ([]int64, error) {
	dims, err := u.Shape()
	if err != nil {
		return nil, err
	}
	if dims == nil {
		return nil, &Error{Code: CodeInvalidArg, Message: "StaticShape: the node has no shape"}
	}
	out := make([]int64, len(dims))
	for i, d := range dims {
		if !d.Sym.IsZero() {
			return nil, &Error{Code: CodeInvalidArg, Message: "StaticShape: symbolic dimension " + d.String()}
		}
		out[i] = d.Size
	}
	return out, nil
}

// Device is "CPU", "(CPU:0,CPU:1)" for a multi-device tuple, "" for none.
func (u UOp) Device() (string, error) {
	var s string
	err := u.query(func(cerr **C.sn_error) { s = takeString(C.sn_uop_device(u.p, cerr)) })
	return s, err
}

// Axis is the sharding axis of a multi-device tensor, -1 for none.
func (u UOp) Axis() (int64, error) {
	var a int64
	err := u.query(func(cerr **C.sn_error) { a = int64(C.sn_uop_axis(u.p, cerr)) })
	return a, err
}

// MinMaxInt is the interval of values an integer/bool/index node can take; clamped reports a bound outside
// int64. A float node is an error (use MinMaxFloat).
func (u UOp) MinMaxInt() (min, max int64, clamped bool, err error) {
	var lo, hi C.int64_t
	var cl C.int
	err = u.g.locked(func(*C.sn_graph) error {
		var cerr *C.sn_error
		return checkCode(C.sn_uop_min_max_int(u.p, &lo, &hi, &cl, &cerr), cerr)
	})
	return int64(lo), int64(hi), cl != 0, err
}

// MinMaxFloat is the same interval as float64s, for every dtype (infinite when unbounded).
func (u UOp) MinMaxFloat() (min, max float64, err error) {
	var lo, hi C.double
	err = u.g.locked(func(*C.sn_graph) error {
		var cerr *C.sn_error
		return checkCode(C.sn_uop_min_max_float(u.p, &lo, &hi, &cerr), cerr)
	})
	return float64(lo), float64(hi), err
}

func (u UOp) print(f func(*C.sn_uop, **C.sn_error) *C.char) (string, error) {
	var s string
	err := u.query(func(cerr **C.sn_error) { s = takeString(f(u.p, cerr)) })
	return s, err
}

// SExpr prints the node as an S-expression, e.g. "(add (mul a 2) 12)".
func (u UOp) SExpr() (string, error) {
	return u.print(func(p *C.sn_uop, e **C.sn_error) *C.char { return C.sn_uop_to_string(p, e) })
}

// Tree prints an indented tree with each node's derived properties.
func (u UOp) Tree() (string, error) {
	return u.print(func(p *C.sn_uop, e **C.sn_error) *C.char { return C.sn_uop_to_tree(p, e) })
}

// Dot prints Graphviz DOT of the DAG under the node.
func (u UOp) Dot() (string, error) {
	return u.print(func(p *C.sn_uop, e **C.sn_error) *C.char { return C.sn_uop_to_dot(p, e) })
}

// String is SExpr, or an error description.
func (u UOp) String() string {
	s, err := u.SExpr()
	if err != nil {
		return "<uop: " + err.Error() + ">"
	}
	return s
}

// ---- builders on the node (in its graph) ----

func (u UOp) build(f func(g *C.sn_graph, cerr **C.sn_error) *C.sn_uop) (UOp, error) {
	return u.g.build(f)
}

// Unary applies a unary elementwise op (OpExp2, OpSqrt, ...).
func (u UOp) Unary(op Op) (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_uop_unary(g, C.sn_op(op), u.p, e) })
}

// Binary applies a binary elementwise op (OpAdd, OpCmpLT, ...); shapes broadcast right-aligned.
func (u UOp) Binary(op Op, b UOp) (UOp, error) {
	if err := u.g.owns(b); err != nil {
		return UOp{}, err
	}
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop {
		return C.sn_uop_binary(g, C.sn_op(op), u.p, b.p, e)
	})
}

// Where is u ? a : b elementwise (u is bool).
func (u UOp) Where(a, b UOp) (UOp, error) {
	if err := u.g.owns(a, b); err != nil {
		return UOp{}, err
	}
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop {
		return C.sn_uop_ternary(g, C.SN_OP_WHERE, u.p, a.p, b.p, e)
	})
}

// Cast converts the values to dtype.
func (u UOp) Cast(dtype DType) (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_uop_cast(g, u.p, C.sn_dtype(dtype), e) })
}

// Bitcast reinterprets the storage as dtype.
func (u UOp) Bitcast(dtype DType) (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop {
		return C.sn_uop_bitcast(g, u.p, C.sn_dtype(dtype), e)
	})
}

type shapeFn func(g *C.sn_graph, x *C.sn_uop, v *C.int64_t, n C.size_t, e **C.sn_error) *C.sn_uop

func (u UOp) withInts(v []int64, f shapeFn) (UOp, error) {
	ptr, n := int64s(v)
	r, err := u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return f(g, u.p, ptr, n, e) })
	runtime.KeepAlive(v)
	return r, err
}

// Reshape reinterprets in row-major order; the element count must not change.
func (u UOp) Reshape(shape ...int64) (UOp, error) {
	return u.withInts(shape, func(g *C.sn_graph, x *C.sn_uop, v *C.int64_t, n C.size_t, e **C.sn_error) *C.sn_uop {
		return C.sn_uop_reshape(g, x, v, n, e)
	})
}

// Expand broadcasts size-1 axes to shape (same rank).
func (u UOp) Expand(shape ...int64) (UOp, error) {
	return u.withInts(shape, func(g *C.sn_graph, x *C.sn_uop, v *C.int64_t, n C.size_t, e **C.sn_error) *C.sn_uop {
		return C.sn_uop_expand(g, x, v, n, e)
	})
}

// Permute reorders the axes: output axis k is input axis order[k].
func (u UOp) Permute(order ...int64) (UOp, error) {
	return u.withInts(order, func(g *C.sn_graph, x *C.sn_uop, v *C.int64_t, n C.size_t, e **C.sn_error) *C.sn_uop {
		return C.sn_uop_permute(g, x, v, n, e)
	})
}

// Flip reverses the axes whose flag is true.
func (u UOp) Flip(flags ...bool) (UOp, error) {
	v := make([]int64, len(flags))
	for i, f := range flags {
		if f {
			v[i] = 1
		}
	}
	return u.withInts(v, func(g *C.sn_graph, x *C.sn_uop, p *C.int64_t, n C.size_t, e **C.sn_error) *C.sn_uop {
		return C.sn_uop_flip(g, x, p, n, e)
	})
}

// Reduce reduces axes with OpAdd, OpMax or OpMul; reduced axes keep size 1.
func (u UOp) Reduce(op Op, axes ...int64) (UOp, error) {
	return u.withInts(axes, func(g *C.sn_graph, x *C.sn_uop, v *C.int64_t, n C.size_t, e **C.sn_error) *C.sn_uop {
		return C.sn_uop_reduce(g, x, C.sn_op(op), v, n, e)
	})
}

func (u UOp) offsetsSizes(what string, offsets, sizes []int64,
	f func(g *C.sn_graph, x *C.sn_uop, o, s *C.int64_t, n C.size_t, e **C.sn_error) *C.sn_uop) (UOp, error) {
	if len(offsets) != len(sizes) {
		return UOp{}, &Error{Code: CodeInvalidArg,
			Message: fmt.Sprintf("%s: %d offsets but %d sizes", what, len(offsets), len(sizes))}
	}
	po, n := int64s(offsets)
	ps, _ := int64s(sizes)
	r, err := u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return f(g, u.p, po, ps, n, e) })
	runtime.KeepAlive(offsets)
	runtime.KeepAlive(sizes)
	return r, err
}

// Pad places u at offsets in a zero-filled tensor of shape sizes.
func (u UOp) Pad(offsets, sizes []int64) (UOp, error) {
	return u.offsetsSizes("Pad", offsets, sizes,
		func(g *C.sn_graph, x *C.sn_uop, o, s *C.int64_t, n C.size_t, e **C.sn_error) *C.sn_uop {
			return C.sn_uop_pad(g, x, o, s, n, e)
		})
}

// Shrink keeps sizes[k] elements from offsets[k] on each axis.
func (u UOp) Shrink(offsets, sizes []int64) (UOp, error) {
	return u.offsetsSizes("Shrink", offsets, sizes,
		func(g *C.sn_graph, x *C.sn_uop, o, s *C.int64_t, n C.size_t, e **C.sn_error) *C.sn_uop {
			return C.sn_uop_shrink(g, x, o, s, n, e)
		})
}

// Contiguous forces a contiguous materialization.
func (u UOp) Contiguous() (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_uop_contiguous(g, u.p, e) })
}

// Simplify rewrites the node with the symbolic rules.
func (u UOp) Simplify() (UOp, error) { return u.g.Simplify(u) }

// Sum reduces axes by addition (kept as size 1).
func (u UOp) Sum(axes ...int64) (UOp, error) { return u.Reduce(OpAdd, axes...) }

// Max reduces axes by maximum (kept as size 1).
func (u UOp) Max(axes ...int64) (UOp, error) { return u.Reduce(OpMax, axes...) }

// Add is u + b.
func (u UOp) Add(b UOp) (UOp, error) { return u.Binary(OpAdd, b) }

// Sub is u - b.
func (u UOp) Sub(b UOp) (UOp, error) { return u.Binary(OpSub, b) }

// Mul is u * b.
func (u UOp) Mul(b UOp) (UOp, error) { return u.Binary(OpMul, b) }

// Div is u / b (the dialect's Div).
func (u UOp) Div(b UOp) (UOp, error) { return u.Binary(OpDiv, b) }

// IDiv is floor division.
func (u UOp) IDiv(b UOp) (UOp, error) { return u.Binary(OpIDiv, b) }

// Mod is floor modulo.
func (u UOp) Mod(b UOp) (UOp, error) { return u.Binary(OpMod, b) }

// Maximum is the elementwise maximum.
func (u UOp) Maximum(b UOp) (UOp, error) { return u.Binary(OpMax, b) }

// Lt is u < b (bool).
func (u UOp) Lt(b UOp) (UOp, error) { return u.Binary(OpCmpLT, b) }

// Eq is u == b (bool).
func (u UOp) Eq(b UOp) (UOp, error) { return u.Binary(OpCmpEQ, b) }

// Neg is -u.
func (u UOp) Neg() (UOp, error) { return u.Unary(OpNeg) }

// Exp2 is 2^u.
func (u UOp) Exp2() (UOp, error) { return u.Unary(OpExp2) }

// Log2 is log2(u).
func (u UOp) Log2() (UOp, error) { return u.Unary(OpLog2) }

// Sqrt is sqrt(u).
func (u UOp) Sqrt() (UOp, error) { return u.Unary(OpSqrt) }

// Recip is 1/u.
func (u UOp) Recip() (UOp, error) { return u.Unary(OpRecip) }

// Scalar is a constant of u's dtype: ConstFloat for float dtypes, else ConstInt (v must be integral).
func (u UOp) Scalar(v float64) (UOp, error) {
	dt := u.DType()
	if dt.IsFloat() {
		return u.g.ConstFloat(dt, v)
	}
	if v != math.Trunc(v) {
		return UOp{}, &Error{Code: CodeInvalidArg, Message: fmt.Sprintf("Scalar: %v is not an integer for %s", v, dt)}
	}
	return u.g.ConstInt(dt, int64(v))
}

// AddScalar is u + v (v as a constant of u's dtype).
func (u UOp) AddScalar(v float64) (UOp, error) { return u.scalarOp(OpAdd, v) }

// MulScalar is u * v (v as a constant of u's dtype).
func (u UOp) MulScalar(v float64) (UOp, error) { return u.scalarOp(OpMul, v) }

func (u UOp) scalarOp(op Op, v float64) (UOp, error) {
	c, err := u.Scalar(v)
	if err != nil {
		return UOp{}, err
	}
	return u.Binary(op, c)
}
