//! The C API's enums as Rust newtypes with associated constants (`Op::ADD`, `DType::FLOAT32`).
//!
//! Newtypes rather than Rust `enum`s: the C enums are append-only, so a newer library may hand back a value
//! this crate has no name for; a newtype keeps that a valid value instead of undefined behaviour. The numbers
//! come from the generated bindings, never from this file.
use std::ffi::CStr;
use std::fmt;
use std::os::raw::c_char;

use crate::sys;

unsafe fn static_name(p: *const c_char) -> Option<&'static str> {
    if p.is_null() {
        None
    } else {
        CStr::from_ptr(p).to_str().ok()
    }
}

macro_rules! c_enum {
    ($(#[$meta:meta])* $name:ident($sys:ident) { $($variant:ident = $c:ident),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Copy, Clone, PartialEq, Eq, Hash)]
        pub struct $name(pub(crate) sys::$sys);

        impl $name {
            $(pub const $variant: $name = $name(sys::$sys::$c);)*
            /// Every value this version of the crate knows, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The value as the C API numbers it.
            pub fn raw(self) -> u32 {
                self.0 .0
            }

            /// A value from its C number (which need not be one this crate knows).
            pub fn from_raw(value: u32) -> $name {
                $name(sys::$sys(value))
            }

            /// The constant's Rust name, e.g. "FLOAT32" (None for a value unknown to this crate).
            pub fn const_name(self) -> Option<&'static str> {
                $(if self == $name::$variant { return Some(stringify!($variant)); })*
                None
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.const_name() {
                    Some(n) => write!(f, "{}::{}", stringify!($name), n),
                    None => write!(f, "{}({})", stringify!($name), self.raw()),
                }
            }
        }
    };
}

c_enum! {
    /// Error codes (`sn_code`).
    Code(sn_code) {
        OK = SN_OK, INVALID_ARG = SN_E_INVALID_ARG, UNSUPPORTED = SN_E_UNSUPPORTED, COMPILE = SN_E_COMPILE,
        DEVICE = SN_E_DEVICE, OUT_OF_MEMORY = SN_E_OUT_OF_MEMORY, VERSION = SN_E_VERSION,
        NOT_FOUND = SN_E_NOT_FOUND, INTERNAL = SN_E_INTERNAL,
    }
}

c_enum! {
    /// Scalar data types (`sn_dtype`).
    DType(sn_dtype) {
        INVALID = SN_DTYPE_INVALID, BOOL = SN_DTYPE_BOOL, INT8 = SN_DTYPE_INT8, INT16 = SN_DTYPE_INT16,
        INT32 = SN_DTYPE_INT32, INT64 = SN_DTYPE_INT64, UINT8 = SN_DTYPE_UINT8, UINT16 = SN_DTYPE_UINT16,
        UINT32 = SN_DTYPE_UINT32, UINT64 = SN_DTYPE_UINT64, FLOAT16 = SN_DTYPE_FLOAT16,
        BFLOAT16 = SN_DTYPE_BFLOAT16, FLOAT32 = SN_DTYPE_FLOAT32, FLOAT64 = SN_DTYPE_FLOAT64,
        FP8E4M3 = SN_DTYPE_FP8E4M3, FP8E5M2 = SN_DTYPE_FP8E5M2, INDEX = SN_DTYPE_INDEX, VOID = SN_DTYPE_VOID,
    }
}

