package org.sinter;

import static org.sinter.jni.SinterNativeConstants.*;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;
import org.sinter.jni.SinterNative;

/**
 * The arg of a node (sn_arg): {@link #kind()} says which fields are meaningful (see sn_arg_kind in sinter.h);
 * the others are zero. Build one with the static factories, read one with {@link UOp#arg()}.
 */
public final class Arg {
  /** Which fields of an Arg are meaningful (sn_arg_kind). */
  public enum Kind {
    NONE(SN_ARG_NONE),
    INT(SN_ARG_INT),
    FLOAT(SN_ARG_FLOAT),
    INTS(SN_ARG_INTS),
    DTYPE(SN_ARG_DTYPE),
    STRING(SN_ARG_STRING),
    REDUCE(SN_ARG_REDUCE),
    RANGE(SN_ARG_RANGE),
    BUFFER(SN_ARG_BUFFER),
    PARAM(SN_ARG_PARAM),
    VAR(SN_ARG_VAR),
    MEM(SN_ARG_MEM),
    SLICE(SN_ARG_SLICE);

    final int value;

    Kind(int value) {
      this.value = value;
    }

    static Kind fromValue(int value) {
      for (Kind k : values()) {
        if (k.value == value) return k;
      }
      return NONE;
    }
  }

  private Kind kind = Kind.NONE;
  private long intValue;
  private double floatValue;
  private long[] ints = new long[0];
  private DType dtype = DType.INVALID;
  private Op reduceOp = Op.INVALID;
  private byte[] bytes = new byte[0];
  private long id;
  private AxisType axisType = AxisType.INVALID;
  private AddrSpace addrSpace = AddrSpace.NONE;
  private long size;
  private String device = "";
  private long min;
  private long max;

  private Arg() {}

  private static Arg of(Kind kind) {
    Arg a = new Arg();
    a.kind = kind;
    return a;
  }

  public static Arg none() {
    return of(Kind.NONE);
  }

  /** Const of bool/int/index dtype (uint64: the bit pattern), GetTuple index, Gep lane. */
  public static Arg ofInt(long v) {
    Arg a = of(Kind.INT);
    a.intValue = v;
    return a;
  }

  /** Const of a float dtype. */
  public static Arg ofFloat(double v) {
    Arg a = of(Kind.FLOAT);
    a.floatValue = v;
    return a;
  }

  /** Permute order, Flip flags (0/1), Replicated axes, Gep lanes. */
  public static Arg ofInts(long... v) {
    Arg a = of(Kind.INTS);
    a.ints = v.clone();
    return a;
  }

  /** Cast / Bitcast target. */
  public static Arg ofDType(DType d) {
    Arg a = of(Kind.DTYPE);
    a.dtype = d;
    return a;
  }

  /** Binary data, Source text, Special name, Custom format, Ins mnemonic, CustomFunction name. */
  public static Arg ofBytes(byte[] b) {
    Arg a = of(Kind.STRING);
    a.bytes = b.clone();
    return a;
  }

  public static Arg ofString(String s) {
    return ofBytes(s.getBytes(StandardCharsets.UTF_8));
  }

  /** Reduce op (ADD, MAX or MUL) and the reduced axes. */
  public static Arg reduce(Op op, long... axes) {
    Arg a = of(Kind.REDUCE);
    a.reduceOp = op;
    a.ints = axes.clone();
    return a;
  }

  /** Loop id and kind of a Range. */
  public static Arg range(long id, AxisType type) {
    Arg a = of(Kind.RANGE);
    a.id = id;
    a.axisType = type;
    return a;
  }

  /** id (0 = a new, distinct buffer), size in elements, device ("" for none), address space. */
  public static Arg buffer(long id, long size, String device, AddrSpace space) {
    Arg a = of(Kind.BUFFER);
    a.id = id;
    a.size = size;
    a.device = device;
    a.addrSpace = space;
    return a;
  }

  /** Slot number, device ("" for none), address space. */
  public static Arg param(long slot, String device, AddrSpace space) {
    Arg a = of(Kind.PARAM);
    a.id = slot;
    a.device = device;
    a.addrSpace = space;
    return a;
  }

  /** A bounded symbolic integer. */
  public static Arg var(String name, long min, long max) {
    Arg a = of(Kind.VAR);
    a.bytes = name.getBytes(StandardCharsets.UTF_8);
    a.min = min;
    a.max = max;
    return a;
  }

  /** Target of Load / Copy / Stage. */
  public static Arg mem(String device, AddrSpace space) {
    Arg a = of(Kind.MEM);
    a.device = device;
    a.addrSpace = space;
    return a;
  }

