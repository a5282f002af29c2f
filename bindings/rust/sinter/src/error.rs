//! Errors: every fallible call returns `Result<T, Error>`, where `Error` carries the C code and message.
use std::ffi::CStr;
use std::fmt;
use std::ptr::{self, NonNull};

use crate::enums::Code;
use crate::sys;

/// A failed call: the C API's error code and its message (which names the function, the rule and the values,
/// e.g. `sn_uop_reshape: Reshape: element count changes: (2,3) to (4,2)`).
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    code: Code,
    message: String,
}

/// `Result` with Sinter's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error raised on the Rust side of the boundary (e.g. a string with an interior NUL).
    pub(crate) fn new(code: Code, message: impl Into<String>) -> Error {
        Error { code, message: message.into() }
    }

    /// Takes ownership of a C error: copies code and message, then frees it.
    ///
    /// # Safety
    /// `e` must be an error returned through an `sn_error **` and not yet freed.
    unsafe fn from_c(e: NonNull<sys::sn_error>) -> Error {
        let code = Code::from_raw(sys::sn_error_code(e.as_ptr()).0);
        let message = CStr::from_ptr(sys::sn_error_message(e.as_ptr())).to_string_lossy().into_owned();
        sys::sn_error_free(e.as_ptr());
        Error { code, message }
    }

    /// The code, e.g. [`Code::INVALID_ARG`].
    pub fn code(&self) -> Code {
        self.code
    }

    /// The message from the C library.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({:?}: {})", self.code, self.message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:?})", self.message, self.code)
    }
}

impl std::error::Error for Error {}

/// Runs one C call with a fresh `sn_error *` and turns a reported error into `Err`.
///
/// The C API sets `*err` exactly when the call fails (and leaves it untouched on success), so a non-NULL
/// error after the call is the failure signal, whatever sentinel the return value uses.
pub(crate) fn call<T>(f: impl FnOnce(*mut *mut sys::sn_error) -> T) -> Result<T> {
    let mut err: *mut sys::sn_error = ptr::null_mut();
    let value = f(&mut err);
    match NonNull::new(err) {
        None => Ok(value),
        // SAFETY: the library just handed us this error and nothing else refers to it.
        Some(e) => Err(unsafe { Error::from_c(e) }),
    }
}

/// [`call`] for a handle-returning function: NULL is a failure even if (against the contract) no error came.
pub(crate) fn call_ptr<T>(f: impl FnOnce(*mut *mut sys::sn_error) -> *mut T) -> Result<NonNull<T>> {
    let p = call(f)?;
    NonNull::new(p).ok_or_else(|| Error::new(Code::INTERNAL, "the C API returned NULL without an error"))
}

/// [`call`] for a function returning `sn_code`.
pub(crate) fn call_code(f: impl FnOnce(*mut *mut sys::sn_error) -> sys::sn_code) -> Result<()> {
    let code = call(f)?;
    if code == sys::sn_code::SN_OK {
        Ok(())
    } else {
        Err(Error::new(Code::from_raw(code.0), "the C API failed without an error message"))
    }
}

/// Copies a `char *` the library returned and frees it with `sn_string_free`.
///
/// # Safety
/// `s` must be NULL or a string returned by the library that nobody else frees.
pub(crate) unsafe fn take_string(s: *mut std::os::raw::c_char) -> String {
    if s.is_null() {
        return String::new();
    }
    let owned = CStr::from_ptr(s).to_string_lossy().into_owned();
    sys::sn_string_free(s);
    owned
}
