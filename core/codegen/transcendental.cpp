// Transcendental decompositions: Exp2, Log2, Sin, Sqrt and Pow on float32/float64 values
// (scalar or vector) rewritten into the ops every renderer emits (Add Mul Mulacc Sub Div Neg,
// comparisons, Where, Trunc, Cast, Bitcast and integer Shl/Shr/And/Add). For targets without
// those ops natively (Target::native_math; SN_CPU_NATIVE_MATH=0 on the CPU).
//
// No fast-math is assumed: the rounding tricks ((x + 1.5*2^p) - 1.5*2^p, Dekker splits, TwoSum)
// need IEEE evaluation of every op as written. FMA contraction (Mulacc) is only used in
// polynomial evaluation, where either rounding is fine.
//
//   exp2(x)  n = rint(x), 2^(x-n) by its Taylor series on [-1/2, 1/2], times 2^n built from
//            exponent bits in two halves (so results underflow gradually and overflow to inf).
//   log2(x)  denormals pre-scaled by 2^k; x = 2^e * m with m in [sqrt(1/2), sqrt(2));
//            log2(m) = 2/ln2 * atanh(s), s = (m-1)/(m+1), with s and the leading term carried
//            as double-words (hi + lo), so log2 also feeds pow with extra precision.
//   sqrt(x)  bit-trick estimate, Newton steps with division, then Tuckerman's rounding test
//            with exact (Dekker) products: correctly rounded; tiny and huge inputs pre-scaled.
//   sin(x)   argument reduction by pi/2 in float64 over the whole range (Payne-Hanek style
//            without tables): x (split in halves for float64) times the bits of 2/pi in chunks
//            short enough for exact products, each product reduced mod 4 exactly (Trunc) and
//            summed with TwoSum; the quadrant and a double-word fraction come out of the sum.
//            float64 picks its 8-chunk window of 2/pi by the exponent of x (Where over 37
//            windows). Then sin/cos Taylor polynomials on [-pi/4, pi/4]. float32 sin runs in
//            float64 (a target without float64 would need a float32-only variant).
//   pow(x,y) exp2(y * log2|x|) with the double-word log2 and a double-word product, in float64
//            (float32 pow converts in and out), plus the C99 Annex F special cases (as libm:
//            pow(x, +-0) = 1 and pow(1, y) = 1 even for NaN, negative x needs an integer y).
//
// Measured against long double libm (tests/unit/test_transcendental.cpp), max error in ULPs
// over the whole range, denormals included:
//            exp2   log2   sqrt   sin    pow
//   float32  0.81   0.50   0.50   0.50   0.50
//   float64  0.85   0.51   0.50   0.69   2.1 (results near the overflow threshold; 0.9 for |y log2 x| < 100)
#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include "core/codegen/codegen.h"
#include "core/rewrite/pattern.h"

namespace sn {

namespace {

// 2/pi, 1248 bits after the binary point (hex digits).
constexpr std::string_view kTwoOverPi =
    "a2f9836e4e441529fc2757d1f534ddc0db6295993c439041fe5163abdebbc561"
    "b7246e3a424dd2e006492eea09d1921cfe1deb1cb129a73ee88235f52ebb4484"
    "e99c7026b45f7e413991d639835339f49c845f8bbdf9283b1ff897ffde05980f"
    "ef2f118b5a0a6d1f6d367ecf27cb09b74f463f669e5fea2d7527bac7ebe5f17b"
    "3d0739f78a5292ea6bfb5fb11f8d5d0856033046fc7b6babf0cfbc20";

// Bit i (1-based, weight 2^-i) of 2/pi.
int two_over_pi_bit(int i) {
  char h = kTwoOverPi[size_t((i - 1) / 4)];
  int v = h <= '9' ? h - '0' : h - 'a' + 10;
  return (v >> (3 - (i - 1) % 4)) & 1;
}

// Chunk j (0-based) of `bits` bits of 2/pi, times 2^scale, as an exact double: bits
// j*bits+1 .. (j+1)*bits.
double two_over_pi_chunk(int j, int bits, int scale = 0) {
  int64_t v = 0;
  for (int i = 1; i <= bits; i++) v = v * 2 + two_over_pi_bit(j * bits + i);
  return std::ldexp(double(v), scale - (j + 1) * bits);
}

struct DD {
  const UOp *hi, *lo;
};

// Elementwise math on values of one float dtype (scalar or vector lanes).
struct M {
  Graph& g;
  DType ft;  // float32/float64 with the lanes
  DType it;  // int32/int64 with the lanes
  bool f64;
  int mant;      // explicit mantissa bits
  int64_t bias;  // exponent bias

