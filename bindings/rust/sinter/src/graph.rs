//! Context, Graph and UOp: the graph-building half of the C API.
use std::cell::Cell;
use std::ffi::CString;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::mem;
use std::os::raw::c_char;
use std::ptr::{self, NonNull};

use crate::enums::{AddrSpace, AxisType, Code, DType, Op};
use crate::error::{call, call_code, call_ptr, take_string, Error, Result};
use crate::sys;

/// Turns a Rust string into a C string, reporting an interior NUL as an error naming `what`.
pub(crate) fn c_string(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::new(Code::INVALID_ARG, format!("{what}: string contains a NUL byte: {s:?}")))
}

/// An optional device string ("CPU", "CUDA:0"); None passes NULL.
fn c_device(device: Option<&str>) -> Result<Option<CString>> {
    device.map(|d| c_string("device", d)).transpose()
}

fn opt_ptr(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(ptr::null(), |c| c.as_ptr())
}

// ---------------------------------------------------------------------------------------------------------------

/// Library state shared by graphs. Thread-safe (`Send + Sync`); cloning adds a reference.
pub struct Context {
    ptr: NonNull<sys::sn_context>,
}

// SAFETY: the header documents sn_context as thread-safe, and its refcount is atomic.
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

impl Context {
    /// A new context.
    pub fn new() -> Result<Context> {
        // SAFETY: plain constructor call.
        let ptr = call_ptr(|e| unsafe { sys::sn_context_create(e) })?;
        Ok(Context { ptr })
    }

    /// A new empty graph in this context (the graph keeps the context alive).
    pub fn graph(&self) -> Result<Graph> {
        Graph::new(self)
    }

    /// The raw handle, for calling `sinter_sys` directly. Still owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::sn_context {
        self.ptr.as_ptr()
    }
}

impl Clone for Context {
    fn clone(&self) -> Context {
        // SAFETY: self.ptr is live; retain returns the same pointer with one more reference.
        unsafe { sys::sn_context_retain(self.ptr.as_ptr()) };
        Context { ptr: self.ptr }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { sys::sn_context_release(self.ptr.as_ptr()) }
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Context({:p})", self.ptr)
    }
}

// ---------------------------------------------------------------------------------------------------------------

/// An arena of hash-consed UOps. Every [`UOp`] borrows the graph that made it, so the borrow checker keeps
/// the graph alive as long as any of its nodes is in use.
///
/// `Send` but not `Sync`: the C API allows one thread at a time on a graph, so a graph may move to another
/// thread but not be shared. (Not `Clone` either: two handles to one graph on two threads would break that.)
pub struct Graph {
    ptr: NonNull<sys::sn_graph>,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: a graph may be used from any thread, one thread at a time, which `!Sync` enforces.
unsafe impl Send for Graph {}

impl Graph {
    /// A new empty graph in `ctx`.
    pub fn new(ctx: &Context) -> Result<Graph> {
        // SAFETY: ctx is live.
        let ptr = call_ptr(|e| unsafe { sys::sn_graph_create(ctx.ptr.as_ptr(), e) })?;
        Ok(Graph { ptr, _not_sync: PhantomData })
    }

    /// The raw handle, for calling `sinter_sys` directly. Still owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::sn_graph {
        self.ptr.as_ptr()
    }

    /// Number of distinct nodes.
    pub fn node_count(&self) -> usize {
        // SAFETY: self is live; the call cannot fail on a live graph.
        unsafe { sys::sn_graph_node_count(self.ptr.as_ptr(), ptr::null_mut()) }
    }

