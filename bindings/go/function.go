package sinter

// Functions (API version 5): reusable sub-graphs, the spec's Function/Call.

/*
#include <stdlib.h>
#include <sinter/sinter.h>
*/
import "C"

import (
	"unsafe"
)

// FunctionFlags are the flags of a Function (SN_FUNCTION_*); combine them with |.
type FunctionFlags uint32

const (
	// FunctionPrecompile materializes a function's arguments and results, so that every call runs the same
	// kernels, compiled once. Without it a call is substituted when compiled and fuses with its callers.
	FunctionPrecompile FunctionFlags = C.SN_FUNCTION_PRECOMPILE
)

// FunctionParam is the dtype and shape of one parameter of a Function.
type FunctionParam struct {
	DType DType
	Shape []int64
}

// Function is a reusable sub-graph of a Graph: begin it with Graph.NewFunction, build its body from Param with
// any builder, End it with the body's outputs, then Call it on arguments any number of times. It belongs to its
// graph and lives as long as the graph (there is nothing to close); after Graph.Close its methods return
// ErrClosed.
type Function struct {
	g        *Graph
	p        *C.sn_function
	nparams  int
	noutputs int // 0 until End succeeds
}

// NewFunction begins a function with one parameter per FunctionParam. (API version 5.)
func (g *Graph) NewFunction(params ...FunctionParam) (*Function, error) {
	n := len(params)
	// The shapes are an array of pointers, so they and the arrays beside them live in C memory.
	total := 0
	for _, prm := range params {
		total += len(prm.Shape)
	}
	word := C.size_t(unsafe.Sizeof(uintptr(0)))
	dtypes := (*C.sn_dtype)(C.malloc(C.size_t(n+1) * C.size_t(unsafe.Sizeof(C.sn_dtype(0)))))
	defer C.free(unsafe.Pointer(dtypes))
	ranks := (*C.size_t)(C.malloc(C.size_t(n+1) * C.size_t(unsafe.Sizeof(C.size_t(0)))))
	defer C.free(unsafe.Pointer(ranks))
	shapes := (**C.int64_t)(C.malloc(C.size_t(n+1) * word))
	defer C.free(unsafe.Pointer(shapes))
	dims := (*C.int64_t)(C.malloc(C.size_t(total+1) * C.size_t(unsafe.Sizeof(C.int64_t(0)))))
	defer C.free(unsafe.Pointer(dims))
	dv, rv, sv, all := unsafe.Slice(dtypes, n+1), unsafe.Slice(ranks, n+1), unsafe.Slice(shapes, n+1),
		unsafe.Slice(dims, total+1)
	at := 0
	for k, prm := range params {
		dv[k], rv[k], sv[k] = C.sn_dtype(prm.DType), C.size_t(len(prm.Shape)), nil
		if len(prm.Shape) > 0 {
			sv[k] = &all[at]
		}
		for _, d := range prm.Shape {
			all[at] = C.int64_t(d)
			at++
		}
	}
	var fn *Function
	err := g.locked(func(p *C.sn_graph) error {
		var cerr *C.sn_error
		f := C.sn_function_begin(p, C.size_t(n), dtypes, shapes, ranks, &cerr)
		if err := check(cerr); err != nil {
			return err
		}
		fn = &Function{g: g, p: f, nparams: n}
		return nil
	})
	return fn, err
}

// NumParams is the number of parameters.
func (f *Function) NumParams() int { return f.nparams }

// NumOutputs is the number of outputs, 0 before End.
func (f *Function) NumOutputs() int {
	n := 0
	_ = f.g.locked(func(*C.sn_graph) error {
		n = f.noutputs
		return nil
	})
	return n
}

// Param is the node standing for parameter i inside the body.
func (f *Function) Param(i int) (UOp, error) {
	if i < 0 {
		return UOp{}, &Error{Code: CodeInvalidArg, Message: "Function.Param: negative parameter index"}
	}
	return f.g.build(func(_ *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_function_param(f.p, C.size_t(i), cerr)
	})
}

// Params are the nodes of all parameters, in order.
func (f *Function) Params() ([]UOp, error) {
	out := make([]UOp, f.nparams)
	for i := range out {
		u, err := f.Param(i)
		if err != nil {
			return nil, err
		}
		out[i] = u
	}
	return out, nil
}

// End ends the body: the function returns outputs (nodes of its graph). Once per function.
func (f *Function) End(outputs ...UOp) error {
	arr, n, err := f.g.uopArray(outputs)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(arr))
	return f.g.locked(func(*C.sn_graph) error {
		var cerr *C.sn_error
		if err := checkCode(C.sn_function_end(f.p, arr, n, &cerr), cerr); err != nil {
			return err
		}
		f.noutputs = len(outputs)
		return nil
	})
}

// SetFlags sets the function's flags (replacing the previous ones), before or after End; calls made afterwards
// see them.
func (f *Function) SetFlags(flags FunctionFlags) error {
	return f.g.locked(func(*C.sn_graph) error {
		var cerr *C.sn_error
		return checkCode(C.sn_function_set_flags(f.p, C.uint32_t(flags), &cerr), cerr)
	})
}

// Call calls the ended function on args (nodes of its graph, each of its parameter's shape and dtype): result i
// is output i. A wrong argument is a CodeInvalidArg error naming it.
func (f *Function) Call(args ...UOp) ([]UOp, error) {
	arr, n, err := f.g.uopArray(args)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(arr))
	var out []UOp
	err = f.g.locked(func(p *C.sn_graph) error {
		// Before End the library reports "no body yet" without writing results; one slot keeps it non-NULL.
		slots := f.noutputs
		if slots == 0 {
			slots = 1
		}
		results := (**C.sn_uop)(C.malloc(C.size_t(slots) * C.size_t(unsafe.Sizeof((*C.sn_uop)(nil)))))
		defer C.free(unsafe.Pointer(results))
		var cerr *C.sn_error
		if err := checkCode(C.sn_function_call(p, f.p, arr, n, results, &cerr), cerr); err != nil {
			return err
		}
		if f.noutputs == 0 {
			return &Error{Code: CodeInternal, Message: "Function.Call: the function has no body, yet the call succeeded"}
		}
		for _, u := range unsafe.Slice(results, f.noutputs) {
			out = append(out, f.g.wrap(u))
		}
		return nil
	})
	return out, err
}