  /** Size in elements and dtype. */
  public static Arg slice(long size, DType d) {
    Arg a = of(Kind.SLICE);
    a.size = size;
    a.dtype = d;
    return a;
  }

  public Kind kind() {
    return kind;
  }

  public long intValue() {
    return intValue;
  }

  public double floatValue() {
    return floatValue;
  }

  public long[] ints() {
    return ints.clone();
  }

  public DType dtype() {
    return dtype;
  }

  public Op reduceOp() {
    return reduceOp;
  }

  public byte[] bytes() {
    return bytes.clone();
  }

  /** The bytes as UTF-8 text (a Var's name, a Source's text). */
  public String string() {
    return new String(bytes, StandardCharsets.UTF_8);
  }

  public long id() {
    return id;
  }

  public AxisType axisType() {
    return axisType;
  }

  public AddrSpace addrSpace() {
    return addrSpace;
  }

  public long size() {
    return size;
  }

  public String device() {
    return device;
  }

  public long min() {
    return min;
  }

  public long max() {
    return max;
  }

  // ---- to and from the JNI layer's flat form: {kind, int_value, nints, dtype, reduce_op, str_len, id,
  // axis_type, addrspace, size, min, max} (see sinter.i) ----

  long[] fields() {
    return new long[] {kind.value, intValue, ints.length, dtype.value(), reduceOp.value(), bytes.length, id,
        axisType.value(), addrSpace == AddrSpace.NONE ? AddrSpace.GLOBAL.value() : addrSpace.value(), size, min, max};
  }

  static Arg fromNative(long uop) {
    long[] f = new long[12];
    SinterNative.snj_uop_arg_fields(uop, f);
    Arg a = of(Kind.fromValue((int) f[0]));
    a.intValue = f[1];
    a.ints = new long[(int) f[2]];
    for (int i = 0; i < a.ints.length; i++) a.ints[i] = SinterNative.snj_uop_arg_int_at(uop, i);
    a.dtype = DType.fromValue((int) f[3]);
    a.reduceOp = Op.fromValue((int) f[4]);
    a.bytes = new byte[(int) f[5]];
    for (int i = 0; i < a.bytes.length; i++) {
      a.bytes[i] = (byte) SinterNative.snj_uop_arg_byte_at(uop, i);
    }
    a.id = f[6];
    a.axisType = AxisType.fromValue((int) f[7]);
    a.addrSpace = AddrSpace.fromValue((int) f[8]);
    a.size = f[9];
    a.min = f[10];
    a.max = f[11];
    a.floatValue = SinterNative.snj_uop_arg_float(uop);
    a.device = SinterNative.snj_uop_arg_device(uop);
    return a;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Arg a && a.kind == kind && a.intValue == intValue
        && Double.compare(a.floatValue, floatValue) == 0 && Arrays.equals(a.ints, ints) && a.dtype == dtype
        && a.reduceOp == reduceOp && Arrays.equals(a.bytes, bytes) && a.id == id && a.axisType == axisType
        && a.addrSpace == addrSpace && a.size == size && a.device.equals(device) && a.min == min && a.max == max;
  }

  @Override
  public int hashCode() {
    return Objects.hash(kind, intValue, floatValue, Arrays.hashCode(ints), dtype, reduceOp, Arrays.hashCode(bytes),
        id, axisType, addrSpace, size, device, min, max);
  }

  @Override
  public String toString() {
    return switch (kind) {
      case NONE -> "Arg[]";
      case INT -> "Arg[int " + intValue + "]";
      case FLOAT -> "Arg[float " + floatValue + "]";
      case INTS -> "Arg[ints " + Arrays.toString(ints) + "]";
      case DTYPE -> "Arg[dtype " + dtype + "]";
      case STRING -> "Arg[string " + string() + "]";
      case REDUCE -> "Arg[reduce " + reduceOp + " " + Arrays.toString(ints) + "]";
      case RANGE -> "Arg[range " + id + " " + axisType + "]";
      case BUFFER -> "Arg[buffer #" + id + " size=" + size + " " + device + " " + addrSpace + "]";
      case PARAM -> "Arg[param " + id + " " + device + " " + addrSpace + "]";
      case VAR -> "Arg[var " + string() + " " + min + ".." + max + "]";
      case MEM -> "Arg[mem " + device + " " + addrSpace + "]";
      case SLICE -> "Arg[slice " + size + " " + dtype + "]";
    };
  }
}