    fn wrap<'g>(&'g self, f: impl FnOnce(*mut *mut sys::sn_error) -> *mut sys::sn_uop) -> Result<UOp<'g>> {
        Ok(UOp { ptr: call_ptr(f)?, graph: self })
    }

    /// Runs one node-returning C call with this graph's handle.
    pub(crate) fn build_node<'g>(
        &'g self,
        f: impl FnOnce(*mut sys::sn_graph, *mut *mut sys::sn_error) -> *mut sys::sn_uop,
    ) -> Result<UOp<'g>> {
        self.wrap(|e| f(self.ptr.as_ptr(), e))
    }

    /// Checks that `u` belongs to this graph (the C API would report it too, but naming it here is clearer).
    pub(crate) fn handle(&self, what: &str, u: UOp<'_>) -> Result<*mut sys::sn_uop> {
        if ptr::eq(u.graph, self) {
            Ok(u.ptr.as_ptr())
        } else {
            Err(Error::new(Code::INVALID_ARG, format!("{what}: the uop belongs to another graph")))
        }
    }

    pub(crate) fn handles(&self, what: &str, srcs: &[UOp<'_>]) -> Result<Vec<*mut sys::sn_uop>> {
        srcs.iter().map(|&u| self.handle(what, u)).collect()
    }

    /// The generic builder: the node `(op, dtype, srcs, arg)`, verified against the spec.
    pub fn node<'g>(&'g self, op: Op, dtype: DType, srcs: &[UOp<'_>], arg: &Arg) -> Result<UOp<'g>> {
        let srcs = self.handles("Graph::node", srcs)?;
        let raw = RawArg::new(arg)?;
        // SAFETY: srcs are uops of this graph; raw.arg's pointers live as long as `raw` and `arg`.
        self.wrap(|e| unsafe {
            sys::sn_uop_new(self.ptr.as_ptr(), op.0, dtype.0, srcs.as_ptr(), srcs.len(), &raw.arg, e)
        })
    }

    /// A scalar integer constant (every dtype but void; a float dtype gets the value converted).
    pub fn const_int(&self, dtype: DType, value: i64) -> Result<UOp<'_>> {
        // SAFETY: self is live.
        self.wrap(|e| unsafe { sys::sn_uop_const_int(self.ptr.as_ptr(), dtype.0, value, e) })
    }

    /// A scalar float constant (float dtypes only; rounded to the dtype).
    pub fn const_float(&self, dtype: DType, value: f64) -> Result<UOp<'_>> {
        // SAFETY: self is live.
        self.wrap(|e| unsafe { sys::sn_uop_const_float(self.ptr.as_ptr(), dtype.0, value, e) })
    }

    /// A bounded symbolic integer `min <= name <= max` (index dtype).
    pub fn var(&self, name: &str, min: i64, max: i64) -> Result<UOp<'_>> {
        let name = c_string("Graph::var", name)?;
        // SAFETY: self is live; name outlives the call.
        self.wrap(|e| unsafe { sys::sn_uop_var(self.ptr.as_ptr(), name.as_ptr(), min, max, e) })
    }

    /// A new, distinct buffer of `size` elements on `device` (None for no device). Shape `(size,)`.
    pub fn buffer(&self, dtype: DType, size: i64, device: Option<&str>) -> Result<UOp<'_>> {
        let device = c_device(device)?;
        // SAFETY: self is live; device outlives the call.
        self.wrap(|e| unsafe { sys::sn_uop_buffer(self.ptr.as_ptr(), dtype.0, size, opt_ptr(&device), e) })
    }

    /// Placeholder number `slot` of the given shape on `device`.
    pub fn param(&self, slot: i64, dtype: DType, shape: &[i64], device: Option<&str>) -> Result<UOp<'_>> {
        let device = c_device(device)?;
        // SAFETY: self is live; shape and device outlive the call.
        self.wrap(|e| unsafe {
            sys::sn_uop_param(self.ptr.as_ptr(), slot, dtype.0, shape.as_ptr(), shape.len(), opt_ptr(&device), e)
        })
    }

    /// An elementwise op over 1 to 3 sources (the dtype is derived).
    pub fn alu<'g>(&'g self, op: Op, srcs: &[UOp<'_>]) -> Result<UOp<'g>> {
        let srcs = self.handles("Graph::alu", srcs)?;
        // SAFETY: srcs are uops of this graph.
        self.wrap(|e| unsafe { sys::sn_uop_alu(self.ptr.as_ptr(), op.0, srcs.as_ptr(), srcs.len(), e) })
    }

    /// Collects several roots into one void node.
    pub fn sink<'g>(&'g self, srcs: &[UOp<'_>]) -> Result<UOp<'g>> {
        let srcs = self.handles("Graph::sink", srcs)?;
        // SAFETY: srcs are uops of this graph.
        self.wrap(|e| unsafe { sys::sn_uop_sink(self.ptr.as_ptr(), srcs.as_ptr(), srcs.len(), e) })
    }

    /// Simplifies `root` with the symbolic rules to a fixed point (root itself when nothing changes).
    pub fn simplify<'g>(&'g self, root: UOp<'_>) -> Result<UOp<'g>> {
        let root = self.handle("Graph::simplify", root)?;
        // SAFETY: root is a uop of this graph.
        self.wrap(|e| unsafe { sys::sn_graph_simplify(self.ptr.as_ptr(), root, e) })
    }

    /// Simplifies `expr` assuming the bool expression `valid` holds.
    pub fn simplify_given<'g>(&'g self, valid: UOp<'_>, expr: UOp<'_>) -> Result<UOp<'g>> {
        let valid = self.handle("Graph::simplify_given", valid)?;
        let expr = self.handle("Graph::simplify_given", expr)?;
        // SAFETY: both are uops of this graph.
        self.wrap(|e| unsafe { sys::sn_graph_simplify_given(self.ptr.as_ptr(), valid, expr, e) })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: we own one reference; no UOp<'_> of this graph outlives `self` (they borrow it).
        unsafe { sys::sn_graph_release(self.ptr.as_ptr()) }
    }
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Graph({:p}, {} nodes)", self.ptr, self.node_count())
    }
}

