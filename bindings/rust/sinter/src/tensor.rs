//! Tensor-level builders (matmul, conv2d, softmax, ...). Axis arguments accept negative values counted from the
//! end (-1 = last axis); each builder checks its arguments and fails with [`Code::INVALID_ARG`] naming the
//! builder, the parameter and the values.
//!
//! [`Code::INVALID_ARG`]: crate::Code::INVALID_ARG
use std::ptr;

use crate::enums::DType;
use crate::error::{call_code, Result};
use crate::graph::{c_string, Graph, UOp};
use crate::sys;

/// Optional pair argument (`{rows, columns}`) as a C pointer (NULL = the builder's default).
fn pair(p: &Option<[i64; 2]>) -> *const i64 {
    p.as_ref().map_or(ptr::null(), |a| a.as_ptr())
}

impl Graph {
    /// A new input tensor of `dtype` and `shape` on `device` (None: "CPU"). Compiled programs take their inputs
    /// in the order the inputs were created, unless [`CompileOptions::inputs`](crate::CompileOptions) says
    /// otherwise.
    pub fn input(&self, dtype: DType, shape: &[i64], device: Option<&str>) -> Result<UOp<'_>> {
        let device = device.map(|d| c_string("Graph::input", d)).transpose()?;
        let dev = device.as_ref().map_or(ptr::null(), |c| c.as_ptr());
        // SAFETY: self is live; shape and device outlive the call.
        self.build_node(|g, e| unsafe { sys::sn_tensor_input(g, dtype.0, shape.as_ptr(), shape.len(), dev, e) })
    }

    /// An input tensor with symbolic dims (API version 7): each dim is an index uop, a constant
    /// ([`Graph::const_int`] of [`DType::INDEX`]), a bounded [`Graph::var`] or index arithmetic of those. Its
    /// buffer holds the largest shape the variables allow; a program built on it compiles once and runs at any
    /// values in bounds ([`Program::run_with_vars`](crate::Program::run_with_vars)).
    pub fn input_sym<'g>(&'g self, dtype: DType, dims: &[UOp<'_>], device: Option<&str>) -> Result<UOp<'g>> {
        let dims = self.handles("Graph::input_sym", dims)?;
        let device = device.map(|d| c_string("Graph::input_sym", d)).transpose()?;
        let dev = device.as_ref().map_or(ptr::null(), |c| c.as_ptr());
        // SAFETY: dims are uops of this graph; dims and device outlive the call.
        self.build_node(|g, e| unsafe { sys::sn_tensor_input_sym(g, dtype.0, dims.as_ptr(), dims.len(), dev, e) })
    }

    /// `[0, 1, ..., n-1]` of `dtype`.
    pub fn arange(&self, n: i64, dtype: DType) -> Result<UOp<'_>> {
        // SAFETY: self is live.
        self.build_node(|g, e| unsafe { sys::sn_tensor_arange(g, n, dtype.0, e) })
    }

    /// Uniform values in [0, 1) of a float `dtype`, from a counter-based generator keyed by `seed`.
    pub fn rand(&self, shape: &[i64], seed: u64, dtype: DType) -> Result<UOp<'_>> {
        // SAFETY: self is live; shape outlives the call.
        self.build_node(|g, e| unsafe { sys::sn_tensor_rand(g, shape.as_ptr(), shape.len(), seed, dtype.0, e) })
    }

    /// Standard normal values from the same generator.
    pub fn randn(&self, shape: &[i64], seed: u64, dtype: DType) -> Result<UOp<'_>> {
        // SAFETY: as above.
        self.build_node(|g, e| unsafe { sys::sn_tensor_randn(g, shape.as_ptr(), shape.len(), seed, dtype.0, e) })
    }

    /// Concatenation along `axis` of tensors of one dtype and rank.
    pub fn cat<'g>(&'g self, xs: &[UOp<'_>], axis: i64) -> Result<UOp<'g>> {
        let xs = self.handles("Graph::cat", xs)?;
        // SAFETY: xs are uops of this graph.
        self.build_node(|g, e| unsafe { sys::sn_tensor_cat(g, xs.as_ptr(), xs.len(), axis, e) })
    }

    /// Reverse-mode gradients: `d loss / d wrt[i]` for every `wrt[i]`, each of its shape and dtype. `loss` is a
    /// float tensor of one element (e.g. a full `sum`). See `sn_tensor_gradient`.
    pub fn gradient<'g>(&'g self, loss: UOp<'_>, wrt: &[UOp<'_>]) -> Result<Vec<UOp<'g>>> {
        let l = self.handle("Graph::gradient (loss)", loss)?;
        let w = self.handles("Graph::gradient (wrt)", wrt)?;
        let mut grads: Vec<*mut sys::sn_uop> = vec![ptr::null_mut(); w.len()];
        // SAFETY: l and w are uops of this graph; grads has one slot per wrt.
        call_code(|e| unsafe {
            sys::sn_tensor_gradient(self.as_ptr(), l, w.as_ptr(), w.len(), grads.as_mut_ptr(), e)
        })?;
        grads.into_iter().map(|p| self.build_node(|_, _| p)).collect()
    }

    /// An in-place update: writes `value` into the buffer of input `target` when a program that includes the
    /// result (among its outputs or in [`CompileOptions::effects`](crate::CompileOptions)) runs, after every
    /// read of the old value. The result reads as `value`.
    pub fn assign<'g>(&'g self, target: UOp<'_>, value: UOp<'_>) -> Result<UOp<'g>> {
        let t = self.handle("Graph::assign (target)", target)?;
        let v = self.handle("Graph::assign (value)", value)?;
        // SAFETY: both are uops of this graph.
        self.build_node(|g, e| unsafe { sys::sn_tensor_assign(g, t, v, e) })
    }

    /// Stacks same-shape tensors along a new `axis`.
    pub fn stack<'g>(&'g self, xs: &[UOp<'_>], axis: i64) -> Result<UOp<'g>> {
        let xs = self.handles("Graph::stack", xs)?;
        // SAFETY: xs are uops of this graph.
        self.build_node(|g, e| unsafe { sys::sn_tensor_stack(g, xs.as_ptr(), xs.len(), axis, e) })
    }

    /// The spec's Binary: a copy of `data` as a constant uint8 tensor of shape `(data.len(),)`; view it with
    /// [`UOp::bitcast`] or [`UOp::slice`]. A program that reads it holds the bytes in device memory, filled once
    /// when compiled. (API version 5.)
    pub fn binary(&self, data: &[u8]) -> Result<UOp<'_>> {
        // SAFETY: self is live; data outlives the call (the library copies it).
        self.build_node(|g, e| unsafe { sys::sn_tensor_binary(g, data.as_ptr().cast(), data.len(), e) })
    }
}

