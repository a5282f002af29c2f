// The random tensor graphs of the differential fuzz test (test_fuzz_diff.cpp), shared with the tests
// that compile them for other targets (test_gpu_targets.cpp). See test_fuzz_diff.cpp for what the
// generator keeps defined.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tests/unit/test_pipeline_util.h"

namespace sn::testrt {

class GraphGen {
 public:
  // wide: some inputs get one long axis (32-80), so GPU kernels split reductions across work-groups.
  GraphGen(Graph& g, Rng& rng, oracle::BufferData& data, std::string device, bool wide)
      : g_(g), rng_(rng), data_(data), device_(std::move(device)), wide_(wide), side_(rng.s ^ 0x5bd1e995u) {}

  // A random graph; returns its outputs.
  std::vector<const UOp*> build() {
    DType dt = pick_dtype();
    std::vector<int64_t> shape = random_shape();
    const UOp* x = fresh(dt, shape);
    pool_.push_back(x);
    int steps = int(rng_.integer(2, 8));
    for (int s = 0; s < steps; s++) {
      x = step(x);
      pool_.push_back(x);
      // Some values are made Contiguous: later steps read it, and their partners from the pool may
      // be its source (the scheduler stores the source for both). Drawn from a second generator, so
      // each seed's graph is the one it was, with some values made Contiguous.
      if (side_.coin(0.15)) x = g_.make(Op::Contiguous, x->dtype, {x});
    }
    std::vector<const UOp*> outs{x};
    if (rng_.coin(0.2)) outs.push_back(pool_[size_t(rng_.integer(0, int64_t(pool_.size()) - 1))]);
    return outs;
  }

 private:
  Graph& g_;
  Rng& rng_;
  oracle::BufferData& data_;
  std::string device_;
  bool wide_;
  Rng side_;
  std::vector<const UOp*> pool_;

  DType pick_dtype() {
    static const std::vector<std::pair<DType, int>> weights = {
        {dtypes::float32, 30}, {dtypes::int32, 14}, {dtypes::float16, 7}, {dtypes::bfloat16, 4}, {dtypes::float64, 7},
        {dtypes::int8, 5},     {dtypes::uint8, 5},  {dtypes::int64, 6},   {dtypes::uint32, 5},   {dtypes::int16, 4},
        {dtypes::uint16, 3},   {dtypes::uint64, 3}, {dtypes::bool_, 7},   {dtypes::fp8e4m3, 3},  {dtypes::fp8e5m2, 3}};
    int total = 0;
    for (auto& [d, w] : weights) total += w;
    int r = int(rng_.integer(0, total - 1));
    for (auto& [d, w] : weights)
      if ((r -= w) < 0) return d;
    return dtypes::float32;
  }

  std::vector<int64_t> random_shape() {
    std::vector<int64_t> s(size_t(rng_.integer(1, 4)));
    for (auto& d : s) d = rng_.integer(1, s.size() > 2 ? 4 : 7);
    if (rng_.coin(0.02)) s[size_t(rng_.integer(0, int64_t(s.size()) - 1))] = 0;
    if (wide_ && rng_.coin(0.3)) s[size_t(rng_.integer(0, int64_t(s.size()) - 1))] = rng_.integer(32, 80);
    return s;
  }

  const UOp* fresh(DType dt, const std::vector<int64_t>& shape) {
    double lo = dt.is_unsigned() ? 0 : dt.is_float() ? -2 : -50;
    double hi = dt.is_float() ? 2 : 50;
    const int64_t n = numel(shape);
    Array a = random_array(rng_, dt, {n}, lo, hi);
    // Some values are constants of the program (Binary bytes), drawn from the second generator:
    // kernels that read them know whether every value is finite (core/schedule/finite.h), and a
    // third of the float ones hold an inf or a NaN.
    if (!dt.is_bool() && n > 0 && side_.coin(0.12)) {
      const bool ieee =
          dt == dtypes::float32 || dt == dtypes::float64 || dt == dtypes::float16 || dt == dtypes::bfloat16;
      if (ieee && side_.coin(0.3))
        a.f[size_t(side_.integer(0, n - 1))] = side_.coin(0.5) ? std::numeric_limits<double>::infinity() : std::nan("");
      std::vector<uint8_t> bytes = a.to_bytes();
      return reshape(g_, slice(g_, binary_data(g_, std::string(bytes.begin(), bytes.end())), 0, n, dt), shape);
    }
    const UOp* t = input(g_, dt, shape, device_);
    data_[buffer_of(t)] = std::move(a);
    return t;
  }

  const UOp* c(DType dt, double v) { return constant(g_, dt, v); }

  // x clamped into [lo, hi] (NaN stays NaN).
  const UOp* clamp(const UOp* x, double lo, double hi) {
    DType dt = x->dtype;
    const UOp* l = c(dt, lo);
    const UOp* h = c(dt, hi);
    return where(g_, cmplt(g_, x, l), l, where(g_, cmplt(g_, h, x), h, x));
  }