c_enum! {
    /// Ops of the UOp dialect (`sn_op`); see the spec for each op's sources and arg.
    Op(sn_op) {
        INVALID = SN_OP_INVALID, PARAM = SN_OP_PARAM, BUFFER = SN_OP_BUFFER, CONST = SN_OP_CONST,
        BINARY = SN_OP_BINARY, DEFINE_VAR = SN_OP_DEFINE_VAR, PERMUTE = SN_OP_PERMUTE, FLIP = SN_OP_FLIP,
        RESHAPE = SN_OP_RESHAPE, EXPAND = SN_OP_EXPAND, PAD = SN_OP_PAD, SHRINK = SN_OP_SHRINK,
        INDEX = SN_OP_INDEX, STACK = SN_OP_STACK, REPLICATED = SN_OP_REPLICATED, SLICE = SN_OP_SLICE,
        BITCAST = SN_OP_BITCAST, REDUCE = SN_OP_REDUCE, FUNCTION = SN_OP_FUNCTION, CALL = SN_OP_CALL,
        TUPLE = SN_OP_TUPLE, GET_TUPLE = SN_OP_GET_TUPLE, LOAD = SN_OP_LOAD, COPY = SN_OP_COPY,
        STORE = SN_OP_STORE, RANGE = SN_OP_RANGE, END = SN_OP_END, AFTER = SN_OP_AFTER, GROUP = SN_OP_GROUP,
        SINK = SN_OP_SINK, LINEAR = SN_OP_LINEAR, RECIP = SN_OP_RECIP, TRUNC = SN_OP_TRUNC, CAST = SN_OP_CAST,
        ADD = SN_OP_ADD, MUL = SN_OP_MUL, MAX = SN_OP_MAX, MOD = SN_OP_MOD, IDIV = SN_OP_IDIV,
        CMPLT = SN_OP_CMPLT, CMPNE = SN_OP_CMPNE, XOR = SN_OP_XOR, OR = SN_OP_OR, AND = SN_OP_AND,
        SHR = SN_OP_SHR, SHL = SN_OP_SHL, WHERE = SN_OP_WHERE, NEG = SN_OP_NEG, SUB = SN_OP_SUB,
        DIV = SN_OP_DIV, CMPGT = SN_OP_CMPGT, CMPGE = SN_OP_CMPGE, CMPLE = SN_OP_CMPLE, CMPEQ = SN_OP_CMPEQ,
        NOT = SN_OP_NOT, EXP2 = SN_OP_EXP2, LOG2 = SN_OP_LOG2, SIN = SN_OP_SIN, SQRT = SN_OP_SQRT,
        POW = SN_OP_POW, MULACC = SN_OP_MULACC, THREEFRY = SN_OP_THREEFRY, CDIV = SN_OP_CDIV,
        CMOD = SN_OP_CMOD, CONTIGUOUS = SN_OP_CONTIGUOUS, CONTIGUOUS_BACKWARD = SN_OP_CONTIGUOUS_BACKWARD,
        DETACH = SN_OP_DETACH, STAGE = SN_OP_STAGE, VECTORIZE = SN_OP_VECTORIZE, GEP = SN_OP_GEP,
        NOOP = SN_OP_NOOP, BARRIER = SN_OP_BARRIER, INS = SN_OP_INS, SPECIAL = SN_OP_SPECIAL, IF = SN_OP_IF,
        ENDIF = SN_OP_ENDIF, WMMA = SN_OP_WMMA, CUSTOM = SN_OP_CUSTOM, ATOMIC_ADD = SN_OP_ATOMIC_ADD,
        CUSTOM_FUNCTION = SN_OP_CUSTOM_FUNCTION, PROGRAM = SN_OP_PROGRAM, SOURCE = SN_OP_SOURCE,
    }
}

c_enum! {
    /// Loop kinds of a Range (`sn_axis_type`).
    AxisType(sn_axis_type) {
        INVALID = SN_AXIS_INVALID, GLOBAL = SN_AXIS_GLOBAL, LOCAL = SN_AXIS_LOCAL, WARP = SN_AXIS_WARP,
        THREAD = SN_AXIS_THREAD, LOOP = SN_AXIS_LOOP, REDUCE = SN_AXIS_REDUCE,
        GROUP_REDUCE = SN_AXIS_GROUP_REDUCE, UPCAST = SN_AXIS_UPCAST, UNROLL = SN_AXIS_UNROLL,
    }
}

c_enum! {
    /// Address spaces of buffers and pointers (`sn_addrspace`).
    AddrSpace(sn_addrspace) {
        NONE = SN_ADDRSPACE_NONE, GLOBAL = SN_ADDRSPACE_GLOBAL, LOCAL = SN_ADDRSPACE_LOCAL,
        REG = SN_ADDRSPACE_REG,
    }
}

impl DType {
    /// The library's name, e.g. "float32" (None for a value the library does not know).
    pub fn name(self) -> Option<&'static str> {
        // SAFETY: sn_dtype_name returns NULL or a static string.
        unsafe { static_name(sys::sn_dtype_name(self.0)) }
    }

    /// True for float16, bfloat16, float32, float64 and the fp8 types.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::FLOAT16 | DType::BFLOAT16 | DType::FLOAT32 | DType::FLOAT64 | DType::FP8E4M3 | DType::FP8E5M2
        )
    }
}

impl Op {
    /// The library's name, e.g. "Add" (None for a value the library does not know).
    pub fn name(self) -> Option<&'static str> {
        // SAFETY: sn_op_name returns NULL or a static string.
        unsafe { static_name(sys::sn_op_name(self.0)) }
    }
}

impl AxisType {
    /// The library's name, e.g. "GLOBAL".
    pub fn name(self) -> Option<&'static str> {
        // SAFETY: sn_axis_type_name returns NULL or a static string.
        unsafe { static_name(sys::sn_axis_type_name(self.0)) }
    }
}

impl AddrSpace {
    /// The library's name, e.g. "GLOBAL".
    pub fn name(self) -> Option<&'static str> {
        // SAFETY: sn_addrspace_name returns NULL or a static string.
        unsafe { static_name(sys::sn_addrspace_name(self.0)) }
    }
}

macro_rules! display_by_name {
    ($($t:ident),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{:?}", self),
                }
            }
        }
    )*};
}
display_by_name!(DType, Op, AxisType, AddrSpace);