/// Parameters of [`UOp::conv2d`]; `Default` is stride 1, no padding, dilation 1, one group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Conv2d {
    pub stride: Option<[i64; 2]>,
    pub padding: Option<[i64; 2]>,
    pub dilation: Option<[i64; 2]>,
    /// 0 is taken as 1.
    pub groups: i64,
}

/// Parameters of [`UOp::max_pool2d`] and [`UOp::avg_pool2d`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool2d {
    pub kernel: [i64; 2],
    /// None: the kernel size.
    pub stride: Option<[i64; 2]>,
    /// None: no padding.
    pub padding: Option<[i64; 2]>,
}

impl Pool2d {
    /// A `kernel` pool with stride = kernel and no padding.
    pub fn new(kernel: [i64; 2]) -> Pool2d {
        Pool2d { kernel, stride: None, padding: None }
    }
}

macro_rules! unary_tensor_ops {
    ($($(#[$m:meta])* $name:ident => $f:ident),* $(,)?) => {$(
        $(#[$m])*
        pub fn $name(self) -> Result<UOp<'g>> {
            // SAFETY: self is a live node of its graph.
            self.graph().build_node(|g, e| unsafe { sys::$f(g, self.as_ptr(), e) })
        }
    )*};
}

impl<'g> UOp<'g> {
    /// `(M,K) @ (K,N) -> (M,N)`.
    pub fn gemm(self, b: UOp<'_>) -> Result<UOp<'g>> {
        let b = self.graph().handle("UOp::gemm", b)?;
        // SAFETY: both are nodes of this graph.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_gemm(g, self.as_ptr(), b, e) })
    }

    /// `(..., M,K) @ (..., K,N) -> (..., M,N)` with broadcast batch dims.
    pub fn matmul(self, b: UOp<'_>) -> Result<UOp<'g>> {
        let b = self.graph().handle("UOp::matmul", b)?;
        // SAFETY: both are nodes of this graph.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_matmul(g, self.as_ptr(), b, e) })
    }

    /// 2-D convolution of `self` (N,Cin,H,W) with `w` (Cout,Cin/groups,KH,KW) plus an optional `bias` (Cout,).
    pub fn conv2d(self, w: UOp<'_>, bias: Option<UOp<'_>>, p: &Conv2d) -> Result<UOp<'g>> {
        let w = self.graph().handle("UOp::conv2d", w)?;
        let bias = bias.map(|b| self.graph().handle("UOp::conv2d", b)).transpose()?.unwrap_or(ptr::null_mut());
        let groups = if p.groups == 0 { 1 } else { p.groups };
        // SAFETY: all nodes belong to this graph; the pairs outlive the call.
        self.graph().build_node(|g, e| unsafe {
            sys::sn_tensor_conv2d(
                g,
                self.as_ptr(),
                w,
                bias,
                pair(&p.stride),
                pair(&p.padding),
                pair(&p.dilation),
                groups,
                e,
            )
        })
    }

    /// Max pooling over the last two axes.
    pub fn max_pool2d(self, p: &Pool2d) -> Result<UOp<'g>> {
        // SAFETY: the pairs outlive the call.
        self.graph().build_node(|g, e| unsafe {
            sys::sn_tensor_max_pool2d(g, self.as_ptr(), p.kernel.as_ptr(), pair(&p.stride), pair(&p.padding), e)
        })
    }

    /// Average pooling over the last two axes (zero padding counts).
    pub fn avg_pool2d(self, p: &Pool2d) -> Result<UOp<'g>> {
        // SAFETY: the pairs outlive the call.
        self.graph().build_node(|g, e| unsafe {
            sys::sn_tensor_avg_pool2d(g, self.as_ptr(), p.kernel.as_ptr(), pair(&p.stride), pair(&p.padding), e)
        })
    }

    /// `self` with the gradient stopped ([`Graph::gradient`] does not flow through this use).
    pub fn detach(self) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_detach(g, self.as_ptr(), e) })
    }

    /// Softmax along `axis` (max-subtracted).
    pub fn softmax(self, axis: i64) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_softmax(g, self.as_ptr(), axis, e) })
    }

    /// Log-softmax along `axis`.
    pub fn log_softmax(self, axis: i64) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_log_softmax(g, self.as_ptr(), axis, e) })
    }

    /// Layer normalization over the last `naxes` axes, then `* weight + bias` when given.
    pub fn layernorm(self, naxes: i64, weight: Option<UOp<'_>>, bias: Option<UOp<'_>>, eps: f64) -> Result<UOp<'g>> {
        let graph = self.graph();
        let w = weight.map(|u| graph.handle("UOp::layernorm", u)).transpose()?.unwrap_or(ptr::null_mut());
        let b = bias.map(|u| graph.handle("UOp::layernorm", u)).transpose()?.unwrap_or(ptr::null_mut());
        // SAFETY: all nodes belong to this graph.
        graph.build_node(|g, e| unsafe { sys::sn_tensor_layernorm(g, self.as_ptr(), naxes, w, b, eps, e) })
    }

    unary_tensor_ops! {
        /// max(x, 0).
        relu => sn_tensor_relu,
        /// GELU (tanh approximation).
        gelu => sn_tensor_gelu,
        /// 1 / (1 + e^-x).
        sigmoid => sn_tensor_sigmoid,
        /// tanh(x).
        tanh => sn_tensor_tanh,
        /// Natural logarithm.
        ln => sn_tensor_log,
    }

    /// Inclusive cumulative sum along `axis`.
    pub fn cumsum(self, axis: i64) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_cumsum(g, self.as_ptr(), axis, e) })
    }

    /// Index (int32) of the first maximum along `axis`; the axis is removed unless `keepdim`.
    pub fn argmax(self, axis: i64, keepdim: bool) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_argmax(g, self.as_ptr(), axis, keepdim as i32, e) })
    }

    /// `self` (integer indices) -> `self.shape + (n,)` of `dtype`: 1 where index == j, else 0.
    pub fn one_hot(self, n: i64, dtype: DType) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_one_hot(g, self.as_ptr(), n, dtype.0, e) })
    }

    /// The spec's Index: `indices[k]` (an integer tensor of shape `()` or `(m,)`) selects along axis `k` of
    /// `self`, from the left; a `()`-shaped index removes the axis, an `(m,)`-shaped one makes it `m` long (a
    /// gather of rows for one index). An index outside its axis reads 0. (API version 5.)
    pub fn index(self, indices: &[UOp<'_>]) -> Result<UOp<'g>> {
        let indices = self.graph().handles("UOp::index", indices)?;
        // SAFETY: all nodes belong to this graph.
        self.graph()
            .build_node(|g, e| unsafe { sys::sn_tensor_index(g, self.as_ptr(), indices.as_ptr(), indices.len(), e) })
    }

    /// Reshapes to dims that may be symbolic, as in [`Graph::input_sym`] (API version 8): a symbolic dim stays
    /// its own axis; only the constant dims regroup (flattening `(b, C, H, W)` to `(b, C*H*W)`).
    pub fn reshape_sym(self, dims: &[UOp<'_>]) -> Result<UOp<'g>> {
        let dims = self.graph().handles("UOp::reshape_sym", dims)?;
        // SAFETY: all nodes belong to this graph; dims outlives the call.
        self.graph()
            .build_node(|g, e| unsafe { sys::sn_tensor_reshape_sym(g, self.as_ptr(), dims.as_ptr(), dims.len(), e) })
    }

    /// Broadcasts size-1 axes to dims that may be symbolic, as in [`Graph::input_sym`] (API version 8).
    pub fn expand_sym(self, dims: &[UOp<'_>]) -> Result<UOp<'g>> {
        let dims = self.graph().handles("UOp::expand_sym", dims)?;
        // SAFETY: as above.
        self.graph()
            .build_node(|g, e| unsafe { sys::sn_tensor_expand_sym(g, self.as_ptr(), dims.as_ptr(), dims.len(), e) })
    }

    /// The spec's Slice: `size` elements of `dtype` read from `self`'s storage (its row-major bytes), starting
    /// `offset` elements of `self`'s dtype in; shape `(size,)`. Past the end is [`Code::INVALID_ARG`].
    /// (API version 5.)
    ///
    /// [`Code::INVALID_ARG`]: crate::Code::INVALID_ARG
    pub fn slice(self, offset: i64, size: i64, dtype: DType) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_slice(g, self.as_ptr(), offset, size, dtype.0, e) })
    }

    /// PyTorch's gather along `axis` with indices `idx`.
    pub fn gather(self, axis: i64, idx: UOp<'_>) -> Result<UOp<'g>> {
        let idx = self.graph().handle("UOp::gather", idx)?;
        // SAFETY: both are nodes of this graph.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_gather(g, self.as_ptr(), axis, idx, e) })
    }

    /// PyTorch's scatter_add along `axis`: `self` plus `val` added at the positions `idx` names.
    pub fn scatter_add(self, axis: i64, idx: UOp<'_>, val: UOp<'_>) -> Result<UOp<'g>> {
        let idx = self.graph().handle("UOp::scatter_add", idx)?;
        let val = self.graph().handle("UOp::scatter_add", val)?;
        // SAFETY: all nodes belong to this graph.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_scatter_add(g, self.as_ptr(), axis, idx, val, e) })
    }
    // ---- multi-device (API version 8) ----

    /// This tensor split along `axis` over the devices of the tuple `devices` (`"CPU:0,CPU:1"`); the axis length
    /// must divide by the device count.
    pub fn shard(self, devices: &str, axis: i64) -> Result<UOp<'g>> {
        let d = c_string("UOp::shard", devices)?;
        // SAFETY: self is live; d outlives the call.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_shard(g, self.as_ptr(), d.as_ptr(), axis, e) })
    }

    /// The spec's Copy: this tensor on `device` (one device gathers it; a tuple shards axis 0).
    pub fn to(self, device: &str) -> Result<UOp<'g>> {
        let d = c_string("UOp::to", device)?;
        // SAFETY: self is live; d outlives the call.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_to(g, self.as_ptr(), d.as_ptr(), e) })
    }

    /// This tensor (on one device) replicated on every device of the tuple `devices`.
    pub fn broadcast(self, devices: &str) -> Result<UOp<'g>> {
        let d = c_string("UOp::broadcast", devices)?;
        // SAFETY: self is live; d outlives the call.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_broadcast(g, self.as_ptr(), d.as_ptr(), e) })
    }

    /// This tensor (on one device) split on axis 0 over the tuple `devices`.
    pub fn scatter(self, devices: &str) -> Result<UOp<'g>> {
        let d = c_string("UOp::scatter", devices)?;
        // SAFETY: self is live; d outlives the call.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_scatter(g, self.as_ptr(), d.as_ptr(), e) })
    }

    /// Every shard (sharded on axis 0) onto the first device of the tuple.
    pub fn gather_devices(self) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_gather_devices(g, self.as_ptr(), e) })
    }

    /// The sum of the shards (sharded on axis 0), on the first device of the tuple.
    pub fn reduce_devices(self) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_reduce_devices(g, self.as_ptr(), e) })
    }

    /// Every shard (sharded on axis 0) onto every device: replicated.
    pub fn allgather(self) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_allgather(g, self.as_ptr(), e) })
    }

    /// The shards (sharded on axis 0) summed over the devices, the sum sharded on axis 0.
    pub fn reduce_scatter(self) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_reduce_scatter(g, self.as_ptr(), e) })
    }

    /// The shards (sharded on axis 0) summed over the devices, the sum on every device (replicated).
    pub fn allreduce(self) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.graph().build_node(|g, e| unsafe { sys::sn_tensor_allreduce(g, self.as_ptr(), e) })
    }
}