  // A second operand for x: something from the pool of the same dtype whose shape broadcasts with
  // x's to x's shape, a fresh input with some axes of size 1, or a constant.
  const UOp* partner(const UOp* x) {
    std::vector<int64_t> xs = static_shape(x);
    if (rng_.coin(0.4)) {
      std::vector<const UOp*> ok;
      for (const UOp* p : pool_) {
        if (p == x || p->dtype != x->dtype) continue;
        std::vector<int64_t> ps = static_shape(p);
        if (ps.size() > xs.size()) continue;
        bool fits = true;
        for (size_t k = 0; k < ps.size(); k++) {
          int64_t a = ps[ps.size() - 1 - k], b = xs[xs.size() - 1 - k];
          fits = fits && (a == b || a == 1);
        }
        if (fits) ok.push_back(p);
      }
      if (!ok.empty()) return ok[size_t(rng_.integer(0, int64_t(ok.size()) - 1))];
    }
    if (rng_.coin(0.15)) {
      if (x->dtype.is_bool()) return c(x->dtype, double(rng_.integer(0, 1)));
      return c(x->dtype, x->dtype.is_float() ? double(rng_.integer(-8, 8)) / 4 : double(rng_.integer(1, 9)));
    }
    std::vector<int64_t> ps = xs;
    for (auto& d : ps)
      if (rng_.coin(0.25)) d = 1;
    if (!ps.empty() && rng_.coin(0.2)) ps.erase(ps.begin());  // fewer dims: right-aligned broadcast
    return fresh(x->dtype, ps);
  }

  const UOp* step(const UOp* x) {
    switch (rng_.integer(0, 9)) {
      case 0:
      case 1:
        return unary_op(x);
      case 2:
      case 3:
      case 4:
        return binary_op(x);
      case 5:
        return where(g_, cmplt(g_, x, partner(x)), x, partner(x));
      case 6:
      case 7:
        return movement(x);
      case 8:
        return reduce_op(x);
      default:
        return cast_op(x);
    }
  }

  const UOp* unary_op(const UOp* x) {
    DType dt = x->dtype;
    if (dt.is_bool()) return logical_not(g_, x);
    if (!dt.is_float()) return rng_.coin() ? neg(g_, x) : unary(g_, Op::Trunc, x);
    switch (rng_.integer(0, 7)) {
      case 0:
        return neg(g_, x);
      case 1:
        return unary(g_, Op::Recip, x);
      case 2:
        return unary(g_, Op::Exp2, clamp(x, -12, 12));
      case 3:
        return unary(g_, Op::Log2, x);
      case 4:
        return unary(g_, Op::Sqrt, x);
      case 5:
        return unary(g_, Op::Sin, clamp(x, -10, 10));
      case 6:
        return unary(g_, Op::Trunc, clamp(x, -1000, 1000));
      default:
        return mul(g_, x, x);
    }
  }

  const UOp* binary_op(const UOp* x) {
    DType dt = x->dtype;
    const UOp* y = partner(x);
    if (dt.is_bool()) {
      static const Op ops[] = {Op::And, Op::Or, Op::Xor, Op::CmpNe, Op::CmpEq, Op::Max, Op::CmpLt};
      return binary(g_, ops[rng_.integer(0, 6)], x, y);
    }
    if (dt.is_float()) {
      switch (rng_.integer(0, 8)) {
        case 0:
          return add(g_, x, y);
        case 1:
          return sub(g_, x, y);
        case 2:
          return mul(g_, clamp(x, -100, 100), clamp(y, -100, 100));
        case 3:
          return divide(g_, x, y);
        case 4:
          return maximum(g_, x, y);
        case 5:
          return binary(g_, Op::Pow, clamp(x, 0.25, 8), clamp(y, -3, 3));
        case 6:
          return cmplt(g_, x, y);
        case 7:
          return cmpne(g_, x, y);
        default:
          return cmpge(g_, x, y);
      }
    }
    switch (rng_.integer(0, 11)) {
      case 0:
        return add(g_, x, y);
      case 1:
        return sub(g_, x, y);
      case 2:
        return mul(g_, x, y);
      case 3:
        return maximum(g_, x, y);
      case 4:  // divisor in [1, 8]: never 0, never -1
        return idiv(g_, x, add(g_, bitwise_and(g_, y, c(dt, 7)), c(dt, 1)));
      case 5:
        return mod(g_, x, add(g_, bitwise_and(g_, y, c(dt, 7)), c(dt, 1)));
      case 6:
        return bitwise_and(g_, x, y);
      case 7:
        return bitwise_or(g_, x, y);
      case 8:
        return bitwise_xor(g_, x, y);
      case 9:
        return shl(g_, x, bitwise_and(g_, y, c(dt, dt.bits() - 1)));
      case 10:
        return shr(g_, x, bitwise_and(g_, y, c(dt, dt.bits() - 1)));
      default:
        return cmple(g_, x, y);
    }
  }

