package sinter

// Tensor-level builders (matmul, conv2d, softmax, ...). Axis arguments accept negative values counted from
// the end (-1 = last axis); each builder checks its arguments and fails with CodeInvalidArg naming the
// builder, the parameter and the values.

/*
#include <stdlib.h>
#include <sinter/sinter.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// pairPtr passes an optional {rows, columns} pair (nil: the builder's default).
func pairPtr(p *[2]int64) *C.int64_t {
	if p == nil {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&p[0]))
}

// optional is the handle of u, or NULL for the zero UOp (an absent optional operand).
func (g *Graph) optional(u UOp) (*C.sn_uop, error) {
	if u.IsZero() {
		return nil, nil
	}
	if err := g.owns(u); err != nil {
		return nil, err
	}
	return u.p, nil
}

// Input is a new input tensor of dtype and shape on device ("" for "CPU"). Compiled programs take their
// inputs in the order the inputs were created, unless CompileOptions.Inputs says otherwise.
func (g *Graph) Input(dtype DType, shape []int64, device string) (UOp, error) {
	cdev := cDevice(device)
	defer C.free(unsafe.Pointer(cdev))
	ptr, n := int64s(shape)
	u, err := g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_tensor_input(p, C.sn_dtype(dtype), ptr, n, cdev, cerr)
	})
	runtime.KeepAlive(shape)
	return u, err
}

// InputSym is an input tensor whose dims may be symbolic: each dim is an index UOp, a constant
// (ConstInt with DTypeIndex), a bounded variable (Var) or index arithmetic of those. A program built on it
// compiles once and runs at any values in bounds (Program.RunVars; Program.AllocOutputVars sizes outputs).
func (g *Graph) InputSym(dtype DType, dims []UOp, device string) (UOp, error) {
	arr, n, err := g.uopArray(dims)
	if err != nil {
		return UOp{}, err
	}
	defer C.free(unsafe.Pointer(arr))
	cdev := cDevice(device)
	defer C.free(unsafe.Pointer(cdev))
	return g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_tensor_input_sym(p, C.sn_dtype(dtype), arr, n, cdev, cerr)
	})
}

// ReshapeSym reshapes to dims that may be symbolic (as in InputSym); a symbolic dim stays its own axis.
func (u UOp) ReshapeSym(dims ...UOp) (UOp, error) {
	arr, n, err := u.g.uopArray(dims)
	if err != nil {
		return UOp{}, err
	}
	defer C.free(unsafe.Pointer(arr))
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_reshape_sym(g, u.p, arr, n, e) })
}

// ExpandSym broadcasts size-1 axes to dims that may be symbolic (as in InputSym).
func (u UOp) ExpandSym(dims ...UOp) (UOp, error) {
	arr, n, err := u.g.uopArray(dims)
	if err != nil {
		return UOp{}, err
	}
	defer C.free(unsafe.Pointer(arr))
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_expand_sym(g, u.p, arr, n, e) })
}

// Arange is [0, 1, ..., n-1] of dtype.
func (g *Graph) Arange(n int64, dtype DType) (UOp, error) {
	return g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_tensor_arange(p, C.int64_t(n), C.sn_dtype(dtype), cerr)
	})
}

// Rand is uniform values in [0, 1) of a float dtype from a counter-based generator keyed by seed.
func (g *Graph) Rand(shape []int64, seed uint64, dtype DType) (UOp, error) {
	ptr, n := int64s(shape)
	u, err := g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_tensor_rand(p, ptr, n, C.uint64_t(seed), C.sn_dtype(dtype), cerr)
	})
	runtime.KeepAlive(shape)
	return u, err
}

// Randn is standard normal values from the same generator.
func (g *Graph) Randn(shape []int64, seed uint64, dtype DType) (UOp, error) {
	ptr, n := int64s(shape)
	u, err := g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_tensor_randn(p, ptr, n, C.uint64_t(seed), C.sn_dtype(dtype), cerr)
	})
	runtime.KeepAlive(shape)
	return u, err
}

// Cat concatenates xs (one dtype and rank) along axis.
func (g *Graph) Cat(axis int64, xs ...UOp) (UOp, error) {
	arr, n, err := g.uopArray(xs)
	if err != nil {
		return UOp{}, err
	}
	defer C.free(unsafe.Pointer(arr))
	return g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_tensor_cat(p, arr, n, C.int64_t(axis), cerr)
	})
}

// Stack stacks same-shape xs along a new axis.
func (g *Graph) Stack(axis int64, xs ...UOp) (UOp, error) {
	arr, n, err := g.uopArray(xs)
	if err != nil {
		return UOp{}, err
	}
	defer C.free(unsafe.Pointer(arr))
	return g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_tensor_stack(p, arr, n, C.int64_t(axis), cerr)
	})
}

// Gemm is (M,K) @ (K,N) -> (M,N).
func (u UOp) Gemm(b UOp) (UOp, error) {
	if err := u.g.owns(b); err != nil {
		return UOp{}, err
	}
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_gemm(g, u.p, b.p, e) })
}

// Matmul is (..., M,K) @ (..., K,N) -> (..., M,N) with broadcast batch dims.
func (u UOp) Matmul(b UOp) (UOp, error) {
	if err := u.g.owns(b); err != nil {
		return UOp{}, err
	}
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_matmul(g, u.p, b.p, e) })
}

// Conv2dOptions are the optional parameters of Conv2d; the zero value is stride 1, no padding,
// dilation 1, one group.
type Conv2dOptions struct {
	Stride, Padding, Dilation *[2]int64
	Groups                    int64 // 0 is taken as 1
}

// Conv2d convolves u (N,Cin,H,W) with w (Cout,Cin/groups,KH,KW) and adds bias (Cout,) unless it is the
// zero UOp.
func (u UOp) Conv2d(w, bias UOp, opts Conv2dOptions) (UOp, error) {
	if err := u.g.owns(w); err != nil {
		return UOp{}, err
	}
	cb, err := u.g.optional(bias)
	if err != nil {
		return UOp{}, err
	}
	groups := opts.Groups
	if groups == 0 {
		groups = 1
	}
	r, err := u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_conv2d(g, u.p, w.p, cb, pairPtr(opts.Stride), pairPtr(opts.Padding),
			pairPtr(opts.Dilation), C.int64_t(groups), e)
	})
	runtime.KeepAlive(opts)
	return r, err
}

// PoolOptions are the parameters of MaxPool2d and AvgPool2d: Stride nil = Kernel, Padding nil = none.
type PoolOptions struct {
	Kernel          [2]int64
	Stride, Padding *[2]int64
}

// MaxPool2d is max pooling over the last two axes.
func (u UOp) MaxPool2d(opts PoolOptions) (UOp, error) {
	r, err := u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_max_pool2d(g, u.p, pairPtr(&opts.Kernel), pairPtr(opts.Stride), pairPtr(opts.Padding), e)
	})
	runtime.KeepAlive(opts)
	return r, err
}

// AvgPool2d is average pooling over the last two axes (zero padding counts).
func (u UOp) AvgPool2d(opts PoolOptions) (UOp, error) {
	r, err := u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_avg_pool2d(g, u.p, pairPtr(&opts.Kernel), pairPtr(opts.Stride), pairPtr(opts.Padding), e)
	})
	runtime.KeepAlive(opts)
	return r, err
}

// Softmax is the softmax along axis (max-subtracted).
func (u UOp) Softmax(axis int64) (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_softmax(g, u.p, C.int64_t(axis), e)
	})
}

// LogSoftmax is the log-softmax along axis.
func (u UOp) LogSoftmax(axis int64) (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_log_softmax(g, u.p, C.int64_t(axis), e)
	})
}

// LayerNorm normalizes over the last naxes axes, then multiplies by weight and adds bias unless they are
// zero UOps.
func (u UOp) LayerNorm(naxes int64, weight, bias UOp, eps float64) (UOp, error) {
	cw, err := u.g.optional(weight)
	if err != nil {
		return UOp{}, err
	}
	cb, err := u.g.optional(bias)
	if err != nil {
		return UOp{}, err
	}
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_layernorm(g, u.p, C.int64_t(naxes), cw, cb, C.double(eps), e)
	})
}

// Relu is max(u, 0).
func (u UOp) Relu() (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_relu(g, u.p, e) })
}

// Gelu is GELU (tanh approximation).
func (u UOp) Gelu() (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_gelu(g, u.p, e) })
}

// Sigmoid is 1 / (1 + e^-u).
func (u UOp) Sigmoid() (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_sigmoid(g, u.p, e) })
}

// Tanh is tanh(u).
func (u UOp) Tanh() (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_tanh(g, u.p, e) })
}

// Exp is e^u.
func (u UOp) Exp() (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_exp(g, u.p, e) })
}

// Log is the natural logarithm.
func (u UOp) Log() (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_log(g, u.p, e) })
}

// CumSum is the inclusive cumulative sum along axis.
func (u UOp) CumSum(axis int64) (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_cumsum(g, u.p, C.int64_t(axis), e) })
}

// ArgMax is the index (int32) of the first maximum along axis; the axis is removed unless keepdim.
func (u UOp) ArgMax(axis int64, keepdim bool) (UOp, error) {
	k := C.int(0)
	if keepdim {
		k = 1
	}
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_argmax(g, u.p, C.int64_t(axis), k, e)
	})
}

// OneHot maps integer indices u to u.shape + (n,) of dtype: 1 where index == j, else 0.
func (u UOp) OneHot(n int64, dtype DType) (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_one_hot(g, u.p, C.int64_t(n), C.sn_dtype(dtype), e)
	})
}

// Gather is PyTorch's gather along axis with indices idx.
func (u UOp) Gather(axis int64, idx UOp) (UOp, error) {
	if err := u.g.owns(idx); err != nil {
		return UOp{}, err
	}
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_gather(g, u.p, C.int64_t(axis), idx.p, e)
	})
}

// ScatterAdd is PyTorch's scatter_add along axis: u plus val added at the positions idx names.
func (u UOp) ScatterAdd(axis int64, idx, val UOp) (UOp, error) {
	if err := u.g.owns(idx, val); err != nil {
		return UOp{}, err
	}
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_scatter_add(g, u.p, C.int64_t(axis), idx.p, val.p, e)
	})
}

// Gradient returns d loss / d wrt[i] for every wrt[i] (each of its shape and dtype). loss is a float tensor
// of one element, e.g. a full Sum. (API version 5.)
func (g *Graph) Gradient(loss UOp, wrt ...UOp) ([]UOp, error) {
	if loss.g != g {
		return nil, &Error{Code: CodeInvalidArg, Message: "Gradient: loss is a zero UOp or belongs to another graph"}
	}
	arr, n, err := g.uopArray(wrt)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(arr))
	grads := (**C.sn_uop)(C.malloc(C.size_t(len(wrt)+1) * C.size_t(unsafe.Sizeof((*C.sn_uop)(nil)))))
	defer C.free(unsafe.Pointer(grads))
	var out []UOp
	err = g.locked(func(p *C.sn_graph) error {
		var cerr *C.sn_error
		if err := checkCode(C.sn_tensor_gradient(p, loss.p, arr, n, grads, &cerr), cerr); err != nil {
			return err
		}
		for _, u := range unsafe.Slice(grads, len(wrt)) {
			out = append(out, g.wrap(u))
		}
		return nil
	})
	return out, err
}

// Assign is an in-place update: it writes value into the buffer of input target when a program that
// includes the result (among its outputs or in CompileOptions.Effects) runs, after every read of the old
// value. The result reads as value. (API version 5.)
func (g *Graph) Assign(target, value UOp) (UOp, error) {
	if target.g != g || value.g != g {
		return UOp{}, &Error{Code: CodeInvalidArg, Message: "Assign: a zero UOp or one of another graph"}
	}
	return g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_tensor_assign(p, target.p, value.p, cerr)
	})
}

// Detach is u with the gradient stopped (Gradient does not flow through this use).
func (u UOp) Detach() (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_detach(g, u.p, e) })
}

// Index is the spec's Index: indices[k] (an integer tensor of shape () or (m,)) selects along axis k of u, from
// the left; a ()-shaped index removes the axis, an (m,)-shaped one makes it m long (a gather of rows for one
// index). An index outside its axis reads 0. (API version 5.)
func (u UOp) Index(indices ...UOp) (UOp, error) {
	arr, n, err := u.g.uopArray(indices)
	if err != nil {
		return UOp{}, err
	}
	defer C.free(unsafe.Pointer(arr))
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_index(g, u.p, arr, n, e) })
}

// Slice is the spec's Slice: size elements of dtype read from u's storage (its row-major bytes), starting offset
// elements of u's dtype in; shape (size,). Past the end is CodeInvalidArg. (API version 5.)
func (u UOp) Slice(offset, size int64, dtype DType) (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_slice(g, u.p, C.int64_t(offset), C.int64_t(size), C.sn_dtype(dtype), e)
	})
}

// Binary is the spec's Binary: a copy of data as a constant uint8 tensor of shape (len(data),); view it with
// Bitcast or Slice. A program that reads it holds the bytes in device memory, filled once when compiled.
// (API version 5.)
func (g *Graph) Binary(data []byte) (UOp, error) {
	var ptr unsafe.Pointer
	if len(data) > 0 {
		ptr = unsafe.Pointer(&data[0])
	}
	u, err := g.build(func(p *C.sn_graph, cerr **C.sn_error) *C.sn_uop {
		return C.sn_tensor_binary(p, ptr, C.size_t(len(data)), cerr)
	})
	runtime.KeepAlive(data)
	return u, err
}

// ---- multi-device (API version 8) ----

// multiBuild calls a builder that takes a device or device tuple name.
func (u UOp) multiBuild(devices string, fn func(g *C.sn_graph, d *C.char, e **C.sn_error) *C.sn_uop) (UOp, error) {
	cdev := C.CString(devices)
	defer C.free(unsafe.Pointer(cdev))
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return fn(g, cdev, e) })
}

// Shard splits u along axis over the devices of the tuple devices ("CPU:0,CPU:1"); the axis length must
// divide by the device count. (API version 8.)
func (u UOp) Shard(devices string, axis int64) (UOp, error) {
	return u.multiBuild(devices, func(g *C.sn_graph, d *C.char, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_shard(g, u.p, d, C.int64_t(axis), e)
	})
}

// To is the spec's Copy: u on device (one device gathers it; a tuple shards axis 0). (API version 8.)
func (u UOp) To(device string) (UOp, error) {
	return u.multiBuild(device, func(g *C.sn_graph, d *C.char, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_to(g, u.p, d, e)
	})
}

// Broadcast replicates u (on one device) on every device of the tuple devices. (API version 8.)
func (u UOp) Broadcast(devices string) (UOp, error) {
	return u.multiBuild(devices, func(g *C.sn_graph, d *C.char, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_broadcast(g, u.p, d, e)
	})
}

// Scatter splits u (on one device) on axis 0 over the tuple devices. (API version 8.)
func (u UOp) Scatter(devices string) (UOp, error) {
	return u.multiBuild(devices, func(g *C.sn_graph, d *C.char, e **C.sn_error) *C.sn_uop {
		return C.sn_tensor_scatter(g, u.p, d, e)
	})
}

// GatherDevices collects the shards of u (sharded on axis 0) on the first device of its tuple. (API version 8.)
func (u UOp) GatherDevices() (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_gather_devices(g, u.p, e) })
}

// ReduceDevices sums the shards of u (sharded on axis 0) on the first device of its tuple. (API version 8.)
func (u UOp) ReduceDevices() (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_reduce_devices(g, u.p, e) })
}

// AllGather collects the shards of u (sharded on axis 0) on every device. (API version 8.)
func (u UOp) AllGather() (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_allgather(g, u.p, e) })
}

// ReduceScatter sums the shards of u (sharded on axis 0) over the devices and shards the sum on axis 0.
// (API version 8.)
func (u UOp) ReduceScatter() (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_reduce_scatter(g, u.p, e) })
}

// AllReduce sums the shards of u (sharded on axis 0) over the devices; every device gets the sum. (API
// version 8.)
func (u UOp) AllReduce() (UOp, error) {
	return u.build(func(g *C.sn_graph, e **C.sn_error) *C.sn_uop { return C.sn_tensor_allreduce(g, u.p, e) })
}