// ---------------------------------------------------------------------------------------------------------------

/// One dimension of a shape: a size, or a symbolic index expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim<'g> {
    Const(i64),
    Sym(UOp<'g>),
}

/// A node of a [`Graph`], borrowed from it (`'g`). Copy, and compared by identity: nodes are hash-consed,
/// so two equal `UOp`s are the same node and identity is structural equality.
///
/// Not `Send`/`Sync`: it refers to a graph that one thread at a time may use.
#[derive(Clone, Copy)]
pub struct UOp<'g> {
    ptr: NonNull<sys::sn_uop>,
    graph: &'g Graph,
}

impl<'g> UOp<'g> {
    /// The graph this node belongs to.
    pub fn graph(&self) -> &'g Graph {
        self.graph
    }

    /// The raw handle, for calling `sinter_sys` directly (valid while the graph lives).
    pub fn as_ptr(&self) -> *mut sys::sn_uop {
        self.ptr.as_ptr()
    }

    // ---- structural queries (cannot fail on a live node, which the borrow guarantees) ----

    /// The op.
    pub fn op(&self) -> Op {
        // SAFETY: the node is live while 'g is.
        Op(unsafe { sys::sn_uop_op(self.ptr.as_ptr(), ptr::null_mut()) })
    }

    /// The scalar dtype (a vector's element type, a pointer's pointee).
    pub fn dtype(&self) -> DType {
        // SAFETY: as above.
        DType(unsafe { sys::sn_uop_dtype(self.ptr.as_ptr(), ptr::null_mut()) })
    }

    /// Vector width of the dtype (1 for scalars).
    pub fn lanes(&self) -> u32 {
        // SAFETY: as above.
        unsafe { sys::sn_uop_lanes(self.ptr.as_ptr(), ptr::null_mut()) }
    }

    /// Whether the dtype is a pointer.
    pub fn is_pointer(&self) -> bool {
        // SAFETY: as above.
        unsafe { sys::sn_uop_is_pointer(self.ptr.as_ptr(), ptr::null_mut()) == 1 }
    }

    /// The address space a pointer dtype points into (NONE for values).
    pub fn pointer_addrspace(&self) -> AddrSpace {
        // SAFETY: as above.
        AddrSpace(unsafe { sys::sn_uop_pointer_addrspace(self.ptr.as_ptr(), ptr::null_mut()) })
    }

    /// The sources.
    pub fn srcs(&self) -> Vec<UOp<'g>> {
        // SAFETY: as above; every index below num_srcs is valid.
        unsafe {
            let n = sys::sn_uop_num_srcs(self.ptr.as_ptr(), ptr::null_mut());
            (0..n)
                .filter_map(|i| NonNull::new(sys::sn_uop_src(self.ptr.as_ptr(), i, ptr::null_mut())))
                .map(|ptr| UOp { ptr, graph: self.graph })
                .collect()
        }
    }

    /// The arg, copied out of the graph.
    pub fn arg(&self) -> Result<Arg> {
        // SAFETY: sn_arg is plain data; sn_arg_init sets struct_size before the query reads it.
        unsafe {
            let mut raw: sys::sn_arg = mem::zeroed();
            call_code(|e| sys::sn_arg_init(&mut raw, mem::size_of::<sys::sn_arg>(), e))?;
            call_code(|e| sys::sn_uop_arg(self.ptr.as_ptr(), &mut raw, e))?;
            Ok(Arg::from_raw(&raw))
        }
    }

    /// The shape, or None for nodes without one (void ops such as Sink).
    pub fn shape(&self) -> Result<Option<Vec<Dim<'g>>>> {
        // SAFETY: as above.
        let rank = call(|e| unsafe { sys::sn_uop_rank(self.ptr.as_ptr(), e) })?;
        if rank < 0 {
            return Ok(None);
        }
        let mut dims = Vec::with_capacity(rank as usize);
        for i in 0..rank as usize {
            let mut value = 0i64;
            let mut sym: *mut sys::sn_uop = ptr::null_mut();
            // SAFETY: i < rank; the out pointers are valid.
            call_code(|e| unsafe { sys::sn_uop_dim(self.ptr.as_ptr(), i, &mut value, &mut sym, e) })?;
            dims.push(match NonNull::new(sym) {
                None => Dim::Const(value),
                Some(ptr) => Dim::Sym(UOp { ptr, graph: self.graph }),
            });
        }
        Ok(Some(dims))
    }

    /// The shape as sizes; an error if the node has no shape or a symbolic dimension.
    pub fn static_shape(&self) -> Result<Vec<i64>> {
        let dims = self.shape()?.ok_or_else(|| Error::new(Code::INVALID_ARG, "static_shape: the node has no shape"))?;
        dims.into_iter()
            .map(|d| match d {
                Dim::Const(n) => Ok(n),
                Dim::Sym(s) => Err(Error::new(Code::INVALID_ARG, format!("static_shape: symbolic dimension {s}"))),
            })
            .collect()
    }

    // ---- derived queries ----

    /// The device: "CPU", "(CPU:0,CPU:1)" for a multi-device tuple, "" for none.
    pub fn device(&self) -> Result<String> {
        // SAFETY: the returned string is ours to free.
        unsafe {
            let s = call(|e| sys::sn_uop_device(self.ptr.as_ptr(), e))?;
            Ok(take_string(s))
        }
    }

    /// The sharding axis of a multi-device tensor.
    pub fn axis(&self) -> Result<Option<i64>> {
        // SAFETY: as above.
        let a = call(|e| unsafe { sys::sn_uop_axis(self.ptr.as_ptr(), e) })?;
        Ok((a >= 0).then_some(a))
    }

    /// The values an integer/bool/index node can take: `(min, max, clamped)`; `clamped` says a bound was
    /// outside int64 and was clamped. A float node is an error (use [`UOp::min_max_float`]).
    pub fn min_max_int(&self) -> Result<(i64, i64, bool)> {
        let (mut lo, mut hi, mut clamped) = (0i64, 0i64, 0i32);
        // SAFETY: the out pointers are valid.
        call_code(|e| unsafe { sys::sn_uop_min_max_int(self.ptr.as_ptr(), &mut lo, &mut hi, &mut clamped, e) })?;
        Ok((lo, hi, clamped != 0))
    }

    /// The same interval as doubles, for every dtype (infinite when unbounded).
    pub fn min_max_float(&self) -> Result<(f64, f64)> {
        let (mut lo, mut hi) = (0f64, 0f64);
        // SAFETY: the out pointers are valid.
        call_code(|e| unsafe { sys::sn_uop_min_max_float(self.ptr.as_ptr(), &mut lo, &mut hi, e) })?;
        Ok((lo, hi))
    }

    // ---- printing ----

    /// S-expression, e.g. `(add (mul a 2) 12)`. Also what `Display` prints.
    pub fn to_sexpr(&self) -> Result<String> {
        // SAFETY: the returned string is ours to free.
        unsafe { call(|e| sys::sn_uop_to_string(self.ptr.as_ptr(), e)).map(|s| take_string(s)) }
    }

    /// Indented tree with each node's derived properties.
    pub fn to_tree(&self) -> Result<String> {
        // SAFETY: as above.
        unsafe { call(|e| sys::sn_uop_to_tree(self.ptr.as_ptr(), e)).map(|s| take_string(s)) }
    }

    /// Graphviz DOT of the DAG under this node.
    pub fn to_dot(&self) -> Result<String> {
        // SAFETY: as above.
        unsafe { call(|e| sys::sn_uop_to_dot(self.ptr.as_ptr(), e)).map(|s| take_string(s)) }
    }

    // ---- builders on this node (in its graph) ----

    fn build(
        &self,
        f: impl FnOnce(*mut sys::sn_graph, *mut *mut sys::sn_error) -> *mut sys::sn_uop,
    ) -> Result<UOp<'g>> {
        let g = self.graph;
        g.wrap(|e| f(g.ptr.as_ptr(), e))
    }

    /// A unary elementwise op (`Op::EXP2`, `Op::SQRT`, ...).
    pub fn unary(self, op: Op) -> Result<UOp<'g>> {
        // SAFETY: self is a live node of its graph.
        self.build(|g, e| unsafe { sys::sn_uop_unary(g, op.0, self.ptr.as_ptr(), e) })
    }

    /// A binary elementwise op (`Op::ADD`, `Op::CMPLT`, ...); shapes broadcast right-aligned.
    pub fn binary(self, op: Op, other: UOp<'_>) -> Result<UOp<'g>> {
        let b = self.graph.handle("UOp::binary", other)?;
        // SAFETY: both are live nodes of this graph.
        self.build(|g, e| unsafe { sys::sn_uop_binary(g, op.0, self.ptr.as_ptr(), b, e) })
    }

    /// `self ? a : b` elementwise (self is bool).
    pub fn where_(self, a: UOp<'_>, b: UOp<'_>) -> Result<UOp<'g>> {
        let (a, b) = (self.graph.handle("UOp::where_", a)?, self.graph.handle("UOp::where_", b)?);
        // SAFETY: all three are live nodes of this graph.
        self.build(|g, e| unsafe { sys::sn_uop_ternary(g, Op::WHERE.0, self.ptr.as_ptr(), a, b, e) })
    }

    /// Converts the values to `dtype`.
    pub fn cast(self, dtype: DType) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.build(|g, e| unsafe { sys::sn_uop_cast(g, self.ptr.as_ptr(), dtype.0, e) })
    }

    /// Reinterprets the storage as `dtype`.
    pub fn bitcast(self, dtype: DType) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.build(|g, e| unsafe { sys::sn_uop_bitcast(g, self.ptr.as_ptr(), dtype.0, e) })
    }

    /// Row-major reshape; the element count must not change.
    pub fn reshape(self, shape: &[i64]) -> Result<UOp<'g>> {
        // SAFETY: self is live; shape outlives the call.
        self.build(|g, e| unsafe { sys::sn_uop_reshape(g, self.ptr.as_ptr(), shape.as_ptr(), shape.len(), e) })
    }

    /// Broadcasts size-1 axes to `shape` (same rank).
    pub fn expand(self, shape: &[i64]) -> Result<UOp<'g>> {
        // SAFETY: as above.
        self.build(|g, e| unsafe { sys::sn_uop_expand(g, self.ptr.as_ptr(), shape.as_ptr(), shape.len(), e) })
    }

    fn check_pair(what: &str, a: &[i64], b: &[i64]) -> Result<()> {
        if a.len() == b.len() {
            Ok(())
        } else {
            Err(Error::new(Code::INVALID_ARG, format!("{what}: {} offsets but {} sizes", a.len(), b.len())))
        }
    }

    /// Places self at `offsets` in a zero-filled tensor of shape `sizes`.
    pub fn pad(self, offsets: &[i64], sizes: &[i64]) -> Result<UOp<'g>> {
        Self::check_pair("UOp::pad", offsets, sizes)?;
        // SAFETY: both arrays have the length passed.
        self.build(|g, e| unsafe {
            sys::sn_uop_pad(g, self.ptr.as_ptr(), offsets.as_ptr(), sizes.as_ptr(), sizes.len(), e)
        })
    }

    /// Keeps `sizes[k]` elements from `offsets[k]` on each axis.
    pub fn shrink(self, offsets: &[i64], sizes: &[i64]) -> Result<UOp<'g>> {
        Self::check_pair("UOp::shrink", offsets, sizes)?;
        // SAFETY: both arrays have the length passed.
        self.build(|g, e| unsafe {
            sys::sn_uop_shrink(g, self.ptr.as_ptr(), offsets.as_ptr(), sizes.as_ptr(), sizes.len(), e)
        })
    }

    /// Reorders the axes: output axis k is input axis `order[k]`.
    pub fn permute(self, order: &[i64]) -> Result<UOp<'g>> {
        // SAFETY: as above.
        self.build(|g, e| unsafe { sys::sn_uop_permute(g, self.ptr.as_ptr(), order.as_ptr(), order.len(), e) })
    }

    /// Reverses the axes whose flag is true.
    pub fn flip(self, flags: &[bool]) -> Result<UOp<'g>> {
        let flags: Vec<i64> = flags.iter().map(|&f| f as i64).collect();
        // SAFETY: as above.
        self.build(|g, e| unsafe { sys::sn_uop_flip(g, self.ptr.as_ptr(), flags.as_ptr(), flags.len(), e) })
    }

    /// Reduces `axes` with `Op::ADD`, `Op::MAX` or `Op::MUL`; reduced axes keep size 1.
    pub fn reduce(self, op: Op, axes: &[i64]) -> Result<UOp<'g>> {
        // SAFETY: as above.
        self.build(|g, e| unsafe { sys::sn_uop_reduce(g, self.ptr.as_ptr(), op.0, axes.as_ptr(), axes.len(), e) })
    }

    /// Sum over `axes` (kept as size 1).
    pub fn sum(self, axes: &[i64]) -> Result<UOp<'g>> {
        self.reduce(Op::ADD, axes)
    }

    /// Maximum over `axes` (kept as size 1).
    pub fn max(self, axes: &[i64]) -> Result<UOp<'g>> {
        self.reduce(Op::MAX, axes)
    }

    /// Forces a contiguous materialization.
    pub fn contiguous(self) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.build(|g, e| unsafe { sys::sn_uop_contiguous(g, self.ptr.as_ptr(), e) })
    }

    /// `2^self`.
    pub fn exp2(self) -> Result<UOp<'g>> {
        self.unary(Op::EXP2)
    }

    /// `log2(self)`.
    pub fn log2(self) -> Result<UOp<'g>> {
        self.unary(Op::LOG2)
    }

    /// `sqrt(self)`.
    pub fn sqrt(self) -> Result<UOp<'g>> {
        self.unary(Op::SQRT)
    }

    /// `1 / self`.
    pub fn recip(self) -> Result<UOp<'g>> {
        self.unary(Op::RECIP)
    }

    /// `e^self` (the tensor builder, which lowers it to exp2).
    pub fn exp(self) -> Result<UOp<'g>> {
        // SAFETY: self is live.
        self.build(|g, e| unsafe { sys::sn_tensor_exp(g, self.ptr.as_ptr(), e) })
    }

    /// Elementwise maximum.
    pub fn maximum(self, other: UOp<'_>) -> Result<UOp<'g>> {
        self.binary(Op::MAX, other)
    }

    /// `self < other` (bool).
    pub fn lt(self, other: UOp<'_>) -> Result<UOp<'g>> {
        self.binary(Op::CMPLT, other)
    }

    /// `self == other` (bool).
    pub fn eq_(self, other: UOp<'_>) -> Result<UOp<'g>> {
        self.binary(Op::CMPEQ, other)
    }

    /// Floor division (integers).
    pub fn idiv(self, other: UOp<'_>) -> Result<UOp<'g>> {
        self.binary(Op::IDIV, other)
    }

    /// A scalar constant of this node's dtype (a float value needs a float dtype).
    pub fn scalar_f64(self, value: f64) -> Result<UOp<'g>> {
        self.graph.const_float(self.dtype(), value)
    }

    /// An integer constant of this node's dtype (converted for float dtypes).
    pub fn scalar_i64(self, value: i64) -> Result<UOp<'g>> {
        self.graph.const_int(self.dtype(), value)
    }

    /// Simplifies this node with the symbolic rules.
    pub fn simplify(self) -> Result<UOp<'g>> {
        self.graph.simplify(self)
    }
}

