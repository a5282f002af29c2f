#include "core/tensor/compose.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "core/tensor/tensor.h"
#include "core/util/checked.h"

namespace sn {

namespace {

using Dims = std::vector<int64_t>;

using sn::dims_str;  // tensor.h's

template <size_t N>
std::string dims_str(const std::array<int64_t, N>& a) {
  return sn::dims_str(Dims(a.begin(), a.end()));
}

// A possibly negative axis of a rank-`rank` shape as 0..rank-1.
int64_t norm_axis(const char* op, int64_t axis, const Dims& shape) {
  int64_t rank = int64_t(shape.size());
  if (axis < -rank || axis >= rank)
    fail(Code::InvalidArg, op, ": axis ", axis, " is out of range for shape ", dims_str(shape), " (rank ", rank, ")");
  return axis < 0 ? axis + rank : axis;
}

// The same for a shape with symbolic dims (only its rank matters).
int64_t norm_axis(const char* op, int64_t axis, const Shape& shape) {
  int64_t rank = int64_t(shape.size());
  if (axis < -rank || axis >= rank)
    fail(Code::InvalidArg, op, ": axis ", axis, " is out of range for shape ", shape_str(shape), " (rank ", rank, ")");
  return axis < 0 ? axis + rank : axis;
}

void need_float(const char* op, const UOp* x) {
  if (!x->dtype.is_float()) fail(Code::InvalidArg, op, ": needs a float dtype, got ", x->dtype.name());
}

void need_numeric(const char* op, const UOp* x) {
  if (x->dtype.is_bool()) fail(Code::InvalidArg, op, ": needs a numeric (non-bool) dtype, got bool");
}

void need_int(const char* op, const char* what, const UOp* x) {
  if (!x->dtype.is_int()) fail(Code::InvalidArg, op, ": ", what, " needs an integer dtype, got ", x->dtype.name());
}

void need_same_dtype(const char* op, const char* what, const UOp* x, DType dt) {
  if (x->dtype != dt) fail(Code::InvalidArg, op, ": ", what, " must be ", dt.name(), ", got ", x->dtype.name());
}

const UOp* scalar(Graph& g, DType dt, double v) { return constant(g, dt, v); }

const UOp* sum(Graph& g, const UOp* x, const Dims& axes) { return reduce(g, x, Op::Add, axes); }

// shape with `value` inserted before position `at`.
Shape inserted(Shape shape, size_t at, int64_t value) {
  shape.insert(shape.begin() + int64_t(at), Dim::of(value));
  return shape;
}

// shape without position `at`.
Shape removed(Shape shape, size_t at) {
  shape.erase(shape.begin() + int64_t(at));
  return shape;
}

// A tensor of `dt` equal to `v` everywhere in `shape` (a constant broadcast with Reshape + Expand).
const UOp* full(Graph& g, DType dt, double v, const Dims& shape) {
  const UOp* c = reshape(g, scalar(g, dt, v), Dims(shape.size(), 1));
  return expand(g, c, shape);
}

// Order that moves `axis` to the end, and its inverse.
Dims axis_to_last(size_t rank, size_t axis) {
  Dims order;
  for (size_t k = 0; k < rank; k++)
    if (k != axis) order.push_back(int64_t(k));
  order.push_back(int64_t(axis));
  return order;
}

Dims inverse(const Dims& order) {
  Dims inv(order.size());
  for (size_t k = 0; k < order.size(); k++) inv[size_t(order[k])] = int64_t(k);
  return inv;
}

// Pad or Shrink (op) to `to` at `offsets`, where every symbolic axis of x passes through
// unchanged (offset 0, the same dim): the window and pool helpers move only constant axes.
const UOp* move_sym(Graph& g, Op op, const UOp* x, const Dims& offsets, const Shape& to) {
  const char* name = op == Op::Pad ? "pad" : "shrink";
  const Shape& old = sym_shape(x, name);
  Dims sizes;  // pad and shrink write a symbolic axis kept whole as size -1
  for (size_t k = 0; k < to.size(); k++) {
    if (!to[k].is_const() && (k >= old.size() || !(old[k] == to[k])))
      fail(Code::Unsupported, name, ": axis ", k, " of ", shape_str(old), " cannot become ", shape_str(to),
           "; only constant axes can be padded or shrunk");
    sizes.push_back(to[k].is_const() ? to[k].value : -1);
  }
  return op == Op::Pad ? pad(g, x, offsets, sizes) : shrink(g, x, offsets, sizes);
}

// The constant value of dim k of a shape whose other dims may be symbolic.
int64_t const_dim(const char* op, const Shape& s, size_t k) {
  if (!s[k].is_const()) fail(Code::Unsupported, op, ": axis ", k, " of ", shape_str(s), " must not be symbolic");
  return s[k].value;
}

// Inclusive prefix sum along the last axis with the spec's window trick: pad n-1 zeros in front,
// tile the row n+1 times, and cut the flat tiling into rows of 2n: row i then starts i elements
// later in the padded row (2n = (2n-1) + 1), so its first n entries are n-1-i zeros and x[0..i].
// O(n) work per element: for short rows only (prefix_sum_last blocks longer ones).
const UOp* window_prefix_sum_last(Graph& g, const UOp* x) {
  // The leading axes may be symbolic (a batch of rows): each stays its own axis through every step.
  const Shape& s = sym_shape(x, "cumsum");
  int64_t n = const_dim("cumsum", s, s.size() - 1);
  if (n == 0) return x;
  Shape pre(s.begin(), s.end() - 1);
  auto with = [&](std::initializer_list<int64_t> tail) {
    Shape d = pre;
    for (int64_t t : tail) d.push_back(Dim::of(t));
    return d;
  };
  Dims zeros(s.size(), 0);
  Dims off = zeros;
  off.back() = n - 1;
  // The tiling has (n+1)(2n-1) elements per row: past about 2^31 that no longer fits int64.
  int64_t n2 = checked_mul(n, 2, "cumsum: axis of ", n, " elements: window");
  int64_t tiled = checked_mul(n + 1, n2 - 1, "cumsum: axis of ", n, " elements: window tiling");
  int64_t rows = checked_mul(n, n2, "cumsum: axis of ", n, " elements: window rows");
  Dims largest;
  for (const Dim& d : pre) largest.push_back(d.is_const() ? d.value : int64_t(d.sym->minmax().hi));
  largest.push_back(tiled);
  (void)checked_numel(largest, "cumsum: axis of ", n, " elements: window tiling of ", s.size(), "-d input");
  const UOp* t = move_sym(g, Op::Pad, x, off, with({n2 - 1}));
  t = reshape_sym(g, t, with({1, n2 - 1}));
  t = expand_sym(g, t, with({n + 1, n2 - 1}));
  t = reshape_sym(g, t, with({tiled}));
  t = move_sym(g, Op::Shrink, t, zeros, with({rows}));
  t = reshape_sym(g, t, with({n, n2}));
  t = move_sym(g, Op::Shrink, t, Dims(s.size() + 1, 0), with({n, n}));
  t = sum(g, t, {int64_t(s.size())});
  return reshape_sym(g, t, s);
}

// Rows up to this long take the window form directly; longer ones are scanned in blocks.
constexpr int64_t kScanDirect = 16;
// The window form costs b adds per element inside a block of b, and the last kernel of a level touches every
// element of it: levels of many elements take blocks of 4 (a quarter of the adds of 16: 1,000,000 f32 ran ~2.5x
// faster), small ones blocks of 16 (fewer levels, so fewer kernels to compile and launch).
constexpr int64_t kScanSmallBlock = 4, kScanLargeBlock = 16;
constexpr int64_t kScanManyElements = int64_t(1) << 14;

// Inclusive prefix sum along the last axis: cut the row into blocks of b (the tail padded with zeros), scan inside
// each block with the window form, scan the blocks' totals the same way (recursively: log_4 levels while they are
// large, log_16 after), and add to each block the total of the blocks before it. Each level is b times smaller
// than the one below, so the work is O(b n) in all; each level costs two kernels (its blocks' totals, and its
// scan: the carries materialized for the level below, or the output): 1,000,000 elements take 6 levels, 12 kernels.
const UOp* prefix_sum_last(Graph& g, const UOp* x) {
  const Shape& s = sym_shape(x, "cumsum");
  const int64_t n = const_dim("cumsum", s, s.size() - 1);
  if (n <= kScanDirect) return window_prefix_sum_last(g, x);
  Dims largest;
  for (const Dim& d : s) largest.push_back(d.is_const() ? d.value : int64_t(d.sym->minmax().hi));
  const int64_t b = numel(largest, "cumsum") > kScanManyElements ? kScanSmallBlock : kScanLargeBlock;
  const size_t last = s.size() - 1;
  Shape pre(s.begin(), s.end() - 1);
  auto with = [&](std::initializer_list<int64_t> tail) {
    Shape d = pre;
    for (int64_t t : tail) d.push_back(Dim::of(t));
    return d;
  };
  const int64_t m = (n - 1) / b + 1;  // blocks: ceil(n / b) without n + b - 1, which can overflow
  const int64_t padded = checked_mul(m, b, "cumsum: axis of ", n, " elements: ", m, " blocks of ", b);
  // The in-block window tiles (b+1)(2b-1) elements per block: the most any level holds.
  largest.back() = checked_mul(m, (b + 1) * (2 * b - 1), "cumsum: axis of ", n, " elements");
  (void)checked_numel(largest, "cumsum: axis of ", n, " elements: scan in blocks of ", b, " (", s.size(), "-d input)");
  const UOp* blocks = reshape_sym(g, move_sym(g, Op::Pad, x, Dims(s.size(), 0), with({padded})), with({m, b}));
  const UOp* within = window_prefix_sum_last(g, blocks);
  const UOp* totals = reshape_sym(g, sum(g, blocks, {int64_t(last + 1)}), with({m}));
  // Exclusive scan of the totals: the inclusive one shifted right by one block (exact, unlike subtracting).
  Dims shift(s.size(), 0);
  shift.back() = 1;
  const UOp* before = move_sym(g, Op::Shrink, move_sym(g, Op::Pad, prefix_sum_last(g, totals), shift, with({m + 1})),
                               Dims(s.size(), 0), with({m}));
  // Materialized (m values, b times fewer than the row): else every element would recompute every level's scan.
  before = g.make(Op::Contiguous, before->dtype, {before});
  const UOp* out = add(g, within, expand_sym(g, reshape_sym(g, before, with({m, 1})), with({m, b})));
  return move_sym(g, Op::Shrink, reshape_sym(g, out, with({padded})), Dims(s.size(), 0), s);
}

// [0, n) in the integer dtype `dt` (which must hold a few more than n values; see arange).
const UOp* arange_int(Graph& g, int64_t n, DType dt) {
  // Up to here the spec's quadratic prefix sum is cheap; past it the index splits as q*b + r.
  constexpr int64_t kDirect = 64;
  if (n <= kDirect) {
    const UOp* ones = full(g, dt, 1, {n});
    return add(g, window_prefix_sum_last(g, ones), scalar(g, dt, -1));
  }
  int64_t b = int64_t(std::ceil(std::sqrt(double(n))));
  int64_t a = (n - 1) / b + 1;  // ceil(n / b) without n + b - 1, which can overflow
  int64_t cells = checked_mul(a, b, "arange: ", n, " values: grid of ", a, " x ", b);
  const UOp* hi = mul(g, reshape(g, arange_int(g, a, dt), {a, 1}), scalar(g, dt, double(b)));
  const UOp* lo = reshape(g, arange_int(g, b, dt), {1, b});
  const UOp* grid = reshape(g, add(g, hi, lo), {cells});
  return shrink(g, grid, {0}, {n});
}

// The integer dtype index comparisons use: int32 unless the indices or the range need 64 bits.
DType compare_dtype(DType idx, int64_t n) {
  constexpr int64_t kInt32Safe = (int64_t(1) << 31) - (int64_t(1) << 17);  // room for arange's grid
  return idx.bits() == 64 || n > kInt32Safe ? dtypes::int64 : dtypes::int32;
}

// Shapes of x with its axis `axis` replaced by other axes (window_axis's steps).
struct AroundAxis {
  Shape pre, post;
  AroundAxis(const Shape& shape, size_t axis)
      : pre(shape.begin(), shape.begin() + int64_t(axis)), post(shape.begin() + int64_t(axis) + 1, shape.end()) {}
  Shape with(std::initializer_list<int64_t> mid) const {
    Shape r = pre;
    for (int64_t m : mid) r.push_back(Dim::of(m));
    r.insert(r.end(), post.begin(), post.end());
    return r;
  }
};

// The (..., I_axis, ...) axis of x from `start` cut into O rows of s, each row's first k <= s
// elements: (..., O, k, ...), element (o, kk) being x[start + o*s + kk]. A tail past I is padded
// (never read where the rows fit the windows that use them).
const UOp* row_heads(Graph& g, const UOp* x, size_t axis, int64_t start, int64_t o, int64_t s, int64_t k) {
  const Shape& shape = sym_shape(x);
  const AroundAxis around(shape, axis);
  const int64_t len = const_dim("window", shape, axis);
  const int64_t os = checked_mul(o, s, "window: ", o, " windows of stride ", s);
  const int64_t end = checked_add(start, os, "window: rows' end");
  const UOp* t = x;
  if (end > len) t = move_sym(g, Op::Pad, t, Dims(shape.size(), 0), around.with({end}));
  if (start > 0 || end < len) {
    Dims at(shape.size(), 0);
    at[axis] = start;
    t = move_sym(g, Op::Shrink, t, at, around.with({os}));
  }
  t = reshape_sym(g, t, around.with({o, s}));
  if (k < s) t = move_sym(g, Op::Shrink, t, Dims(shape.size() + 1, 0), around.with({o, k}));
  return t;
}

// The (..., I_axis, ...) axis of x split into (k, O) windows: element (kk, o) is
// x[o*s + kk*d] along that axis. The axis is tiled e times and cut into rows of I'+d, so that row
// kk starts kk*d elements later (mod I'); I' >= I (zero tail, never read) makes O*s fit in a row.
const UOp* window_axis(Graph& g, const UOp* x, size_t axis, int64_t k, int64_t s, int64_t d, int64_t o) {
  const Shape& shape = sym_shape(x);
  int64_t len = const_dim("window", shape, axis);
  int64_t os = checked_mul(o, s, "window: ", o, " windows of stride ", s);
  int64_t padded = std::max(len, os - d);
  const AroundAxis around(shape, axis);
  auto with = [&](std::initializer_list<int64_t> mid) { return around.with(mid); };
  const UOp* t = x;
  // Windows that do not overlap (a 2x2 pool of stride 2): the axis cut into O rows of s, each
  // row's first k elements, with no tiling. Their gradient is then a pad and a reshape, one plain
  // elementwise kernel; through the tiles it was a sum over them whose indexes were remainders and
  // quotients of the tiled row (a small CNN's training step: its two pools' gradients took 0.38
  // of its 0.65 ms).
  if (d == 1 && k <= s) {
    t = row_heads(g, x, axis, 0, o, s, k);
    std::vector<int64_t> order(shape.size() + 1);
    for (size_t a = 0; a < order.size(); a++) order[a] = int64_t(a);
    std::swap(order[axis], order[axis + 1]);
    return permute(g, t, order);
  }
  if (padded > len) t = move_sym(g, Op::Pad, t, Dims(shape.size(), 0), with({padded}));
  int64_t row = checked_add(padded, d, "window: row of ", padded, " elements + dilation");
  int64_t span = checked_mul(k, row, "window: ", k, " kernel taps of rows of ", row);
  int64_t tiles = (span - 1) / padded + 1;  // ceil(span / padded) without overflowing
  int64_t tiled = checked_mul(tiles, padded, "window: ", tiles, " tiles of ", padded);
  t = reshape_sym(g, t, with({1, padded}));
  t = expand_sym(g, t, with({tiles, padded}));
  t = reshape_sym(g, t, with({tiled}));
  t = move_sym(g, Op::Shrink, t, Dims(shape.size(), 0), with({span}));
  t = reshape_sym(g, t, with({k, row}));
  t = move_sym(g, Op::Shrink, t, Dims(shape.size() + 1, 0), with({k, os}));
  t = reshape_sym(g, t, with({k, o, s}));
  t = move_sym(g, Op::Shrink, t, Dims(shape.size() + 2, 0), with({k, o, 1}));
  return reshape_sym(g, t, with({k, o}));
}

// The same (k, O) windows as k strided views stacked, tap kk being x[o*s + kk*d] for o < O (a cut
// of the axis into O rows of s, each row's first element). For pools, whose windows are unrolled
// whole: each unrolled tap then reads its own view, one load. The gradient is k padded views
// summed elementwise, where through window_axis's tiles it was a sum over the tiles whose indexes
// are remainders and quotients of the tiled row (ResNet-18's 3x3 stride-2 max pool: 10.8 ms of its
// 78 ms training step). A convolution's taps are loops, which would load every view at every step.
const UOp* window_axis_taps(Graph& g, const UOp* x, size_t axis, int64_t k, int64_t s, int64_t d, int64_t o) {
  const AroundAxis around(sym_shape(x), axis);
  std::vector<const UOp*> taps;
  for (int64_t kk = 0; kk < k; kk++)
    taps.push_back(
        reshape_sym(g, row_heads(g, x, axis, checked_mul(kk, d, "window: tap offset"), o, s, 1), around.with({1, o})));
  return concat(g, taps, int64_t(axis));
}

// Output size of a window: floor((len - d*(k-1) - 1) / s) + 1; throws when no window fits.
int64_t window_count(const char* op, int64_t len, int64_t k, int64_t s, int64_t d, const char* axis_name) {
  int64_t span = checked_add(checked_mul(d, k - 1, op, ": dilation x (kernel - 1) along ", axis_name), 1, op, ": span");
  if (len < span)
    fail(Code::InvalidArg, op, ": the kernel spans ", span, " elements along ", axis_name,
         " but the (padded) input has ", len);
  return (len - span) / s + 1;
}

// Sliding windows over the last two axes: (..., H, W) -> (..., OH, OW, KH, KW).
// taps: as stacked views (window_axis_taps), for windows unrolled whole (pools).
const UOp* windows2d(Graph& g, const char* op, const UOp* x, std::array<int64_t, 2> k, std::array<int64_t, 2> s,
                     std::array<int64_t, 2> d, bool taps = false) {
  const Shape& shape = sym_shape(x);
  size_t b = shape.size() - 2;
  int64_t oh = window_count(op, const_dim(op, shape, b), k[0], s[0], d[0], "H");
  int64_t ow = window_count(op, const_dim(op, shape, b + 1), k[1], s[1], d[1], "W");
  auto axis_windows = [&](const UOp* t, size_t a, int i, int64_t o) {
    return taps && !(d[i] == 1 && k[i] <= s[i]) ? window_axis_taps(g, t, a, k[i], s[i], d[i], o)
                                                : window_axis(g, t, a, k[i], s[i], d[i], o);
  };
  const UOp* t = axis_windows(x, b, 0, oh);  // (..., KH, OH, W)
  t = axis_windows(t, b + 2, 1, ow);         // (..., KH, OH, KW, OW)
  Dims order;
  for (size_t a = 0; a < b; a++) order.push_back(int64_t(a));
  for (size_t a : {b + 1, b + 3, b, b + 2}) order.push_back(int64_t(a));
  return permute(g, t, order);
}

void check_positive(const char* op, const char* what, std::array<int64_t, 2> v) {
  if (v[0] < 1 || v[1] < 1) fail(Code::InvalidArg, op, ": ", what, " must be >= 1, got ", dims_str(v));
}

void check_pool_args(const char* op, const Shape& shape, std::array<int64_t, 2> k, std::array<int64_t, 2> s,
                     std::array<int64_t, 2> p) {
  if (shape.size() < 2) fail(Code::InvalidArg, op, ": needs at least 2 axes (..., H, W), got shape ", shape_str(shape));
  check_positive(op, "kernel", k);
  check_positive(op, "stride", s);
  for (int a = 0; a < 2; a++)
    if (p[a] < 0 || p[a] > k[a] / 2)  // 2p > k without overflowing
      fail(Code::InvalidArg, op, ": padding ", dims_str(p), " must be >= 0 and at most half the kernel ", dims_str(k));
}

// x padded by p[0] rows and p[1] columns on both sides of its last two axes, with `fill` (a shape-()
// tensor, or nullptr for zeros) in the border.
const UOp* pad2d(Graph& g, const UOp* x, std::array<int64_t, 2> p, const UOp* fill) {
  if (p[0] == 0 && p[1] == 0) return x;
  const Shape& shape = sym_shape(x);
  Dims off(shape.size(), 0);
  Shape big = shape;
  size_t b = shape.size() - 2;
  int64_t h = const_dim("pad2d", shape, b), w = const_dim("pad2d", shape, b + 1);
  off[b] = p[0];
  off[b + 1] = p[1];
  int64_t bh = checked_add(h, checked_mul(p[0], 2, "pad2d: padding"), "pad2d: padded H");
  int64_t bw = checked_add(w, checked_mul(p[1], 2, "pad2d: padding"), "pad2d: padded W");
  big[b] = Dim::of(bh);
  big[b + 1] = Dim::of(bw);
  const UOp* t = move_sym(g, Op::Pad, x, off, big);
  if (fill == nullptr) return t;
  // inside = true exactly where x was placed (Pad fills bool with false)
  const UOp* inside = full(g, dtypes::bool_, 1, {h, w});
  inside = pad(g, inside, {p[0], p[1]}, {bh, bw});
  return where(g, inside, t, fill);
}

// 32-bit rotate left of a uint32 tensor.
const UOp* rotl32(Graph& g, const UOp* x, int r) {
  return bitwise_or(g, shl(g, x, constant_int(g, dtypes::uint32, r)),
                    shr(g, x, constant_int(g, dtypes::uint32, 32 - r)));
}

// The seed's two 32-bit key words.
std::pair<const UOp*, const UOp*> seed_key(Graph& g, const char* op, const UOp* seed) {
  Dims s = static_shape(seed, op);
  if (!s.empty()) fail(Code::InvalidArg, op, ": seed must have shape (), got ", dims_str(s));
  need_same_dtype(op, "seed", seed, dtypes::uint64);
  const UOp* k0 = cast(g, seed, dtypes::uint32);  // integer casts wrap: the low word
  const UOp* k1 = cast(g, shr(g, seed, constant_int(g, dtypes::uint64, 32)), dtypes::uint32);
  return {k0, k1};
}

// Threefry words of every element of `shape`: counter (i, 0) for row-major element i.
std::pair<const UOp*, const UOp*> random_words(Graph& g, const char* op, const Dims& shape, const UOp* seed) {
  for (int64_t d : shape)
    if (d < 0) fail(Code::InvalidArg, op, ": shape ", dims_str(shape), " has a negative dim");
  int64_t n = numel(shape, op);
  if (n > (int64_t(1) << 32))
    fail(Code::InvalidArg, op, ": ", n, " elements exceed the 2^32 counters of one Threefry stream");
  auto [k0, k1] = seed_key(g, op, seed);
  const UOp* counter = reshape(g, arange(g, n, dtypes::uint32), shape);
  return threefry2x32(g, counter, constant_int(g, dtypes::uint32, 0), k0, k1);
}

// Top `bits` bits of uint32 words as a fraction in [0, 1) of float dtype `dt` (exact).
const UOp* word_fraction(Graph& g, const UOp* w, int bits, DType dt) {
  const UOp* top = bits == 32 ? w : shr(g, w, constant_int(g, dtypes::uint32, 32 - bits));
  return mul(g, cast(g, top, dt), scalar(g, dt, std::ldexp(1.0, -bits)));
}

const UOp* seed_constant(Graph& g, uint64_t seed) { return constant_int(g, dtypes::uint64, i128(seed)); }

}  // namespace

// ---- linear algebra -------------------------------------------------------------------------

const UOp* gemm(Graph& g, const UOp* a, const UOp* b) {
  const Shape &sa = sym_shape(a, "gemm"), &sb = sym_shape(b, "gemm");
  if (sa.size() != 2 || sb.size() != 2)
    fail(Code::InvalidArg, "gemm: needs (M,K) and (K,N) matrices, got ", shape_str(sa), " and ", shape_str(sb));
  return matmul(g, a, b);
}

const UOp* matmul(Graph& g, const UOp* a, const UOp* b) {
  const Shape &sa = sym_shape(a, "matmul"), &sb = sym_shape(b, "matmul");
  if (sa.size() < 2 || sb.size() < 2)
    fail(Code::InvalidArg, "matmul: operands need rank >= 2, got ", shape_str(sa), " and ", shape_str(sb));
  need_numeric("matmul", a);
  need_same_dtype("matmul", "b", b, a->dtype);
  Dim m = sa[sa.size() - 2], k = sa.back(), kb = sb[sb.size() - 2], n = sb.back();
  // A symbolic contraction would need a reduce whose length is a variable inside the packed
  // matmul paths; the rows (M), the columns (N) and batch dims may be symbolic.
  if (!k.is_const() || !kb.is_const())
    fail(Code::Unsupported, "matmul: the contraction dim of ", shape_str(sa), " @ ", shape_str(sb),
         " is symbolic; only batch, row and column dims may be");
  if (k.value != kb.value)
    fail(Code::InvalidArg, "matmul: inner dims differ: ", shape_str(sa), " @ ", shape_str(sb), " (", k.value, " vs ",
         kb.value, ")");
  Shape batch = broadcast_sym("matmul", Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2));
  // (..., M, K, 1) * (..., 1, K, N) summed over K: the spec's gemm with batch dims in front
  Shape ra(sa.begin(), sa.end() - 2), rb(sb.begin(), sb.end() - 2);
  ra.insert(ra.end(), {m, k, Dim::of(1)});
  rb.insert(rb.end(), {Dim::of(1), k, n});
  const UOp* prod = mul(g, reshape_sym(g, a, ra), reshape_sym(g, b, rb));
  int64_t kaxis = int64_t(sym_shape(prod).size()) - 2;
  Shape out = batch;
  out.insert(out.end(), {m, n});
  return reshape_sym(g, sum(g, prod, {kaxis}), out);
}

