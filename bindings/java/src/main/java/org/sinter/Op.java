package org.sinter;

import static org.sinter.jni.SinterNativeConstants.*;

import org.sinter.jni.SinterNative;

/** Ops of the UOp dialect (sn_op); see the spec for each op's sources and arg. The values come from sinter.h
 * through the SWIG layer; the C enum is append-only, and a value this version does not know reads as INVALID. */
public enum Op {
  INVALID(SN_OP_INVALID),
  PARAM(SN_OP_PARAM),
  BUFFER(SN_OP_BUFFER),
  CONST(SN_OP_CONST),
  BINARY(SN_OP_BINARY),
  DEFINE_VAR(SN_OP_DEFINE_VAR),
  PERMUTE(SN_OP_PERMUTE),
  FLIP(SN_OP_FLIP),
  RESHAPE(SN_OP_RESHAPE),
  EXPAND(SN_OP_EXPAND),
  PAD(SN_OP_PAD),
  SHRINK(SN_OP_SHRINK),
  INDEX(SN_OP_INDEX),
  STACK(SN_OP_STACK),
  REPLICATED(SN_OP_REPLICATED),
  SLICE(SN_OP_SLICE),
  BITCAST(SN_OP_BITCAST),
  REDUCE(SN_OP_REDUCE),
  FUNCTION(SN_OP_FUNCTION),
  CALL(SN_OP_CALL),
  TUPLE(SN_OP_TUPLE),
  GET_TUPLE(SN_OP_GET_TUPLE),
  LOAD(SN_OP_LOAD),
  COPY(SN_OP_COPY),
  STORE(SN_OP_STORE),
  RANGE(SN_OP_RANGE),
  END(SN_OP_END),
  AFTER(SN_OP_AFTER),
  GROUP(SN_OP_GROUP),
  SINK(SN_OP_SINK),
  LINEAR(SN_OP_LINEAR),
  RECIP(SN_OP_RECIP),
  TRUNC(SN_OP_TRUNC),
  CAST(SN_OP_CAST),
  ADD(SN_OP_ADD),
  MUL(SN_OP_MUL),
  MAX(SN_OP_MAX),
  MOD(SN_OP_MOD),
  IDIV(SN_OP_IDIV),
  CMPLT(SN_OP_CMPLT),
  CMPNE(SN_OP_CMPNE),
  XOR(SN_OP_XOR),
  OR(SN_OP_OR),
  AND(SN_OP_AND),
  SHR(SN_OP_SHR),
  SHL(SN_OP_SHL),
  WHERE(SN_OP_WHERE),
  NEG(SN_OP_NEG),
  SUB(SN_OP_SUB),
  DIV(SN_OP_DIV),
  CMPGT(SN_OP_CMPGT),
  CMPGE(SN_OP_CMPGE),
  CMPLE(SN_OP_CMPLE),
  CMPEQ(SN_OP_CMPEQ),
  NOT(SN_OP_NOT),
  EXP2(SN_OP_EXP2),
  LOG2(SN_OP_LOG2),
  SIN(SN_OP_SIN),
  SQRT(SN_OP_SQRT),
  POW(SN_OP_POW),
  MULACC(SN_OP_MULACC),
  THREEFRY(SN_OP_THREEFRY),
  CDIV(SN_OP_CDIV),
  CMOD(SN_OP_CMOD),
  CONTIGUOUS(SN_OP_CONTIGUOUS),
  CONTIGUOUS_BACKWARD(SN_OP_CONTIGUOUS_BACKWARD),
  DETACH(SN_OP_DETACH),
  STAGE(SN_OP_STAGE),
  VECTORIZE(SN_OP_VECTORIZE),
  GEP(SN_OP_GEP),
  NOOP(SN_OP_NOOP),
  BARRIER(SN_OP_BARRIER),
  INS(SN_OP_INS),
  SPECIAL(SN_OP_SPECIAL),
  IF(SN_OP_IF),
  ENDIF(SN_OP_ENDIF),
  WMMA(SN_OP_WMMA),
  CUSTOM(SN_OP_CUSTOM),
  ATOMIC_ADD(SN_OP_ATOMIC_ADD),
  CUSTOM_FUNCTION(SN_OP_CUSTOM_FUNCTION),
  PROGRAM(SN_OP_PROGRAM),
  SOURCE(SN_OP_SOURCE);

  private final int value;

  Op(int value) {
    this.value = value;
  }

  /** The C API's number for this value. */
  public int value() {
    return value;
  }

  /** The library's name, e.g. "Add". */
  public String cName() {
    String n = SinterNative.sn_op_name(value);
    return n != null ? n : name();
  }

  private static final Op[] BY_VALUE;

  static {
    int max = 0;
    for (Op v : values()) max = Math.max(max, v.value);
    BY_VALUE = new Op[max + 1];
    for (Op v : values()) BY_VALUE[v.value] = v;
  }

  /** The constant for a C value (INVALID when unknown). */
  public static Op fromValue(int value) {
    Op v = value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : null;
    return v != null ? v : INVALID;
  }
}
