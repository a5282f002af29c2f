package sinter

/*
#include <stdlib.h>
#include <sinter/sinter.h>
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// liveGraphs counts Graphs not yet released (tests use it to check the finalizer safety net).
var liveGraphs atomic.Int64

// Context holds the library state graphs share. Safe for concurrent use.
type Context struct {
	mu sync.RWMutex // guards p against Close racing with use
	p  *C.sn_context
}

// NewContext creates a context. Close it when done (graphs keep it alive as long as they need it).
func NewContext() (*Context, error) {
	var cerr *C.sn_error
	p := C.sn_context_create(&cerr)
	if err := check(cerr); err != nil {
		return nil, err
	}
	c := &Context{p: p}
	runtime.SetFinalizer(c, (*Context).Close)
	return c, nil
}

// Close releases the context. Idempotent.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p != nil {
		C.sn_context_release(c.p)
		c.p = nil
		runtime.SetFinalizer(c, nil)
	}
	return nil
}

// NewGraph creates an empty graph in this context.
func (c *Context) NewGraph() (*Graph, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.p == nil {
		return nil, ErrClosed
	}
	var cerr *C.sn_error
	p := C.sn_graph_create(c.p, &cerr)
	runtime.KeepAlive(c)
	if err := check(cerr); err != nil {
		return nil, err
	}
	g := &Graph{p: p}
	liveGraphs.Add(1)
	runtime.SetFinalizer(g, (*Graph).Close)
	return g, nil
}

// Graph is an arena of hash-consed UOps. Its methods lock a mutex: the C API allows one thread at a time per
// graph.
type Graph struct {
	mu sync.Mutex
	p  *C.sn_graph
}

// Close releases the graph and every node it made; later calls on its UOps return ErrClosed. Idempotent.
func (g *Graph) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.p != nil {
		C.sn_graph_release(g.p)
		liveGraphs.Add(-1)
		g.p = nil
		runtime.SetFinalizer(g, nil)
	}
	return nil
}

// locked runs f with the graph's mutex held and its handle live. A nil g (the graph of the zero UOp) is an
// error, so every UOp method is safe on the zero UOp.
func (g *Graph) locked(f func(p *C.sn_graph) error) error {
	if g == nil {
		return errZero
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.p == nil {
		return ErrClosed
	}
	err := f(g.p)
	runtime.KeepAlive(g)
	return err
}

// wrap makes the UOp value for a node of g.
func (g *Graph) wrap(p *C.sn_uop) UOp { return UOp{p: p, g: g} }

// build runs one node-returning C call under the lock.
func (g *Graph) build(f func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop) (UOp, error) {
	var out UOp
	err := g.locked(func(p *C.sn_graph) error {
		var cerr *C.sn_error
		u := f(p, &cerr)
		if err := check(cerr); err != nil {
			return err
		}
		out = g.wrap(u)
		return nil
	})
	return out, err
}

// uopArray copies node handles into C memory (Go memory passed to C must not hold pointers that Go
// manages; these are C pointers, but C memory keeps the rule obvious and the array stable). Every node must
// belong to g. The caller frees the array with C.free.
func (g *Graph) uopArray(srcs []UOp) (**C.sn_uop, C.size_t, error) {
	if len(srcs) == 0 {
		return nil, 0, nil
	}
	arr := (**C.sn_uop)(C.malloc(C.size_t(len(srcs)) * C.size_t(unsafe.Sizeof((*C.sn_uop)(nil)))))
	view := unsafe.Slice(arr, len(srcs))
	for i, u := range srcs {
		if u.g != g {
			C.free(unsafe.Pointer(arr))
			return nil, 0, &Error{Code: CodeInvalidArg, Message: "a source is a zero UOp or belongs to another graph"}
		}
		view[i] = u.p
	}
	return arr, C.size_t(len(srcs)), nil
}

// int64s passes a Go []int64 to C (Go memory without Go pointers may be passed for the call's duration).
func int64s(v []int64) (*C.int64_t, C.size_t) {
	if len(v) == 0 {
		return nil, 0
	}
	return (*C.int64_t)(unsafe.Pointer(&v[0])), C.size_t(len(v))
}

// cDevice converts a device name; "" passes NULL (no device). Free with C.free.
func cDevice(device string) *C.char {
	if device == "" {
		return nil
	}
	return C.CString(device)
}

// NodeCount is the number of distinct nodes in the graph.
func (g *Graph) NodeCount() int {
	n := 0
	_ = g.locked(func(p *C.sn_graph) error {
		n = int(C.sn_graph_node_count(p, nil))
		return nil
	})
	return n
}

// Node is the generic builder: the node (op, dtype, srcs, arg), verified against the spec.
func (g *Graph) Node(op Op, dtype DType, srcs []UOp, arg Arg) (UOp, error) {
	arr, n, err := g.uopArray(srcs)
	if err != nil {
		return UOp{}, err
	}
	defer C.free(unsafe.Pointer(arr))
	carg, free, err := arg.toC()
	if err != nil {
		return UOp{}, err
	}
	defer free()
	return g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_uop_new(p, C.sn_op(op), C.sn_dtype(dtype), arr, n, carg, cerr)
	})
}

// ConstInt is a scalar constant (every dtype but void; a float dtype gets the value converted).
func (g *Graph) ConstInt(dtype DType, value int64) (UOp, error) {
	return g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_uop_const_int(p, C.sn_dtype(dtype), C.int64_t(value), cerr)
	})
}

// ConstFloat is a scalar constant of a float dtype (rounded to it).
func (g *Graph) ConstFloat(dtype DType, value float64) (UOp, error) {
	return g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_uop_const_float(p, C.sn_dtype(dtype), C.double(value), cerr)
	})
}

// Var is a bounded symbolic integer min <= name <= max (index dtype).
func (g *Graph) Var(name string, min, max int64) (UOp, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_uop_var(p, cname, C.int64_t(min), C.int64_t(max), cerr)
	})
}

// Buffer is a new, distinct buffer of size elements on device ("" for none). Shape (size,).
func (g *Graph) Buffer(dtype DType, size int64, device string) (UOp, error) {
	cdev := cDevice(device)
	defer C.free(unsafe.Pointer(cdev))
	return g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_uop_buffer(p, C.sn_dtype(dtype), C.int64_t(size), cdev, cerr)
	})
}

// Param is placeholder number slot with the given shape on device ("" for none).
func (g *Graph) Param(slot int64, dtype DType, shape []int64, device string) (UOp, error) {
	cdev := cDevice(device)
	defer C.free(unsafe.Pointer(cdev))
	ptr, n := int64s(shape)
	u, err := g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_uop_param(p, C.int64_t(slot), C.sn_dtype(dtype), ptr, n, cdev, cerr)
	})
	runtime.KeepAlive(shape)
	return u, err
}

// Alu is an elementwise op over 1 to 3 sources (the dtype is derived).
func (g *Graph) Alu(op Op, srcs ...UOp) (UOp, error) {
	arr, n, err := g.uopArray(srcs)
	if err != nil {
		return UOp{}, err
	}
	defer C.free(unsafe.Pointer(arr))
	return g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_uop_alu(p, C.sn_op(op), arr, n, cerr)
	})
}

// Sink collects several roots into one void node.
func (g *Graph) Sink(srcs ...UOp) (UOp, error) {
	arr, n, err := g.uopArray(srcs)
	if err != nil {
		return UOp{}, err
	}
	defer C.free(unsafe.Pointer(arr))
	return g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_uop_sink(p, arr, n, cerr)
	})
}

// Simplify rewrites root with the symbolic rules to a fixed point (root itself when nothing changes).
func (g *Graph) Simplify(root UOp) (UOp, error) {
	if err := g.owns(root); err != nil {
		return UOp{}, err
	}
	return g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_graph_simplify(p, root.p, cerr)
	})
}

// SimplifyGiven simplifies expr assuming the bool expression valid holds.
func (g *Graph) SimplifyGiven(valid, expr UOp) (UOp, error) {
	if err := g.owns(valid, expr); err != nil {
		return UOp{}, err
	}
	return g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_graph_simplify_given(p, valid.p, expr.p, cerr)
	})
}

func (g *Graph) owns(us ...UOp) error {
	for _, u := range us {
		if u.g != g {
			return &Error{Code: CodeInvalidArg, Message: "a uop is a zero UOp or belongs to another graph"}
		}
	}
	return nil
}