// ---- scans and index sources ----------------------------------------------------------------

const UOp* prefix_sum(Graph& g, const UOp* x) {
  Dims s = static_shape(x, "prefix_sum");
  if (s.size() != 1) fail(Code::InvalidArg, "prefix_sum: needs a 1-D tensor, got shape ", dims_str(s));
  need_numeric("prefix_sum", x);
  return prefix_sum_last(g, x);
}

const UOp* cumsum(Graph& g, const UOp* x, int64_t axis) {
  const Shape& s = sym_shape(x, "cumsum");  // the scanned axis is constant; the others may be symbolic
  need_numeric("cumsum", x);
  if (s.empty()) {
    norm_axis("cumsum", axis, Dims{1});  // a scalar has one axis to name, like PyTorch
    return x;
  }
  size_t a = size_t(norm_axis("cumsum", axis, s));
  Dims order = axis_to_last(s.size(), a);
  const UOp* t = prefix_sum_last(g, permute(g, x, order));
  return permute(g, t, inverse(order));
}

const UOp* arange(Graph& g, int64_t n, DType dtype) {
  if (n < 0) fail(Code::InvalidArg, "arange: n must be >= 0, got ", n);
  if (dtype.ptr || dtype.lanes != 1 || dtype.is_void() || dtype.is_index())
    fail(Code::InvalidArg, "arange: needs a scalar bool, integer or float dtype, got ", dtype.name());
  if (n > 0) {
    bool fits = dtype.is_float() ? double(n - 1) <= dtype.float_max() : i128(n - 1) <= dtype.int_max();
    if (!fits) fail(Code::InvalidArg, "arange: ", n, " values do not fit ", dtype.name());
  }
  DType idt = compare_dtype(dtypes::int32, n);
  return cast(g, arange_int(g, n, idt), dtype);
}