impl PartialEq for UOp<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.ptr == other.ptr
    }
}
impl Eq for UOp<'_> {}

impl Hash for UOp<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.ptr.hash(state)
    }
}

impl fmt::Display for UOp<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_sexpr() {
            Ok(s) => f.write_str(&s),
            Err(e) => write!(f, "<unprintable uop: {e}>"),
        }
    }
}

impl fmt::Debug for UOp<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UOp({} {} {})", self.op(), self.dtype(), self)
    }
}

// ---------------------------------------------------------------------------------------------------------------

/// The `arg` of a node (see `sn_arg_kind` in sinter.h for which op uses which kind).
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    None,
    /// Const of bool/int/index dtype (uint64: the bit pattern), GetTuple index, Gep lane.
    Int(i64),
    /// Const of a float dtype.
    Float(f64),
    /// Permute order, Flip flags (0/1), Replicated axes, Gep lanes.
    Ints(Vec<i64>),
    /// Cast / Bitcast target.
    DType(DType),
    /// Binary data, Source text, Special name, Custom format, Ins mnemonic, CustomFunction name.
    Bytes(Vec<u8>),
    /// Reduce op (ADD, MAX or MUL) and the reduced axes.
    Reduce {
        op: Op,
        axes: Vec<i64>,
    },
    /// Loop id and kind.
    Range {
        id: i64,
        axis_type: AxisType,
    },
    /// id (0 = a new, distinct buffer), size in elements, device, address space.
    Buffer {
        id: i64,
        size: i64,
        device: Option<String>,
        addrspace: AddrSpace,
    },
    /// Slot number, device, address space.
    Param {
        slot: i64,
        device: Option<String>,
        addrspace: AddrSpace,
    },
    /// A bounded symbolic integer.
    Var {
        name: String,
        min: i64,
        max: i64,
    },
    /// Target of Load / Copy / Stage.
    Mem {
        device: Option<String>,
        addrspace: AddrSpace,
    },
    /// Size in elements and dtype.
    Slice {
        size: i64,
        dtype: DType,
    },
}

