//! Functions (API version 5): reusable sub-graphs, the spec's Function/Call. Begin one with
//! [`Graph::function`], build its body from [`Function::param`] with any builder, end it with
//! [`Function::end`], then [`Function::call`] it on arguments any number of times.
use std::cell::Cell;
use std::fmt;
use std::ops::BitOr;
use std::ptr::{self, NonNull};

use crate::enums::{Code, DType};
use crate::error::{call_code, call_ptr, Error, Result};
use crate::graph::{Graph, UOp};
use crate::sys;

/// Flags of a [`Function`] (`SN_FUNCTION_*`); combine them with `|`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FunctionFlags(u32);

impl FunctionFlags {
    /// No flags: a call is resolved by substitution when compiled, so it fuses with its callers.
    pub const NONE: FunctionFlags = FunctionFlags(0);
    /// The function's arguments and results are materialized, and every call runs the same kernels,
    /// compiled once.
    pub const PRECOMPILE: FunctionFlags = FunctionFlags(sys::sn_function_flags::SN_FUNCTION_PRECOMPILE.0);

    /// The flags as the C API numbers them.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Flags from their C number (the library rejects bits it does not know when they are set).
    pub fn from_bits(bits: u32) -> FunctionFlags {
        FunctionFlags(bits)
    }

    /// Whether every flag of `other` is set in `self`.
    pub fn contains(self, other: FunctionFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for FunctionFlags {
    type Output = FunctionFlags;
    fn bitor(self, rhs: FunctionFlags) -> FunctionFlags {
        FunctionFlags(self.0 | rhs.0)
    }
}

/// A reusable sub-graph of a [`Graph`] (`sn_function`). It belongs to its graph, which releases it, so it
/// borrows the graph (`'g`) like a [`UOp`] does; it has nothing to release itself.
///
/// ```
/// use sinter::{CompileOptions, Context, DType};
/// # fn main() -> sinter::Result<()> {
/// let ctx = Context::new()?;
/// let g = ctx.graph()?;
/// let f = g.function(&[(DType::FLOAT32, &[3]), (DType::FLOAT32, &[3])])?;
/// f.end(&[(f.param(0)? + f.param(1)?)?.relu()?])?;          // relu(a + b)
/// let (a, b) = (g.input(DType::FLOAT32, &[3], None)?, g.input(DType::FLOAT32, &[3], None)?);
/// let y = f.call(&[a, b])?[0];
/// let cpu = ctx.device("CPU")?;
/// let p = g.compile(&[y], Some(&cpu), &CompileOptions::default())?;
/// let out = p.run_alloc(&[&cpu.buffer_from(&[3], &[1f32, -2., 3.])?, &cpu.buffer_from(&[3], &[1f32, 1., -5.])?])?;
/// assert_eq!(out[0].to_vec::<f32>()?, vec![2.0, 0.0, 0.0]);
/// # Ok(()) }
/// ```
///
/// A function cannot outlive its graph:
///
/// ```compile_fail
/// let ctx = sinter::Context::new().unwrap();
/// let f = { let g = ctx.graph().unwrap(); g.function(&[(sinter::DType::FLOAT32, &[2])]).unwrap() };
/// f.param(0).unwrap();
/// ```
pub struct Function<'g> {
    ptr: NonNull<sys::sn_function>,
    graph: &'g Graph,
    nparams: usize,
    /// The number of outputs, once ended (the C API has no query for it).
    noutputs: Cell<Option<usize>>,
}

impl Graph {
    /// Begins a function with one parameter per `(dtype, shape)`. See `sn_function_begin`.
    pub fn function(&self, params: &[(DType, &[i64])]) -> Result<Function<'_>> {
        let dtypes: Vec<sys::sn_dtype> = params.iter().map(|(d, _)| d.0).collect();
        let shapes: Vec<*const i64> =
            params.iter().map(|(_, s)| if s.is_empty() { ptr::null() } else { s.as_ptr() }).collect();
        let ranks: Vec<usize> = params.iter().map(|(_, s)| s.len()).collect();
        // SAFETY: self is live; the three arrays have one entry per parameter and, with the shapes they point
        // to, outlive the call (the library copies them).
        let ptr = call_ptr(|e| unsafe {
            sys::sn_function_begin(self.as_ptr(), params.len(), dtypes.as_ptr(), shapes.as_ptr(), ranks.as_ptr(), e)
        })?;
        Ok(Function { ptr, graph: self, nparams: params.len(), noutputs: Cell::new(None) })
    }
}

