//! Operator overloading for elementwise ops: `a + b`, `a * 2.0`, `-a`, `a & b`, ...
//!
//! Building a node can fail (shapes that do not broadcast, dtypes that do not match), so every operator yields
//! `Result<UOp>`; chain with `?`: `let y = ((a + b)? * 2.0)?;`. A scalar on the right becomes a constant of the
//! left operand's dtype (an `f64` needs a float dtype). The operators follow the dialect, not Rust's integer
//! semantics: `/` is the dialect's `Div`, `%` is the floor modulo `Mod` (use [`UOp::idiv`] for floor division).
use std::ops::{Add, BitAnd, BitOr, BitXor, Div, Mul, Neg, Not, Rem, Shl, Shr, Sub};

use crate::enums::Op;
use crate::error::Result;
use crate::graph::UOp;

macro_rules! binary_ops {
    ($($trait:ident :: $method:ident => $op:ident),* $(,)?) => {$(
        impl<'g> $trait<UOp<'g>> for UOp<'g> {
            type Output = Result<UOp<'g>>;
            fn $method(self, rhs: UOp<'g>) -> Result<UOp<'g>> {
                self.binary(Op::$op, rhs)
            }
        }
        impl<'g> $trait<f64> for UOp<'g> {
            type Output = Result<UOp<'g>>;
            fn $method(self, rhs: f64) -> Result<UOp<'g>> {
                self.binary(Op::$op, self.scalar_f64(rhs)?)
            }
        }
        impl<'g> $trait<i64> for UOp<'g> {
            type Output = Result<UOp<'g>>;
            fn $method(self, rhs: i64) -> Result<UOp<'g>> {
                self.binary(Op::$op, self.scalar_i64(rhs)?)
            }
        }
    )*};
}

binary_ops! {
    Add::add => ADD, Sub::sub => SUB, Mul::mul => MUL, Div::div => DIV, Rem::rem => MOD,
    BitAnd::bitand => AND, BitOr::bitor => OR, BitXor::bitxor => XOR, Shl::shl => SHL, Shr::shr => SHR,
}

impl<'g> Neg for UOp<'g> {
    type Output = Result<UOp<'g>>;
    fn neg(self) -> Result<UOp<'g>> {
        self.unary(Op::NEG)
    }
}

impl<'g> Not for UOp<'g> {
    type Output = Result<UOp<'g>>;
    fn not(self) -> Result<UOp<'g>> {
        self.unary(Op::NOT)
    }
}