// ---- indexing -------------------------------------------------------------------------------

const UOp* one_hot(Graph& g, const UOp* idx, int64_t n, DType dtype) {
  const Shape& s = sym_shape(idx, "one_hot");  // idx's dims may be symbolic (a batch of labels)
  need_int("one_hot", "idx", idx);
  if (n < 0) fail(Code::InvalidArg, "one_hot: n must be >= 0, got ", n);
  DType ct = compare_dtype(idx->dtype, n);
  const UOp* col = reshape_sym(g, cast(g, idx, ct), inserted(s, s.size(), 1));
  const UOp* hit = cmpeq(g, col, arange_int(g, n, ct));  // (..., 1) vs (n,) -> (..., n)
  return cast(g, hit, dtype);
}

namespace {

// Off `axis`, idx's dims must fit in x's (gather, scatter_add) or val's (scatter_add): a constant dim
// at most the other, a symbolic dim the same dim.
void check_fits(const char* op, const char* what, const Shape& si, const char* other, const Shape& so, size_t axis) {
  for (size_t d = 0; d < si.size(); d++) {
    if (d == axis) continue;
    bool fits = si[d].is_const() && so[d].is_const() ? si[d].value <= so[d].value : si[d] == so[d];
    if (!fits)
      fail(Code::InvalidArg, op, ": ", what, " ", shape_str(si), " is larger than ", other, " ", shape_str(so),
           " on axis ", d, " (a symbolic dim must be the same dim in both)");
  }
}

}  // namespace