impl<'g> Function<'g> {
    /// The graph this function belongs to.
    pub fn graph(&self) -> &'g Graph {
        self.graph
    }

    /// The raw handle, for calling `sinter_sys` directly (valid while the graph lives).
    pub fn as_ptr(&self) -> *mut sys::sn_function {
        self.ptr.as_ptr()
    }

    /// The number of parameters.
    pub fn num_params(&self) -> usize {
        self.nparams
    }

    /// The number of outputs, or None before [`Function::end`].
    pub fn num_outputs(&self) -> Option<usize> {
        self.noutputs.get()
    }

    /// The node standing for parameter `i` inside the body.
    pub fn param(&self, i: usize) -> Result<UOp<'g>> {
        // SAFETY: the function lives as long as its graph, which 'g keeps alive.
        self.graph.build_node(|_, e| unsafe { sys::sn_function_param(self.ptr.as_ptr(), i, e) })
    }

    /// The nodes of all parameters, in order.
    pub fn params(&self) -> Result<Vec<UOp<'g>>> {
        (0..self.nparams).map(|i| self.param(i)).collect()
    }

    /// Ends the body: the function returns `outputs` (nodes of its graph). Once per function.
    pub fn end(&self, outputs: &[UOp<'_>]) -> Result<()> {
        let outs = self.graph.handles("Function::end", outputs)?;
        // SAFETY: the function is live; outs are nodes of its graph.
        call_code(|e| unsafe { sys::sn_function_end(self.ptr.as_ptr(), outs.as_ptr(), outs.len(), e) })?;
        self.noutputs.set(Some(outs.len()));
        Ok(())
    }

    /// Sets the function's flags (replacing the previous ones), before or after [`Function::end`]; calls made
    /// afterwards see them.
    pub fn set_flags(&self, flags: FunctionFlags) -> Result<()> {
        // SAFETY: the function is live.
        call_code(|e| unsafe { sys::sn_function_set_flags(self.ptr.as_ptr(), flags.0, e) })
    }

    /// Calls the ended function on `args` (nodes of its graph, each of its parameter's shape and dtype):
    /// result `i` is output `i`. A wrong argument is [`Code::INVALID_ARG`] naming it.
    pub fn call(&self, args: &[UOp<'_>]) -> Result<Vec<UOp<'g>>> {
        let a = self.graph.handles("Function::call", args)?;
        // Before end the library reports "no body yet" without writing results; one slot keeps it non-NULL.
        let mut results: Vec<*mut sys::sn_uop> = vec![ptr::null_mut(); self.noutputs.get().unwrap_or(1).max(1)];
        // SAFETY: the function and args belong to this graph; results has one slot per output.
        call_code(|e| unsafe {
            sys::sn_function_call(self.graph.as_ptr(), self.ptr.as_ptr(), a.as_ptr(), a.len(), results.as_mut_ptr(), e)
        })?;
        if self.noutputs.get().is_none() {
            return Err(Error::new(Code::INTERNAL, "Function::call: the function has no body, yet the call succeeded"));
        }
        results.into_iter().map(|p| self.graph.build_node(|_, _| p)).collect()
    }
}

impl fmt::Debug for Function<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Function({:p}, {} params, {:?} outputs)", self.ptr, self.nparams, self.noutputs.get())
    }
}