  const UOp* movement(const UOp* x) {
    std::vector<int64_t> s = static_shape(x);
    size_t r = s.size();
    int which = int(rng_.integer(0, 5));
    if (r == 0) which = 4;
    switch (which) {
      case 0: {
        std::vector<int64_t> order(r);
        for (size_t k = 0; k < r; k++) order[k] = int64_t(k);
        for (size_t k = r; k > 1; k--) std::swap(order[k - 1], order[size_t(rng_.integer(0, int64_t(k) - 1))]);
        return permute(g_, x, order);
      }
      case 1: {
        std::vector<int64_t> flags(r);
        for (auto& f : flags) f = rng_.integer(0, 1);
        return flip(g_, x, flags);
      }
      case 2: {
        std::vector<int64_t> off(r), size(r);
        for (size_t k = 0; k < r; k++) {
          off[k] = s[k] ? rng_.integer(0, s[k] - 1) : 0;
          size[k] = s[k] ? rng_.integer(s[k] > 1 ? 1 : 0, s[k] - off[k]) : 0;
        }
        return shrink(g_, x, off, size);
      }
      case 3: {
        std::vector<int64_t> off(r), size(r);
        for (size_t k = 0; k < r; k++) {
          off[k] = s[k] < 6 ? rng_.integer(0, 2) : 0;
          size[k] = s[k] + off[k] + (s[k] < 6 ? rng_.integer(0, 2) : 0);
        }
        return pad(g_, x, off, size);
      }
      case 4: {  // reshape: split the element count into 1-4 random factors (or insert a 1 axis)
        int64_t n = numel(s);
        std::vector<int64_t> primes;
        for (int64_t m = n, p = 2; m > 1; p++)
          while (m % p == 0) primes.push_back(p), m /= p;
        std::vector<int64_t> ns(size_t(rng_.integer(1, 4)), 1);
        for (int64_t p : primes) ns[size_t(rng_.integer(0, int64_t(ns.size()) - 1))] *= p;
        if (n == 0) ns[0] = 0;
        return reshape(g_, x, ns);
      }
      default: {  // expand an axis of size 1 (adding one when there is none)
        std::vector<size_t> ones;
        for (size_t k = 0; k < r; k++)
          if (s[k] == 1) ones.push_back(k);
        if (ones.empty()) {
          if (r >= 4) return permute(g_, x, {3, 2, 1, 0});
          size_t at = size_t(rng_.integer(0, int64_t(r)));
          s.insert(s.begin() + int64_t(at), 1);
          x = reshape(g_, x, s);
          ones.push_back(at);
        }
        s[ones[size_t(rng_.integer(0, int64_t(ones.size()) - 1))]] = rng_.integer(2, 4);
        return expand(g_, x, s);
      }
    }
  }

  const UOp* reduce_op(const UOp* x) {
    std::vector<int64_t> s = static_shape(x);
    if (s.empty()) return unary_op(x);
    std::vector<int64_t> axes;
    for (size_t k = 0; k < s.size(); k++)
      if (rng_.coin(0.5)) axes.push_back(int64_t(k));
    if (axes.empty()) axes.push_back(rng_.integer(0, int64_t(s.size()) - 1));
    Op op = x->dtype.is_bool() ? Op::Max : rng_.coin(0.55) ? Op::Add : rng_.coin(0.8) ? Op::Max : Op::Mul;
    if (op == Op::Mul && x->dtype.is_float()) x = clamp(x, -1.5, 1.5);
    const UOp* r = reduce(g_, x, op, axes);
    // Sometimes drop the reduced axes, or broadcast the result back against its input.
    if (rng_.coin(0.3)) {
      std::vector<int64_t> kept;
      for (size_t k = 0; k < s.size(); k++)
        if (std::find(axes.begin(), axes.end(), int64_t(k)) == axes.end()) kept.push_back(s[k]);
      return reshape(g_, r, kept);
    }
    if (rng_.coin(0.3) && !x->dtype.is_bool()) return sub(g_, x, r);
    return r;
  }

  const UOp* cast_op(const UOp* x) {
    DType from = x->dtype, to = pick_dtype();
    if (to == from) to = from.is_float() ? dtypes::int32 : dtypes::float32;
    if (from.is_float() && (to.is_int())) {
      // Inside the target's range and integral-safe: NaN -> 0, clamp to a range every int holds.
      double lo = to.is_unsigned() ? 0 : -120, hi = 120;
      const UOp* safe = where(g_, cmpne(g_, x, x), c(from, 0), clamp(x, lo, hi));
      return cast(g_, safe, to);
    }
    return cast(g_, x, to);
  }
};

}  // namespace sn::testrt