const UOp* gather(Graph& g, const UOp* x, int64_t axis, const UOp* idx) {
  // Any dim but x's gathered one may be symbolic (a batch): each stays its own axis.
  const Shape &sx = sym_shape(x, "gather"), &si = sym_shape(idx, "gather");
  need_int("gather", "idx", idx);
  if (sx.empty()) fail(Code::InvalidArg, "gather: x needs rank >= 1, got shape ()");
  size_t a = size_t(norm_axis("gather", axis, sx));
  if (si.size() != sx.size())
    fail(Code::InvalidArg, "gather: idx needs x's rank: x ", shape_str(sx), ", idx ", shape_str(si));
  check_fits("gather", "idx", si, "x", sx, a);
  int64_t k = const_dim("gather", sx, a);
  DType ct = compare_dtype(idx->dtype, k);
  // x restricted to idx's extent off the axis, with a new axis for idx's positions on the axis:
  // (pre, 1, K, post) against idx (pre, D, 1, post) and positions (1.., 1, K, 1..)
  Shape sizes = si;
  sizes[a] = Dim::of(k);
  const UOp* xv = reshape_sym(g, move_sym(g, Op::Shrink, x, Dims(sx.size(), 0), sizes), inserted(sizes, a, 1));
  const UOp* iv = reshape_sym(g, cast(g, idx, ct), inserted(si, a + 1, 1));
  Dims pos_shape(sx.size() + 1, 1);
  pos_shape[a + 1] = k;
  const UOp* pos = reshape(g, arange_int(g, k, ct), pos_shape);
  const UOp* picked = where(g, cmpeq(g, iv, pos), xv, scalar(g, x->dtype, 0));
  return reshape_sym(g, sum(g, picked, {int64_t(a) + 1}), si);
}