  M(Graph& g_, DType dt)
      : g(g_),
        ft(dt),
        it((dt.scalar == Scalar::Float64 ? dtypes::int64 : dtypes::int32).vec(dt.lanes)),
        f64(dt.scalar == Scalar::Float64),
        mant(f64 ? 52 : 23),
        bias(f64 ? 1023 : 127) {}

  const UOp* splat(const UOp* s, DType d) const {
    if (d.lanes == 1) return s;
    std::vector<const UOp*> lanes(d.lanes, s);
    return g.make(Op::Vectorize, d, lanes);
  }
  const UOp* c(double v) const { return splat(g.cfloat(v, ft.base()), ft); }
  const UOp* ci(int64_t v) const { return splat(g.cint(v, it.base()), it); }
  const UOp* add(const UOp* a, const UOp* b) const { return g.alu(Op::Add, a, b); }
  const UOp* sub(const UOp* a, const UOp* b) const { return g.alu(Op::Sub, a, b); }
  const UOp* mul(const UOp* a, const UOp* b) const { return g.alu(Op::Mul, a, b); }
  const UOp* div(const UOp* a, const UOp* b) const { return g.alu(Op::Div, a, b); }
  const UOp* neg(const UOp* a) const { return g.alu(Op::Neg, a); }
  const UOp* mad(const UOp* a, const UOp* b, const UOp* c_) const { return g.alu(Op::Mulacc, a, b, c_); }
  const UOp* lt(const UOp* a, const UOp* b) const { return g.alu(Op::CmpLt, a, b); }
  const UOp* le(const UOp* a, const UOp* b) const { return g.alu(Op::CmpLe, a, b); }
  const UOp* eq(const UOp* a, const UOp* b) const { return g.alu(Op::CmpEq, a, b); }
  const UOp* ne(const UOp* a, const UOp* b) const { return g.alu(Op::CmpNe, a, b); }
  const UOp* land(const UOp* a, const UOp* b) const { return g.alu(Op::And, a, b); }
  const UOp* lor(const UOp* a, const UOp* b) const { return g.alu(Op::Or, a, b); }
  const UOp* lnot(const UOp* a) const { return g.alu(Op::Not, a); }
  const UOp* sel(const UOp* c_, const UOp* a, const UOp* b) const { return g.alu(Op::Where, c_, a, b); }
  const UOp* trunc(const UOp* a) const { return g.alu(Op::Trunc, a); }
  const UOp* isnan(const UOp* a) const { return ne(a, a); }
  const UOp* bits(const UOp* a) const { return g.make(Op::Bitcast, it, {a}, it); }
  const UOp* from_bits(const UOp* i) const { return g.make(Op::Bitcast, ft, {i}, ft); }
  const UOp* to_int(const UOp* a) const { return g.cast(a, it); }
  const UOp* to_float(const UOp* i) const { return g.cast(i, ft); }
  const UOp* iadd(const UOp* a, const UOp* b) const { return g.alu(Op::Add, a, b); }
  const UOp* isub(const UOp* a, const UOp* b) const { return g.alu(Op::Sub, a, b); }
  const UOp* iand(const UOp* a, const UOp* b) const { return g.alu(Op::And, a, b); }
  const UOp* shl(const UOp* a, int n) const { return g.alu(Op::Shl, a, ci(n)); }
  const UOp* shr(const UOp* a, int n) const { return g.alu(Op::Shr, a, ci(n)); }  // arithmetic