/// An `sn_arg` pointing into an [`Arg`] (and into the C strings kept here) for one call.
struct RawArg {
    arg: sys::sn_arg,
    _device: Option<CString>,
}

impl RawArg {
    fn new(a: &Arg) -> Result<RawArg> {
        // SAFETY: sn_arg is plain data; sn_arg_init fills in struct_size and the defaults.
        let mut arg: sys::sn_arg = unsafe { mem::zeroed() };
        call_code(|e| unsafe { sys::sn_arg_init(&mut arg, mem::size_of::<sys::sn_arg>(), e) })?;
        let mut device = None;
        let ints = |arg: &mut sys::sn_arg, v: &[i64]| {
            arg.ints = v.as_ptr();
            arg.nints = v.len();
        };
        let kind = match a {
            Arg::None => sys::sn_arg_kind::SN_ARG_NONE,
            Arg::Int(v) => {
                arg.int_value = *v;
                sys::sn_arg_kind::SN_ARG_INT
            }
            Arg::Float(v) => {
                arg.float_value = *v;
                sys::sn_arg_kind::SN_ARG_FLOAT
            }
            Arg::Ints(v) => {
                ints(&mut arg, v);
                sys::sn_arg_kind::SN_ARG_INTS
            }
            Arg::DType(d) => {
                arg.dtype = d.0;
                sys::sn_arg_kind::SN_ARG_DTYPE
            }
            Arg::Bytes(b) => {
                arg.str_ = b.as_ptr() as *const c_char;
                arg.str_len = b.len();
                sys::sn_arg_kind::SN_ARG_STRING
            }
            Arg::Reduce { op, axes } => {
                arg.reduce_op = op.0;
                ints(&mut arg, axes);
                sys::sn_arg_kind::SN_ARG_REDUCE
            }
            Arg::Range { id, axis_type } => {
                arg.id = *id;
                arg.axis_type = axis_type.0;
                sys::sn_arg_kind::SN_ARG_RANGE
            }
            Arg::Buffer { id, size, device: d, addrspace } => {
                arg.id = *id;
                arg.size = *size;
                arg.addrspace = addrspace.0;
                device = c_device(d.as_deref())?;
                sys::sn_arg_kind::SN_ARG_BUFFER
            }
            Arg::Param { slot, device: d, addrspace } => {
                arg.id = *slot;
                arg.addrspace = addrspace.0;
                device = c_device(d.as_deref())?;
                sys::sn_arg_kind::SN_ARG_PARAM
            }
            Arg::Var { name, min, max } => {
                arg.str_ = name.as_ptr() as *const c_char;
                arg.str_len = name.len();
                arg.min = *min;
                arg.max = *max;
                sys::sn_arg_kind::SN_ARG_VAR
            }
            Arg::Mem { device: d, addrspace } => {
                arg.addrspace = addrspace.0;
                device = c_device(d.as_deref())?;
                sys::sn_arg_kind::SN_ARG_MEM
            }
            Arg::Slice { size, dtype } => {
                arg.size = *size;
                arg.dtype = dtype.0;
                sys::sn_arg_kind::SN_ARG_SLICE
            }
        };
        arg.kind = kind;
        arg.device = opt_ptr(&device);
        // Moving the CString into the struct does not move its heap buffer, so arg.device stays valid.
        Ok(RawArg { arg, _device: device })
    }
}