const UOp* take(Graph& g, const UOp* x, const UOp* idx, int64_t axis) {
  // idx's dims may be symbolic (a variable number of token ids); x's are constant.
  Dims sx = static_shape(x, "take");
  const Shape& si = sym_shape(idx, "take");
  need_int("take", "idx", idx);
  if (sx.empty()) fail(Code::InvalidArg, "take: x needs rank >= 1, got shape ()");
  size_t a = size_t(norm_axis("take", axis, sx));
  const size_t q = si.size(), post = sx.size() - a - 1;
  int64_t k = sx[a];
  DType ct = compare_dtype(idx->dtype, k);
  // x (pre, 1.., K, post), idx (1.., I..., 1, 1..), positions (1.., 1.., K, 1..) -> (pre, I..., K, post),
  // summed over K: idx keeps its own axes, so a symbolic one is never merged with another.
  Dims xshape(sx.begin(), sx.begin() + int64_t(a)), pshape(a + q + 1 + post, 1);
  xshape.insert(xshape.end(), q, 1);
  xshape.insert(xshape.end(), sx.begin() + int64_t(a), sx.end());
  pshape[a + q] = k;
  Shape ishape(a, Dim::of(1)), out;
  ishape.insert(ishape.end(), si.begin(), si.end());
  ishape.insert(ishape.end(), post + 1, Dim::of(1));
  const UOp* xv = reshape(g, x, xshape);
  const UOp* iv = reshape_sym(g, cast(g, idx, ct), ishape);
  const UOp* pos = reshape(g, arange_int(g, k, ct), pshape);
  const UOp* picked = where(g, cmpeq(g, iv, pos), xv, scalar(g, x->dtype, 0));
  for (size_t d = 0; d < a; d++) out.push_back(Dim::of(sx[d]));
  out.insert(out.end(), si.begin(), si.end());
  for (size_t d = a + 1; d < sx.size(); d++) out.push_back(Dim::of(sx[d]));
  return reshape_sym(g, sum(g, picked, {int64_t(a + q)}), out);
}

const UOp* scatter_add(Graph& g, const UOp* x, int64_t axis, const UOp* idx, const UOp* val) {
  // Any dim but x's scattered one may be symbolic; idx's dims fit in val's and, off the axis, in x's.
  const Shape &sx = sym_shape(x, "scatter_add"), &si = sym_shape(idx, "scatter_add"),
              &sv = sym_shape(val, "scatter_add");
  need_numeric("scatter_add", x);
  need_int("scatter_add", "idx", idx);
  need_same_dtype("scatter_add", "val", val, x->dtype);
  if (sx.empty()) fail(Code::InvalidArg, "scatter_add: x needs rank >= 1, got shape ()");
  size_t a = size_t(norm_axis("scatter_add", axis, sx));
  if (si.size() != sx.size() || sv.size() != sx.size())
    fail(Code::InvalidArg, "scatter_add: x, idx and val need one rank: x ", shape_str(sx), ", idx ", shape_str(si),
         ", val ", shape_str(sv));
  check_fits("scatter_add", "idx", si, "val", sv, sx.size());  // every axis
  check_fits("scatter_add", "idx", si, "x", sx, a);
  int64_t k = const_dim("scatter_add", sx, a);
  DType ct = compare_dtype(idx->dtype, k);
  // val and idx (pre, D, 1, post) against positions (1.., 1, K, 1..); summing D gives (pre, K, post)
  const UOp* vv = reshape_sym(g, move_sym(g, Op::Shrink, val, Dims(sv.size(), 0), si), inserted(si, a + 1, 1));
  const UOp* iv = reshape_sym(g, cast(g, idx, ct), inserted(si, a + 1, 1));
  Dims pos_shape(sx.size() + 1, 1);
  pos_shape[a + 1] = k;
  const UOp* pos = reshape(g, arange_int(g, k, ct), pos_shape);
  const UOp* placed = where(g, cmpeq(g, iv, pos), vv, scalar(g, x->dtype, 0));
  Shape part = si;
  part[a] = Dim::of(k);
  const UOp* added = reshape_sym(g, sum(g, placed, {int64_t(a)}), part);
  return add(g, x, move_sym(g, Op::Pad, added, Dims(sx.size(), 0), sx));
}

const UOp* concat(Graph& g, std::span<const UOp* const> xs, int64_t axis) {
  if (xs.empty()) fail(Code::InvalidArg, "concat: needs at least one tensor");
  // The other axes may be symbolic (the same dim in every tensor); the joined one is constant.
  const Shape& s0 = sym_shape(xs[0], "concat");
  if (s0.empty()) fail(Code::InvalidArg, "concat: tensors need rank >= 1, got shape ()");
  size_t a = size_t(norm_axis("concat", axis, s0));
  int64_t total = 0;
  for (size_t j = 0; j < xs.size(); j++) {
    const Shape& s = sym_shape(xs[j], "concat");
    need_same_dtype("concat", "every tensor", xs[j], xs[0]->dtype);
    bool same = s.size() == s0.size();
    for (size_t d = 0; same && d < s.size(); d++) same = d == a || s[d] == s0[d];
    if (!same)
      fail(Code::InvalidArg, "concat: tensor ", j, " has shape ", shape_str(s), ", which differs from tensor 0's ",
           shape_str(s0), " off axis ", a);
    total = checked_add(total, const_dim("concat", s, a), "concat: length of axis ", a);
  }
  if (xs.size() == 1) return xs[0];
  Shape full_shape = s0;
  full_shape[a] = Dim::of(total);
  Dims mask_full(s0.size(), 1);
  mask_full[a] = total;
  const UOp* out = nullptr;
  int64_t at = 0;
  for (const UOp* x : xs) {
    int64_t len = (*x->shape())[a].value;
    if (len == 0) continue;
    Dims off(s0.size(), 0);
    off[a] = at;
    const UOp* placed = move_sym(g, Op::Pad, x, off, full_shape);
    if (out == nullptr) {
      out = placed;  // its zero border is overwritten by the later pieces
    } else {
      Dims piece(s0.size(), 1);
      piece[a] = len;
      const UOp* inside = pad(g, full(g, dtypes::bool_, 1, piece), off, mask_full);
      out = where(g, inside, placed, out);
    }
    at += len;
  }
  return out != nullptr ? out : xs[0];  // every piece empty along the axis: the result is too
}