  const UOp* abs(const UOp* a) const { return from_bits(iand(bits(a), ci(f64 ? INT64_MAX : INT32_MAX))); }
  const UOp* signbit(const UOp* a) const { return lt(bits(a), ci(0)); }
  const UOp* inf() const { return c(HUGE_VAL); }
  const UOp* nan() const { return c(std::nan("")); }
  // Round to nearest even; |a| < 2^(mant-1).
  const UOp* rint(const UOp* a) const {
    const UOp* magic = c(std::ldexp(1.5, mant));
    return sub(add(a, magic), magic);
  }
  // min(max(a, lo), hi); NaN stays NaN.
  const UOp* clamp(const UOp* a, double lo, double hi) const {
    return sel(lt(a, c(lo)), c(lo), sel(lt(c(hi), a), c(hi), a));
  }
  // coeffs[0] + x*(coeffs[1] + x*(...)).
  const UOp* poly(const UOp* x, const std::vector<long double>& coeffs) const {
    const UOp* r = c(double(coeffs.back()));
    for (size_t i = coeffs.size() - 1; i-- > 0;) r = mad(r, x, c(double(coeffs[i])));
    return r;
  }
  // 2^n for an integer-valued n within the normal exponent range.
  const UOp* pow2i(const UOp* n) const { return from_bits(shl(iadd(n, ci(bias)), mant)); }

