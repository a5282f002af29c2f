//! Safe Rust API for Sinter, a tinygrad-style tensor compiler behind a C ABI (`libsinter.so`).
//!
//! ```
//! use sinter::{CompileOptions, Context, DType};
//! # fn main() -> sinter::Result<()> {
//! let ctx = Context::new()?;
//! let cpu = ctx.device("CPU")?;
//! let g = ctx.graph()?;
//! let x = g.input(DType::FLOAT32, &[2, 3], None)?;
//! let y = ((x + x)? * 2.0)?.sum(&[1])?;     // operators return Result: chain with ?
//! println!("{y}");                          // S-expression
//! assert!(x.reshape(&[4, 2]).is_err());     // shape errors come back as Err with the C message
//!
//! let program = g.compile(&[y], Some(&cpu), &CompileOptions::default())?;
//! let input = cpu.buffer_from(&[2, 3], &[1f32, 2., 3., 4., 5., 6.])?;
//! let out = program.run_alloc(&[&input])?;
//! assert_eq!(out[0].to_vec::<f32>()?, vec![24.0, 60.0]);
//! # Ok(()) }
//! ```
//!
//! Ownership follows the C API: [`Context`] and [`Graph`] own a reference and release it on drop; a
//! [`UOp<'g>`](UOp) borrows its graph, so the borrow checker keeps the graph alive while nodes are used.
//! Thread safety follows the header: `Context`, `Device` and `Program` are `Send + Sync`, `Graph` and `Buffer`
//! are `Send` but not `Sync` (one thread at a time), `UOp` is neither. The compiler enforces all of it:
//!
//! ```compile_fail
//! // A node cannot outlive its graph.
//! let ctx = sinter::Context::new().unwrap();
//! let x = { let g = ctx.graph().unwrap(); g.const_int(sinter::DType::INT32, 1).unwrap() };
//! println!("{x}");
//! ```
//!
//! ```compile_fail
//! // A graph cannot be shared between threads (it is not Sync) ...
//! fn shared<T: Sync>(_: &T) {}
//! shared(&sinter::Context::new().unwrap().graph().unwrap());
//! ```
//!
//! ```compile_fail
//! // ... and a node cannot be sent to another thread.
//! let g = sinter::Context::new().unwrap().graph().unwrap();
//! let x = g.const_int(sinter::DType::INT32, 1).unwrap();
//! std::thread::scope(|s| { s.spawn(move || x.op()); });
//! ```
//!
//! ```compile_fail
//! // A run's output cannot also be one of its inputs.
//! # fn f(p: &sinter::Program, b: &mut sinter::Buffer) -> sinter::Result<()> {
//! p.run(&[&*b], &mut [b])
//! # }
//! ```
pub use sinter_sys as sys;

mod enums;
mod error;
mod function;
mod graph;
mod ops;
mod runtime;
mod tensor;

pub use enums::{AddrSpace, AxisType, Code, DType, Op};
pub use error::{Error, Result};
pub use function::{Function, FunctionFlags};
pub use graph::{Arg, Context, Dim, Graph, UOp};
pub use runtime::{Buffer, CompileOptions, Device, Element, Program, TensorInfo};
pub use tensor::{Conv2d, Pool2d};

/// The library's version string, e.g. "0.1.0".
pub fn version() -> &'static str {
    // SAFETY: sn_version_string returns a static NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(sys::sn_version_string()) }.to_str().unwrap_or("?")
}

/// The library's version number (MAJOR * 10000 + MINOR * 100 + PATCH); compare with [`HEADER_VERSION`].
pub fn version_number() -> u32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { sys::sn_version_number() }
}

/// The version of the header these bindings were generated from.
pub const HEADER_VERSION: u32 = sys::SN_VERSION_NUMBER;