const UOp* stack(Graph& g, std::span<const UOp* const> xs, int64_t axis) {
  if (xs.empty()) fail(Code::InvalidArg, "stack: needs at least one tensor");
  const Shape& s0 = sym_shape(xs[0], "stack");
  int64_t rank = int64_t(s0.size()) + 1;  // the new axis goes anywhere from 0 to the tensors' rank
  if (axis < -rank || axis >= rank)
    fail(Code::InvalidArg, "stack: axis ", axis, " is out of range for stacking tensors of shape ", shape_str(s0),
         " (the new axis is in [", -rank, ", ", rank - 1, "])");
  size_t a = size_t(axis < 0 ? axis + rank : axis);
  for (size_t j = 0; j < xs.size(); j++) {
    const Shape& s = sym_shape(xs[j], "stack");
    if (s != s0)
      fail(Code::InvalidArg, "stack: tensor ", j, " has shape ", shape_str(s), ", tensor 0 has ", shape_str(s0));
  }
  if (is_symbolic(s0)) {
    // symbolic dims: each tensor gets the new size-1 axis and they are joined along it, so every
    // symbolic dim stays its own axis (the spec's Stack takes constant shapes)
    std::vector<const UOp*> parts;
    for (const UOp* x : xs) parts.push_back(reshape_sym(g, x, inserted(s0, a, 1)));
    return concat(g, parts, int64_t(a));
  }
  // the spec's Stack joins along a new leading axis; move it to `axis`
  Dims order;
  for (size_t k = 1; k <= s0.size(); k++) order.push_back(int64_t(k));
  order.insert(order.begin() + long(a), 0);
  return permute(g, stack_leading(g, xs), order);
}

// ---- elementwise and normalizations ---------------------------------------------------------

const UOp* relu(Graph& g, const UOp* x) {
  sym_shape(x, "relu");
  need_numeric("relu", x);
  return maximum(g, x, scalar(g, x->dtype, 0));
}

const UOp* tensor_exp(Graph& g, const UOp* x) {
  sym_shape(x, "exp");
  need_float("exp", x);
  return unary(g, Op::Exp2, mul(g, x, scalar(g, x->dtype, std::numbers::log2e)));
}

const UOp* tensor_log(Graph& g, const UOp* x) {
  sym_shape(x, "log");
  need_float("log", x);
  return mul(g, unary(g, Op::Log2, x), scalar(g, x->dtype, std::numbers::ln2));
}

const UOp* sigmoid(Graph& g, const UOp* x) {
  sym_shape(x, "sigmoid");
  need_float("sigmoid", x);
  // exp(-x) = exp2(-x*log2(e)); large -x gives inf and the result 1/inf = 0
  const UOp* e = unary(g, Op::Exp2, mul(g, x, scalar(g, x->dtype, -std::numbers::log2e)));
  return unary(g, Op::Recip, add(g, e, scalar(g, x->dtype, 1)));
}

const UOp* tensor_tanh(Graph& g, const UOp* x) {
  sym_shape(x, "tanh");
  need_float("tanh", x);
  DType dt = x->dtype;
  const UOp* s = sigmoid(g, mul(g, x, scalar(g, dt, 2)));
  return add(g, mul(g, s, scalar(g, dt, 2)), scalar(g, dt, -1));
}

const UOp* gelu(Graph& g, const UOp* x) {
  sym_shape(x, "gelu");
  need_float("gelu", x);
  DType dt = x->dtype;
  // 0.5(1 + tanh(y)) = sigmoid(2y): y = sqrt(2/pi)(x + 0.044715x^3), so 2y = x(c1 + c2 x^2)
  const double c1 = 2 * std::sqrt(2 / std::numbers::pi), c2 = c1 * 0.044715;
  const UOp* x2 = mul(g, x, x);
  const UOp* two_y = mul(g, x, add(g, mul(g, x2, scalar(g, dt, c2)), scalar(g, dt, c1)));
  return mul(g, x, sigmoid(g, two_y));
}

namespace {

// Runs `body` on x with its (normalized) axis; a shape-() x is viewed as (1,) for it.
template <class F>
const UOp* along_axis(Graph& g, const char* op, const UOp* x, int64_t axis, F body) {
  const Shape& s = sym_shape(x, op);
  need_float(op, x);
  if (s.empty()) {
    norm_axis(op, axis, Dims{1});
    return reshape(g, body(reshape(g, x, {1}), int64_t(0)), {});
  }
  return body(x, norm_axis(op, axis, s));
}

}  // namespace

const UOp* softmax(Graph& g, const UOp* x, int64_t axis) {
  return along_axis(g, "softmax", x, axis, [&](const UOp* t, int64_t a) {
    // One reciprocal per row and a multiply per element (as tinygrad divides): a division per
    // element costs several multiplies on every CPU and GPU.
    const UOp* e = tensor_exp(g, sub(g, t, reduce(g, t, Op::Max, {a})));
    return mul(g, e, unary(g, Op::Recip, sum(g, e, {a})));
  });
}

const UOp* log_softmax(Graph& g, const UOp* x, int64_t axis) {
  return along_axis(g, "log_softmax", x, axis, [&](const UOp* t, int64_t a) {
    const UOp* z = sub(g, t, reduce(g, t, Op::Max, {a}));
    return sub(g, z, tensor_log(g, sum(g, tensor_exp(g, z), {a})));
  });
}

const UOp* layernorm(Graph& g, const UOp* x, int64_t naxes, const UOp* weight, const UOp* bias, double eps) {
  const Shape& s = sym_shape(x, "layernorm");
  need_float("layernorm", x);
  if (naxes < 1 || naxes > int64_t(s.size()))
    fail(Code::InvalidArg, "layernorm: naxes must be in [1, rank] for shape ", shape_str(s), ", got ", naxes);
  // The leading (batch) axes may be symbolic; the normalized ones set the count divided by.
  Dims norm_shape, axes;
  for (int64_t a = int64_t(s.size()) - naxes; a < int64_t(s.size()); a++) {
    const Dim& d = s[size_t(a)];
    if (!d.is_const()) fail(Code::Unsupported, "layernorm: normalized axis ", a, " of ", shape_str(s), " is symbolic");
    norm_shape.push_back(d.value);
    axes.push_back(a);
  }
  int64_t n = numel(norm_shape);
  if (n == 0) fail(Code::InvalidArg, "layernorm: the normalized axes ", dims_str(norm_shape), " hold no elements");
  if (!(eps >= 0) || !std::isfinite(eps)) fail(Code::InvalidArg, "layernorm: eps must be finite and >= 0, got ", eps);
  for (const UOp* p : {weight, bias}) {
    if (p == nullptr) continue;
    const char* what = p == weight ? "weight" : "bias";
    Dims ps = static_shape(p, "layernorm");
    if (ps != norm_shape)
      fail(Code::InvalidArg, "layernorm: ", what, " must have the normalized shape ", dims_str(norm_shape), ", got ",
           dims_str(ps));
    need_same_dtype("layernorm", what, p, x->dtype);
  }
  DType dt = x->dtype;
  const UOp* count = scalar(g, dt, double(n));
  const UOp* centered = sub(g, x, divide(g, sum(g, x, axes), count));
  const UOp* var = divide(g, sum(g, mul(g, centered, centered), axes), count);
  const UOp* inv_std = unary(g, Op::Recip, unary(g, Op::Sqrt, add(g, var, scalar(g, dt, eps))));
  const UOp* y = mul(g, centered, inv_std);
  if (weight != nullptr) y = mul(g, y, weight);
  if (bias != nullptr) y = add(g, y, bias);
  return y;
}