  // ---- double-word arithmetic (exact sums and products) ---------------------------------------
  DD two_sum(const UOp* a, const UOp* b) const {
    const UOp* s = add(a, b);
    const UOp* bb = sub(s, a);
    const UOp* e = add(sub(a, sub(s, bb)), sub(b, bb));
    return {s, e};
  }
  DD fast_two_sum(const UOp* a, const UOp* b) const {  // |a| >= |b|
    const UOp* s = add(a, b);
    return {s, sub(b, sub(s, a))};
  }
  DD split(const UOp* a) const {  // Veltkamp: a = hi + lo, each half the mantissa
    const UOp* t = mul(c(f64 ? 134217729.0 : 4097.0), a);
    const UOp* hi = sub(t, sub(t, a));
    return {hi, sub(a, hi)};
  }
  DD two_prod(const UOp* a, const UOp* b) const {  // Dekker, no FMA needed
    const UOp* p = mul(a, b);
    DD x = split(a), y = split(b);
    const UOp* e = add(add(add(sub(mul(x.hi, y.hi), p), mul(x.hi, y.lo)), mul(x.lo, y.hi)), mul(x.lo, y.lo));
    return {p, e};
  }
};

long double factorial(int n) {
  long double f = 1;
  for (int i = 2; i <= n; i++) f *= i;
  return f;
}

// ---- exp2 -------------------------------------------------------------------------------------

// 2^(x + lo) (lo: a small low word, or nullptr). NaN in, NaN out.
const UOp* exp2_core(const M& m, const UOp* x, const UOp* lo) {
  double hi_lim = m.f64 ? 1025 : 129, lo_lim = m.f64 ? -1080 : -152;
  const UOp* xc = m.clamp(x, lo_lim, hi_lim);
  // Round to nearest with the 1.5 * 2^mant trick: the sum's low mantissa bits are n itself, so
  // the integer needs no float -> int conversion (a saturating one costs more than the rest).
  const UOp* magic = m.c(std::ldexp(1.5, m.mant));
  const UOp* t = m.add(xc, magic);
  const UOp* n = m.sub(t, magic);
  const UOp* ni = m.isub(m.bits(t), m.bits(magic));
  const UOp* f = m.sub(xc, n);
  if (lo) f = m.add(f, m.sel(m.eq(xc, x), lo, m.c(0)));
  static const long double ln2 = std::log(2.0L);
  std::vector<long double> co;
  int deg = m.f64 ? 13 : 7;
  for (int k = 0; k <= deg; k++) co.push_back(std::pow(ln2, k) / factorial(k));
  const UOp* p = m.poly(f, co);
  const UOp* n1 = m.g.alu(Op::Shr, ni, m.ci(1));
  const UOp* n2 = m.isub(ni, n1);
  return m.mul(m.mul(p, m.pow2i(n1)), m.pow2i(n2));
}

// ---- log2 -------------------------------------------------------------------------------------

// log2(x) as a double-word for finite x > 0 (other inputs give garbage: callers patch them).
DD log2_dd(const M& m, const UOp* x) {
  int sc = m.f64 ? 64 : 32;
  const UOp* tiny = m.lt(x, m.c(m.f64 ? 0x1p-1022 : 0x1p-126));
  const UOp* xs = m.sel(tiny, m.mul(x, m.c(std::ldexp(1.0, sc))), x);
  const UOp* eadj = m.sel(tiny, m.c(-sc), m.c(0));
  int64_t one = m.f64 ? 0x3ff0000000000000LL : 0x3f800000LL;
  int64_t off = m.f64 ? 0x3fe6a09e667f3bcdLL : 0x3f3504f3LL;  // bits of sqrt(1/2)
  int64_t mmask = (int64_t(1) << m.mant) - 1;
  const UOp* ix = m.iadd(m.bits(xs), m.ci(one - off));
  const UOp* k = m.isub(m.shr(ix, m.mant), m.ci(m.bias));
  const UOp* mm = m.from_bits(m.iadd(m.iand(ix, m.ci(mmask)), m.ci(off)));  // [sqrt(1/2), sqrt(2))
  const UOp* e = m.add(m.to_float(k), eadj);
  const UOp* f = m.sub(mm, m.c(1));  // exact
  // s = f / (2 + f) as s_hi + s_lo.
  DD den = m.fast_two_sum(m.c(2), f);
  const UOp* s = m.div(f, den.hi);
  DD p = m.two_prod(s, den.hi);
  const UOp* res = m.sub(m.sub(m.sub(f, p.hi), p.lo), m.mul(s, den.lo));
  const UOp* s_lo = m.div(res, den.hi);
  // log2(m) = s * (C + Q0*z + z^2 * Q'(z)), z = s^2, C = 2/ln2, Q_k = 2/((2k+3) ln2); C, Q0*z
  // and the product with s in double-words (pow needs log2 to ~2^-63 relative).
  static const long double ln2 = std::log(2.0L);
  auto hi_lo = [&](long double v) {
    double h = m.f64 ? double(v) : double(float(v));
    double l = m.f64 ? double(v - (long double)h) : double(float(v - (long double)h));
    return std::pair<double, double>{h, l};
  };
  auto [c_hi, c_lo] = hi_lo(2.0L / ln2);
  auto [q0_hi, q0_lo] = hi_lo(2.0L / (3 * ln2));
  std::vector<long double> q;
  int terms = m.f64 ? 10 : 5;
  for (int i = 1; i < terms; i++) q.push_back(2.0L / ((2 * i + 3) * ln2));
  DD z = m.two_prod(s, s);
  const UOp* z_lo = m.add(z.lo, m.mul(m.mul(m.c(2), s), s_lo));
  DD t1 = m.two_prod(z.hi, m.c(q0_hi));
  const UOp* t1_lo = m.add(t1.lo, m.add(m.mul(z.hi, m.c(q0_lo)), m.mul(z_lo, m.c(q0_hi))));
  const UOp* rest = m.mul(m.mul(z.hi, z.hi), m.poly(z.hi, q));
  DD b = m.fast_two_sum(m.c(c_hi), t1.hi);
  const UOp* b_lo = m.add(b.lo, m.add(m.c(c_lo), m.add(t1_lo, rest)));
  DD bb = m.fast_two_sum(b.hi, b_lo);
  DD pr = m.two_prod(bb.hi, s);
  DD lm = m.fast_two_sum(pr.hi, m.add(pr.lo, m.add(m.mul(bb.hi, s_lo), m.mul(bb.lo, s))));
  DD t = m.two_sum(e, lm.hi);
  return m.fast_two_sum(t.hi, m.add(t.lo, lm.lo));
}

const UOp* log2_full(const M& m, const UOp* x) {
  DD l = log2_dd(m, x);
  const UOp* r = m.add(l.hi, l.lo);
  r = m.sel(m.eq(x, m.inf()), x, r);
  r = m.sel(m.eq(x, m.c(0)), m.neg(m.inf()), r);
  r = m.sel(m.lt(x, m.c(0)), m.nan(), r);
  return m.sel(m.isnan(x), x, r);
}

// ---- sqrt -------------------------------------------------------------------------------------

const UOp* sqrt_full(const M& m, const UOp* x) {
  // Tiny inputs (denormals included) scaled up by an even power of two so that the exact
  // products of the rounding test do not underflow.
  // Huge inputs scaled down so that y*succ(y) stays finite.
  int sc = m.f64 ? 1000 : 100;
  const UOp* tiny = m.lt(x, m.c(m.f64 ? 0x1p-900 : 0x1p-100));
  const UOp* huge = m.lt(m.c(m.f64 ? 0x1p900 : 0x1p100), x);
  const UOp* xs = m.sel(tiny, m.mul(x, m.c(std::ldexp(1.0, sc))), m.sel(huge, m.mul(x, m.c(std::ldexp(1.0, -sc))), x));
  int64_t one = m.f64 ? 0x3ff0000000000000LL : 0x3f800000LL;
  const UOp* y = m.from_bits(m.iadd(m.shr(m.bits(xs), 1), m.ci(one >> 1)));  // within 6%
  for (int i = 0, n = m.f64 ? 5 : 4; i < n; i++) y = m.mul(m.c(0.5), m.add(y, m.div(xs, y)));
  // Tuckerman: y is sqrt(xs) rounded to nearest iff y*pred(y) < xs <= y*succ(y).
  const UOp* yb = m.bits(y);
  const UOp* yd = m.from_bits(m.isub(yb, m.ci(1)));
  const UOp* yu = m.from_bits(m.iadd(yb, m.ci(1)));
  DD pd = m.two_prod(y, yd), pu = m.two_prod(y, yu);
  const UOp* too_big = m.le(m.sub(xs, pd.hi), pd.lo);    // xs <= y*pred(y)
  const UOp* too_small = m.lt(pu.lo, m.sub(xs, pu.hi));  // xs > y*succ(y)
  y = m.sel(too_big, yd, m.sel(too_small, yu, y));
  const UOp* r =
      m.sel(tiny, m.mul(y, m.c(std::ldexp(1.0, -sc / 2))), m.sel(huge, m.mul(y, m.c(std::ldexp(1.0, sc / 2))), y));
  r = m.sel(m.eq(x, m.inf()), x, r);
  r = m.sel(m.eq(x, m.c(0)), x, r);  // keeps the sign of zero
  r = m.sel(m.lt(x, m.c(0)), m.nan(), r);
  return m.sel(m.isnan(x), x, r);
}

// ---- sin --------------------------------------------------------------------------------------

// sin of a float64 value (finite or not). from_f32: x is a float32 value (24 bits, up to 2^128),
// which needs fewer and wider chunks of 2/pi.
const UOp* sin_f64(const M& d, const UOp* x, bool from_f32) {
  // x (as parts) * 2/pi mod 4: products of exact parts and chunks of 2/pi, reduced mod 4.
  std::vector<const UOp*> parts;
  std::vector<const UOp*> chunk;  // chunk[w] multiplies every part; exact products
  if (from_f32) {
    // 24-bit x, 29-bit chunks; 8 chunks reach bit 232 of 2/pi, enough up to 2^128.
    parts = {x};
    for (int j = 0; j < 8; j++) chunk.push_back(d.c(two_over_pi_chunk(j, 29)));
  } else {
    // x = hi (26 bits) + lo (27 bits), 26-bit chunks. For x = M * 2^(E-52) (M an integer), chunk
    // j times x is a multiple of 4 for j < j0 = floor((E-54)/26): those are skipped, and 8
    // chunks from j0 on reach 2^-(E+125). The window (j0 <= 37) is picked with Where; the parts
    // are scaled by 2^(-26*j0) and the chunks by 2^(26*j0), which keeps both normal.
    const UOp* xb = d.bits(x);
    const UOp* hi = d.from_bits(d.iand(xb, d.ci(~((int64_t(1) << 27) - 1))));
    const UOp* e = d.to_float(d.isub(d.iand(d.shr(xb, 52), d.ci(0x7ff)), d.ci(1023)));
    const UOp* jf = d.trunc(d.mul(d.add(d.clamp(d.sub(e, d.c(54)), 0, 969), d.c(0.5)), d.c(1.0 / 26)));
    const UOp* down = d.pow2i(d.g.alu(Op::Mul, d.to_int(jf), d.ci(-26)));
    parts = {d.mul(hi, down), d.mul(d.sub(x, hi), down)};
    constexpr int kMaxJ0 = 37, kWindow = 8;
    std::vector<const UOp*> is_j0(kMaxJ0);
    for (int j0 = 0; j0 < kMaxJ0; j0++) is_j0[size_t(j0)] = d.eq(jf, d.c(j0));
    for (int w = 0; w < kWindow; w++) {
      const UOp* cw = d.c(two_over_pi_chunk(kMaxJ0 + w, 26, 26 * kMaxJ0));
      for (int j0 = kMaxJ0; j0-- > 0;) cw = d.sel(is_j0[size_t(j0)], d.c(two_over_pi_chunk(j0 + w, 26, 26 * j0)), cw);
      chunk.push_back(cw);
    }
  }
  const UOp* s = nullptr;
  const UOp* lo = d.c(0);
  // Smallest terms first.
  for (size_t j = chunk.size(); j-- > 0;) {
    for (const UOp* part : parts) {
      const UOp* p = d.mul(part, chunk[j]);
      const UOp* q = d.sub(p, d.mul(d.c(4), d.trunc(d.mul(p, d.c(0.25)))));  // exact, |q| < 4
      if (!s) {
        s = q;
        continue;
      }
      DD t = d.two_sum(s, q);
      s = t.hi;
      lo = d.add(lo, t.lo);
    }
  }
  const UOp* k = d.rint(s);
  DD fr = d.two_sum(d.sub(s, k), lo);  // fraction in about [-1/2, 1/2], double-word
  // r = fr * pi/2
  long double pio2 = std::acos(-1.0L) / 2;
  double pio2_hi = double(pio2);
  double pio2_lo = 6.123233995736766036e-17;  // pi/2 - pio2_hi
  DD rp = d.two_prod(fr.hi, d.c(pio2_hi));
  DD r = d.fast_two_sum(rp.hi, d.add(rp.lo, d.add(d.mul(fr.hi, d.c(pio2_lo)), d.mul(fr.lo, d.c(pio2_hi)))));
  // Polynomials on |r| <= pi/4 (+ a little).
  DD z2 = d.two_prod(r.hi, r.hi);
  const UOp* z = z2.hi;
  std::vector<long double> sc, cc;
  for (int i = 0; i < 8; i++) sc.push_back((i % 2 ? 1 : -1) / factorial(2 * i + 3));  // -1/3!, 1/5!, ...
  for (int i = 0; i < 7; i++) cc.push_back((i % 2 ? -1 : 1) / factorial(2 * i + 4));  // 1/4!, -1/6!, ...
  const UOp* sin_r =
      d.add(r.hi, d.add(d.mul(d.mul(r.hi, z), d.poly(z, sc)), d.mul(r.lo, d.sub(d.c(1), d.mul(d.c(0.5), z)))));
  const UOp* hz = d.mul(d.c(0.5), z);
  const UOp* w = d.sub(d.c(1), hz);
  const UOp* corr = d.sub(d.sub(d.c(1), w), hz);  // exact error of w
  const UOp* cos_tail = d.sub(d.mul(d.mul(z, z), d.poly(z, cc)), d.add(d.mul(d.c(0.5), z2.lo), d.mul(r.hi, r.lo)));
  const UOp* cos_r = d.add(w, d.add(corr, cos_tail));
  const UOp* quad = d.iand(d.to_int(k), d.ci(3));
  const UOp* v = d.sel(d.eq(d.iand(quad, d.ci(1)), d.ci(1)), cos_r, sin_r);
  v = d.sel(d.eq(d.iand(quad, d.ci(2)), d.ci(2)), d.neg(v), v);
  // Tiny |x|: sin(x) rounds to x (also keeps -0); inf and NaN: NaN.
  const UOp* ax = d.abs(x);
  v = d.sel(d.lt(ax, d.c(0x1p-27)), x, v);
  return d.sel(d.lt(ax, d.inf()), v, d.nan());
}

// ---- pow --------------------------------------------------------------------------------------

// pow on float64 values, C99 Annex F special cases.
const UOp* pow_f64(const M& d, const UOp* x, const UOp* y) {
  const UOp* ax = d.abs(x);
  DD l = log2_dd(d, ax);
  // |y| > 2^64 over- or underflows for every |x| != 1 (and is an even integer): clamp it so
  // the Dekker product stays finite.
  const UOp* yc = d.clamp(y, -0x1p64, 0x1p64);
  DD t = d.two_prod(yc, l.hi);
  const UOp* t_lo = d.add(t.lo, d.mul(yc, l.lo));
  const UOp* mag = exp2_core(d, t.hi, t_lo);
  // |x| = 0 or inf: log2 is -inf / inf.
  const UOp* x_zero = d.eq(ax, d.c(0));
  const UOp* x_inf = d.eq(ax, d.inf());
  const UOp* special = exp2_core(d, d.mul(y, d.sel(x_zero, d.neg(d.inf()), d.inf())), nullptr);
  mag = d.sel(d.lor(x_zero, x_inf), special, mag);
  // Sign of negative bases: integer y keeps (-1)^y, other finite y gives NaN.
  const UOp* y_int = d.eq(d.trunc(y), y);  // true for +-inf too
  const UOp* hy = d.mul(y, d.c(0.5));
  const UOp* y_odd = d.land(y_int, d.ne(d.trunc(hy), hy));
  const UOp* r = d.sel(d.land(d.signbit(x), y_odd), d.neg(mag), mag);
  r = d.sel(d.land(d.land(d.lt(x, d.c(0)), d.lt(ax, d.inf())), d.lnot(y_int)), d.nan(), r);
  r = d.sel(d.lor(d.isnan(x), d.isnan(y)), d.nan(), r);
  const UOp* one = d.lor(d.lor(d.eq(y, d.c(0)), d.eq(x, d.c(1))), d.land(d.eq(x, d.c(-1)), d.eq(d.abs(y), d.inf())));
  return d.sel(one, d.c(1), r);
}

// ---- the rewrite ------------------------------------------------------------------------------

bool f32_or_f64(DType d) { return !d.ptr && (d.scalar == Scalar::Float32 || d.scalar == Scalar::Float64); }

const UOp* decompose(const Match& mt) {
  Graph& g = mt.g;
  const UOp* u = mt.root;
  if (!f32_or_f64(u->dtype)) return nullptr;
  M m(g, u->dtype);
  M d(g, dtypes::float64.vec(u->dtype.lanes));
  auto in64 = [&](const UOp* v) { return m.f64 ? v : g.cast(v, d.ft); };
  auto out = [&](const UOp* v) { return m.f64 ? v : g.cast(v, u->dtype); };
  const UOp* x = u->src(0);
  switch (u->op) {
    case Op::Exp2:
      return exp2_core(m, x, nullptr);
    case Op::Log2:
      return log2_full(m, x);
    case Op::Sqrt:
      return sqrt_full(m, x);
    case Op::Sin:
      return out(sin_f64(d, in64(x), !m.f64));
    case Op::Pow:
      return out(pow_f64(d, in64(x), in64(u->src(1))));
    default:
      return nullptr;
  }
}

}  // namespace

const PatternMatcher& transcendental_rules() {
  static const PatternMatcher pm({
      {Pat::ops({Op::Exp2, Op::Log2, Op::Sin, Op::Sqrt, Op::Pow}),
       [](const Match& m) -> const UOp* {
         const auto& wanted = *static_cast<const std::span<const Op>*>(m.ctx);
         return std::find(wanted.begin(), wanted.end(), m.root->op) != wanted.end() ? decompose(m) : nullptr;
       },
       "transcendental"},
  });
  return pm;
}

const UOp* decompose_transcendentals(Graph& g, const UOp* sink, std::span<const Op> ops) {
  return graph_rewrite(g, sink, transcendental_rules(), &ops);
}

}  // namespace sn
