//! Safe Rust API for Sinter, a tinygrad-style tensor compiler behind a C ABI (`libsinter.so`).
//!
//! ```no_run
//! use sinter::{Context, DType};
//! # fn main() -> sinter::Result<()> {
//! let ctx = Context::new()?;
//! let g = ctx.graph()?;
//! let a = g.buffer(DType::FLOAT32, 6, Some("CPU"))?.reshape(&[2, 3])?;
//! let y = ((a + a)? * 2.0)?.sum(&[1])?;
//! println!("{y}");                          // S-expression
//! assert!(a.reshape(&[4, 2]).is_err());     // shape errors come back as Err with the C message
//! # Ok(()) }
//! ```
//!
//! Ownership follows the C API: [`Context`] and [`Graph`] own a reference and release it on drop; a
//! [`UOp<'g>`](UOp) borrows its graph, so the borrow checker keeps the graph alive while nodes are used.
//! Thread safety follows the header: `Context` is `Send + Sync`, `Graph` is `Send` but not `Sync` (one
//! thread at a time), `UOp` is neither. The compiler enforces all of it:
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
pub use sinter_sys as sys;

mod enums;
mod error;
mod graph;
mod ops;

pub use enums::{AddrSpace, AxisType, Code, DType, Op};
pub use error::{Error, Result};
pub use graph::{Arg, Context, Dim, Graph, UOp};

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