const UOp* argmax(Graph& g, const UOp* x, int64_t axis, bool keepdim) {
  const Shape& s = sym_shape(x, "argmax");  // the other axes may be symbolic (a batch of rows)
  if (s.empty()) {
    norm_axis("argmax", axis, Dims{1});
    return scalar(g, dtypes::int32, 0);
  }
  size_t a = size_t(norm_axis("argmax", axis, s));
  int64_t n = const_dim("argmax", s, a);
  if (n == 0) fail(Code::InvalidArg, "argmax: axis ", axis, " of shape ", shape_str(s), " is empty");
  if (n > std::numeric_limits<int32_t>::max())
    fail(Code::InvalidArg, "argmax: axis of ", n, " elements does not fit the int32 result");
  const UOp* hit = cmpeq(g, x, reduce(g, x, Op::Max, {int64_t(a)}));
  // Max propagates NaN, and NaN equals nothing: let the NaNs be the hits then
  if (x->dtype.is_float()) hit = bitwise_or(g, hit, cmpne(g, x, x));
  // the first hit has the largest n - i
  Dims pos_shape(s.size(), 1);
  pos_shape[a] = n;
  const UOp* nn = scalar(g, dtypes::int32, double(n));
  const UOp* rev = sub(g, nn, reshape(g, arange(g, n, dtypes::int32), pos_shape));
  const UOp* best = reduce(g, where(g, hit, rev, scalar(g, dtypes::int32, 0)), Op::Max, {int64_t(a)});
  const UOp* out = sub(g, nn, best);
  return keepdim ? out : reshape_sym(g, out, removed(s, a));
}

// ---- convolution and pooling ------------------------------------------------------------------

const UOp* conv2d(Graph& g, const UOp* x, const UOp* w, const UOp* bias, std::array<int64_t, 2> stride,
                  std::array<int64_t, 2> padding, std::array<int64_t, 2> dilation, int64_t groups) {
  // The batch N may be symbolic: it is its own axis through every step below.
  const Shape& sx = sym_shape(x, "conv2d");
  Dims sw = static_shape(w, "conv2d");
  if (sx.size() != 4) fail(Code::InvalidArg, "conv2d: x must be (N,Cin,H,W), got shape ", shape_str(sx));
  if (sw.size() != 4) fail(Code::InvalidArg, "conv2d: weight must be (Cout,Cin/groups,KH,KW), got ", dims_str(sw));
  need_numeric("conv2d", x);
  need_same_dtype("conv2d", "weight", w, x->dtype);
  check_positive("conv2d", "stride", stride);
  check_positive("conv2d", "dilation", dilation);
  if (padding[0] < 0 || padding[1] < 0) fail(Code::InvalidArg, "conv2d: padding must be >= 0, got ", dims_str(padding));
  if (groups < 1) fail(Code::InvalidArg, "conv2d: groups must be >= 1, got ", groups);
  for (size_t a = 1; a < 4; a++) const_dim("conv2d", sx, a);
  Dim n = sx[0];
  int64_t cin = sx[1].value, cout = sw[0], kh = sw[2], kw = sw[3];
  if (cin % groups != 0 || cout % groups != 0)
    fail(Code::InvalidArg, "conv2d: groups ", groups, " must divide Cin ", cin, " and Cout ", cout);
  int64_t cg = cin / groups, og = cout / groups;
  if (sw[1] != cg)
    fail(Code::InvalidArg, "conv2d: weight ", dims_str(sw), " needs Cin/groups = ", cg, " input channels (x ",
         shape_str(sx), ", groups ", groups, ")");
  if (kh < 1 || kw < 1)
    fail(Code::InvalidArg, "conv2d: kernel ", kh, "x", kw, " of weight ", dims_str(sw), " is empty");
  if (bias != nullptr) {
    Dims sb = static_shape(bias, "conv2d");
    if (sb != Dims{cout}) fail(Code::InvalidArg, "conv2d: bias must be (", cout, ",), got ", dims_str(sb));
    need_same_dtype("conv2d", "bias", bias, x->dtype);
  }
  // windows (N, Cin, OH, OW, KH, KW) viewed as (N, G, 1, Cg, OH, OW, KH, KW) against the weight
  // (1, G, Og, Cg, 1, 1, KH, KW), summed over Cg, KH and KW
  // A computed input (the previous layer's bias and relu) is stored first, by the kernel that
  // computes it: read through the windows, it would be computed again at every tap for every tile
  // of output channels (ResNet-18's 3x3 convolutions recomputed a bias and a relu per input read).
  if (is_computed(x) && og >= 16 && cg * kh * kw >= 8) x = g.make(Op::Contiguous, x->dtype, {x});
  const UOp* win = windows2d(g, "conv2d", pad2d(g, x, padding, nullptr), {kh, kw}, stride, dilation);
  const Shape& swin = sym_shape(win);
  int64_t oh = swin[2].value, ow = swin[3].value;
  auto after_n = [&](Dims rest) {
    Shape r{n};
    for (int64_t v : rest) r.push_back(Dim::of(v));
    return r;
  };
  win = reshape_sym(g, win, after_n({groups, 1, cg, oh, ow, kh, kw}));
  // Where the output rows do not fill 16-lane vectors (56, 28, 14 or 7 wide), the weight is read from a copy with the
  // output channels innermost: the CPU heuristic then makes output channels the vector lanes, one weight vector per
  // reduce step against broadcast input values (ResNet-18's 512x7x7 convolution ran 5x faster, its whole forward pass
  // 1.6x; its 256x14x14 one, whose rows were padded to 16 lanes before, 1.50-1.63 -> 1.38-1.41 ms on one core with
  // the copy made on every call). Only where there are 16 channels or more.
  // Rows read with a stride (ResNet's 7x7 stride-2 stem) fill no vector either: their lanes are a
  // gather, or one scalar load per lane where the target has none.
  const UOp* wk = w;
  const bool rows_fill_vectors = ow % 16 == 0 && stride[1] == 1 && dilation[1] == 1;
  if (!rows_fill_vectors && og >= 16 && cg * kh * kw >= 8 && oh * ow >= 4) {
    // in panels of 32 output channels, (G, Og/32, Cg, KH, KW, 32) (the schedule makes them as wide
    // as the target's tiles where those are narrower: repanel, schedule.cpp): a register tile's weights are
    // one contiguous block instead of 128-byte pieces 4 KiB apart (ResNet-18's 512x7x7 layers
    // read 9 MB of weights that way, a TLB miss per piece). Where 16 does not divide the channels
    // (40, 100) the last panel is padded with zeros: a tile's lanes padded past the channels then
    // read inside the panels (on a Zen 3: conv 80->40 at 28x28 0.59 -> 0.30 ms, 64->100 at 56x56
    // 2.9-3.4 -> 2.3 ms, against the weight read unpacked).
    // Each output channel's filters are one run of Cg*KH*KW weights in both layouts: the copy sees
    // them as one axis, which it reads in square tiles (a transposing copy, heuristic_cpu.cpp 4e).
    wk = reshape(g, panel_copy(g, reshape(g, w, {groups, og, cg * kh * kw}), 1, og % 32 == 0 ? 32 : 16, 1), sw);
  }
  const UOp* wv = reshape(g, wk, {1, groups, og, cg, 1, 1, kh, kw});
  const UOp* out = reshape_sym(g, sum(g, mul(g, win, wv), {3, 6, 7}), after_n({cout, oh, ow}));
  if (bias != nullptr) out = add(g, out, reshape(g, bias, {cout, 1, 1}));
  return out;
}