impl Arg {
    /// Copies an arg the library filled in (its pointers point into the graph).
    unsafe fn from_raw(a: &sys::sn_arg) -> Arg {
        let ints = || if a.ints.is_null() { Vec::new() } else { std::slice::from_raw_parts(a.ints, a.nints).to_vec() };
        let bytes = || {
            if a.str_.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(a.str_ as *const u8, a.str_len).to_vec()
            }
        };
        let device = || {
            if a.device.is_null() {
                None
            } else {
                Some(std::ffi::CStr::from_ptr(a.device).to_string_lossy().into_owned()).filter(|d| !d.is_empty())
            }
        };
        match a.kind {
            sys::sn_arg_kind::SN_ARG_INT => Arg::Int(a.int_value),
            sys::sn_arg_kind::SN_ARG_FLOAT => Arg::Float(a.float_value),
            sys::sn_arg_kind::SN_ARG_INTS => Arg::Ints(ints()),
            sys::sn_arg_kind::SN_ARG_DTYPE => Arg::DType(DType(a.dtype)),
            sys::sn_arg_kind::SN_ARG_STRING => Arg::Bytes(bytes()),
            sys::sn_arg_kind::SN_ARG_REDUCE => Arg::Reduce { op: Op(a.reduce_op), axes: ints() },
            sys::sn_arg_kind::SN_ARG_RANGE => Arg::Range { id: a.id, axis_type: AxisType(a.axis_type) },
            sys::sn_arg_kind::SN_ARG_BUFFER => {
                Arg::Buffer { id: a.id, size: a.size, device: device(), addrspace: AddrSpace(a.addrspace) }
            }
            sys::sn_arg_kind::SN_ARG_PARAM => {
                Arg::Param { slot: a.id, device: device(), addrspace: AddrSpace(a.addrspace) }
            }
            sys::sn_arg_kind::SN_ARG_VAR => {
                Arg::Var { name: String::from_utf8_lossy(&bytes()).into_owned(), min: a.min, max: a.max }
            }
            sys::sn_arg_kind::SN_ARG_MEM => Arg::Mem { device: device(), addrspace: AddrSpace(a.addrspace) },
            sys::sn_arg_kind::SN_ARG_SLICE => Arg::Slice { size: a.size, dtype: DType(a.dtype) },
            _ => Arg::None,
        }
    }
}