const UOp* max_pool2d(Graph& g, const UOp* x, std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride,
                      std::array<int64_t, 2> padding) {
  const Shape& s = sym_shape(x, "max_pool2d");
  check_pool_args("max_pool2d", s, kernel, stride, padding);
  DType dt = x->dtype;
  // the border must never win: -inf (e4m3 has no inf: its lowest finite value), an int's minimum
  const UOp* fill = !dt.is_float()                 ? constant_int(g, dt, dt.int_min())
                    : dt.scalar == Scalar::Fp8E4M3 ? scalar(g, dt, -dt.float_max())
                                                   : scalar(g, dt, -std::numeric_limits<double>::infinity());
  const UOp* win = windows2d(g, "max_pool2d", pad2d(g, x, padding, fill), kernel, stride, {1, 1}, true);
  size_t r = s.size() + 2;
  const UOp* m = reduce(g, win, Op::Max, {int64_t(r - 2), int64_t(r - 1)});
  Shape out = sym_shape(win);
  out.resize(out.size() - 2);
  return reshape_sym(g, m, out);
}

const UOp* avg_pool2d(Graph& g, const UOp* x, std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride,
                      std::array<int64_t, 2> padding) {
  const Shape& s = sym_shape(x, "avg_pool2d");
  check_pool_args("avg_pool2d", s, kernel, stride, padding);
  need_float("avg_pool2d", x);
  const UOp* win = windows2d(g, "avg_pool2d", pad2d(g, x, padding, nullptr), kernel, stride, {1, 1}, true);
  size_t r = s.size() + 2;
  const UOp* total = sum(g, win, {int64_t(r - 2), int64_t(r - 1)});
  Shape out = sym_shape(win);
  out.resize(out.size() - 2);
  double taps = double(checked_mul(kernel[0], kernel[1], "avg_pool2d: kernel size"));
  return reshape_sym(g, divide(g, total, scalar(g, x->dtype, taps)), out);
}

// ---- random numbers ---------------------------------------------------------------------------

std::pair<const UOp*, const UOp*> threefry2x32(Graph& g, const UOp* c0, const UOp* c1, const UOp* k0, const UOp* k1) {
  const char* names[4] = {"c0", "c1", "k0", "k1"};
  const UOp* in[4] = {c0, c1, k0, k1};
  Shape shape;
  for (int j = 0; j < 4; j++) {
    shape = broadcast_sym("threefry2x32", shape, sym_shape(in[j], "threefry2x32"));
    need_same_dtype("threefry2x32", names[j], in[j], dtypes::uint32);
  }
  // Random123's Threefry-2x32 rotation constants (Salmon et al. 2011, table 4), used in turn
  static constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  constexpr int kRounds = 20;
  const UOp* ks[3] = {k0, k1, bitwise_xor(g, bitwise_xor(g, k0, k1), constant_int(g, dtypes::uint32, 0x1BD11BDA))};
  const UOp* x0 = add(g, c0, ks[0]);
  const UOp* x1 = add(g, c1, ks[1]);
  for (int r = 0; r < kRounds; r++) {
    x0 = add(g, x0, x1);
    x1 = bitwise_xor(g, rotl32(g, x1, kRot[r % 8]), x0);
    if (r % 4 == 3) {  // key injection s after every 4 rounds
      int s = r / 4 + 1;
      x0 = add(g, x0, ks[s % 3]);
      x1 = add(g, x1, add(g, ks[(s + 1) % 3], constant_int(g, dtypes::uint32, s)));
    }
  }
  return {x0, x1};  // both words mix every operand, so they have the broadcast shape
}

const UOp* threefry(Graph& g, const UOp* x, const UOp* key) {
  sym_shape(x, "threefry");  // elementwise: any dim may be symbolic
  sym_shape(key, "threefry");
  need_same_dtype("threefry", "x", x, dtypes::uint64);
  need_same_dtype("threefry", "key", key, dtypes::uint64);
  const UOp* c32 = constant_int(g, dtypes::uint64, 32);
  // integer casts wrap, so a cast to uint32 keeps the low word
  auto [o0, o1] = threefry2x32(g, cast(g, x, dtypes::uint32), cast(g, shr(g, x, c32), dtypes::uint32),
                               cast(g, key, dtypes::uint32), cast(g, shr(g, key, c32), dtypes::uint32));
  return bitwise_or(g, shl(g, cast(g, o1, dtypes::uint64), c32), cast(g, o0, dtypes::uint64));
}

const UOp* rand_uniform(Graph& g, const std::vector<int64_t>& shape, const UOp* seed, DType dtype) {
  int bits = 0;
  switch (dtype.ptr || dtype.lanes != 1 ? Scalar::Void : dtype.scalar) {
    case Scalar::Float32:
      bits = 23;
      break;
    case Scalar::Float16:
      bits = 10;
      break;
    case Scalar::BFloat16:
      bits = 7;
      break;
    case Scalar::Float64:
      bits = 32;
      break;
    default:
      fail(Code::InvalidArg, "rand_uniform: needs float16, bfloat16, float32 or float64, got ", dtype.name());
  }
  auto words = random_words(g, "rand_uniform", shape, seed);
  return word_fraction(g, words.first, bits, dtype);
}

const UOp* rand_uniform(Graph& g, const std::vector<int64_t>& shape, uint64_t seed, DType dtype) {
  return rand_uniform(g, shape, seed_constant(g, seed), dtype);
}

const UOp* randn(Graph& g, const std::vector<int64_t>& shape, const UOp* seed, DType dtype) {
  if (!dtype.is_float() || dtype.lanes != 1 || dtype.ptr)
    fail(Code::InvalidArg, "randn: needs a float dtype, got ", dtype.name());
  auto [w0, w1] = random_words(g, "randn", shape, seed);
  DType f = dtypes::float32;
  // 1 - u1 lies in (0, 1], so the log is finite
  const UOp* u1 = word_fraction(g, w0, 23, f);
  const UOp* u2 = word_fraction(g, w1, 23, f);
  const UOp* ln = tensor_log(g, sub(g, scalar(g, f, 1), u1));
  const UOp* radius = unary(g, Op::Sqrt, mul(g, ln, scalar(g, f, -2)));
  const UOp* angle = add(g, mul(g, u2, scalar(g, f, 2 * std::numbers::pi)), scalar(g, f, std::numbers::pi / 2));
  return cast(g, mul(g, radius, unary(g, Op::Sin, angle)), dtype);
}

const UOp* randn(Graph& g, const std::vector<int64_t>& shape, uint64_t seed, DType dtype) {
  return randn(g, shape, seed_constant(g, seed), dtype);
}

}  // namespace sn
