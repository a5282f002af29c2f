#include "core/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/util/checked.h"

namespace sn {

namespace {

// Tensors hold scalar elements of a real value type; vectors, pointers, void and index belong to
// the lowered stages.
void check_tensor_dtype(const char* op, DType dt) {
  if (dt.ptr || dt.lanes != 1 || dt.is_void() || dt.is_index())
    fail(Code::InvalidArg, op, ": tensors need a scalar bool, integer or float dtype, got ", dt.name());
}

void check_rank(const char* op, const char* what, size_t got, size_t rank, const std::vector<int64_t>& shape) {
  if (got != rank)
    fail(Code::InvalidArg, op, ": ", what, " needs one entry per axis: got ", got, " for shape ", dims_str(shape));
}

void check_nonnegative(const char* op, const char* what, const std::vector<int64_t>& v) {
  for (size_t k = 0; k < v.size(); k++)
    if (v[k] < 0) fail(Code::InvalidArg, op, ": ", what, " must be >= 0, got ", dims_str(v), " (axis ", k, ")");
}

std::string lower_op_name(Op op) {
  std::string s(op_name(op));
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Dtype families each elementwise op accepts (on its value operands).
enum class Accepts { Any, NotBool, Float, Int, IntOrBool, Bool };

Accepts accepts(Op op) {
  switch (op) {
    case Op::Recip:
    case Op::Exp2:
    case Op::Log2:
    case Op::Sin:
    case Op::Sqrt:
    case Op::Pow:
    case Op::Div:
      return Accepts::Float;
    case Op::Idiv:
    case Op::Mod:
    case Op::Shl:
    case Op::Shr:
      return Accepts::Int;
    case Op::Xor:
    case Op::Or:
    case Op::And:
      return Accepts::IntOrBool;
    case Op::Not:
      return Accepts::Bool;
    case Op::Neg:
    case Op::Sub:
    case Op::Trunc:
      return Accepts::NotBool;
    default:
      return Accepts::Any;
  }
}

bool accepted(Accepts a, DType dt) {
  switch (a) {
    case Accepts::Any:
      return true;
    case Accepts::NotBool:
      return !dt.is_bool();
    case Accepts::Float:
      return dt.is_float();
    case Accepts::Int:
      return dt.is_int();
    case Accepts::IntOrBool:
      return dt.is_int() || dt.is_bool();
    case Accepts::Bool:
      return dt.is_bool();
  }
  return false;
}

const char* accepts_str(Accepts a) {
  switch (a) {
    case Accepts::Any:
      return "any dtype";
    case Accepts::NotBool:
      return "a numeric (non-bool) dtype";
    case Accepts::Float:
      return "a float dtype";
    case Accepts::Int:
      return "an integer dtype";
    case Accepts::IntOrBool:
      return "an integer or bool dtype";
    case Accepts::Bool:
      return "bool";
  }
  return "?";
}

// The elementwise ops the tensor level builds: every primitive and decomposed one except Cast
// (its own builder), Threefry and the internal C-division pair.
bool tensor_elementwise(Op op) {
  return is_elementwise(op) && op != Op::Cast && op != Op::Threefry && op != Op::CDiv && op != Op::CMod;
}

}  // namespace

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "(";
  for (size_t i = 0; i < d.size(); i++) s += (i ? "," : "") + std::to_string(d[i]);
  if (d.size() == 1) s += ",";
  return s + ")";
}

int64_t numel(const std::vector<int64_t>& shape, const char* op) { return checked_numel(shape, op); }

std::vector<int64_t> static_shape(const UOp* t, const char* what) {
  if (t == nullptr) fail(Code::InvalidArg, what, ": tensor is null");
  const Shape* s = t->shape();
  if (s == nullptr) fail(Code::InvalidArg, what, ": ", op_name(t->op), " node has no shape (not a tensor)");
  std::vector<int64_t> out;
  out.reserve(s->size());
  for (size_t k = 0; k < s->size(); k++) {
    const Dim& d = (*s)[k];
    if (!d.is_const())
      fail(Code::Unsupported, what, ": axis ", k, " of shape ", shape_str(*s),
           " is symbolic; this op takes constant dims only");
    out.push_back(d.value);
  }
  return out;
}

const Shape& sym_shape(const UOp* t, const char* what) {
  if (t == nullptr) fail(Code::InvalidArg, what, ": tensor is null");
  const Shape* s = t->shape();
  if (s == nullptr) fail(Code::InvalidArg, what, ": ", op_name(t->op), " node has no shape (not a tensor)");
  return *s;
}

namespace {

// One dim as messages write it: "65", or the symbolic expression ("n").
std::string dim_str(const Dim& d) {
  if (d.is_const()) return std::to_string(d.value);
  std::string s = shape_str({d});  // "(n,)"
  return s.substr(1, s.size() - 3);
}

}  // namespace

Shape broadcast_sym(const char* op, const Shape& a, const Shape& b) {
  auto one = [](const Dim& d) { return d.is_const() && d.value == 1; };
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t k = 0; k < rank; k++) {
    // k counts from the right: right-aligned broadcast
    Dim da = k < a.size() ? a[a.size() - 1 - k] : Dim::of(1);
    Dim db = k < b.size() ? b[b.size() - 1 - k] : Dim::of(1);
    if (!(da == db) && !one(da) && !one(db))
      fail(Code::InvalidArg, op, ": shapes ", shape_str(a), " and ", shape_str(b), " do not broadcast (axis -", k + 1,
           ": ", dim_str(da), " vs ", dim_str(db), ")");
    out[rank - 1 - k] = one(da) ? db : da;
  }
  return out;
}

std::vector<int64_t> broadcast_shapes(const char* op, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t k = 0; k < rank; k++) {
    // k counts from the right: right-aligned broadcast
    int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1;
    int64_t db = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (da != db && da != 1 && db != 1)
      fail(Code::InvalidArg, op, ": shapes ", dims_str(a), " and ", dims_str(b), " do not broadcast (axis -", k + 1,
           ": ", da, " vs ", db, ")");
    out[rank - 1 - k] = da == 1 ? db : da;
  }
  return out;
}

// ---- sources -------------------------------------------------------------------------------

const UOp* input(Graph& g, DType dtype, const std::vector<int64_t>& shape, const std::string& device) {
  check_tensor_dtype("input", dtype);
  check_nonnegative("input", "dims", shape);
  if (device.empty()) fail(Code::InvalidArg, "input: device name is empty");
  int64_t n = numel(shape, "input");
  BufferArg arg{g.next_buffer_id(), n, Device{{device}, false}, AddrSpace::Global};
  const UOp* buf = g.make(Op::Buffer, dtype, {}, std::move(arg));
  return reshape(g, buf, shape);
}

namespace {

// The largest value a symbolic dim takes; its variables must be bounded.
int64_t dim_max(const char* op, size_t axis, const Dim& d) {
  if (d.is_const()) return d.value;
  if (!d.sym->dtype.is_int())
    fail(Code::InvalidArg, op, ": dim ", axis, " must be an index or integer uop, got ", d.sym->dtype.name());
  const MinMax& m = d.sym->minmax();
  if (m.lo < 0) fail(Code::InvalidArg, op, ": dim ", axis, " (", shape_str({d}), ") can be negative");
  if (m.hi > i128(std::numeric_limits<int64_t>::max()))
    fail(Code::InvalidArg, op, ": dim ", axis, " (", shape_str({d}), ") has no finite upper bound");
  return int64_t(m.hi);
}

}  // namespace

const UOp* input_sym(Graph& g, DType dtype, const Shape& dims, const std::string& device) {
  std::vector<int64_t> largest;
  bool symbolic = false;
  for (size_t k = 0; k < dims.size(); k++) {
    largest.push_back(dim_max("input_sym", k, dims[k]));
    symbolic = symbolic || !dims[k].is_const();
  }
  if (!symbolic) return input(g, dtype, largest, device);
  // A user's buffer holds the shape at the variables' values, row-major and contiguous: its strides
  // follow the values too (a (2, t) input has rows t apart, not max(t) apart). So the view is the
  // flat buffer of the largest size, shrunk to the element count at the values (the product of the
  // dims), reshaped to the dims.
  const UOp* flat = input(g, dtype, {checked_numel(largest, "input_sym: largest shape")}, device);
  const UOp* count = nullptr;
  for (const Dim& d : dims) {
    const UOp* f = d.is_const() ? g.cint(d.value) : d.sym;
    count = count ? g.alu(Op::Mul, count, f) : f;
  }
  const UOp* used =
      g.make(Op::Shrink, dtype, {flat, g.shape_uop(std::vector<int64_t>{0}), g.shape_uop(Shape{Dim{0, count}})});
  return g.make(Op::Reshape, dtype, {used, g.shape_uop(dims)});
}

const UOp* buffer_of(const UOp* t) {
  // input(): the Buffer or its Reshape; input_sym(): a Reshape of a Shrink of the flat Buffer
  if (t != nullptr && t->op == Op::Reshape && t->src(0)->op == Op::Shrink) t = t->src(0);
  if (t != nullptr && t->op == Op::Shrink) t = t->src(0);
  if (t != nullptr && t->op == Op::Reshape) t = t->src(0);
  if (t == nullptr || t->op != Op::Buffer)
    fail(Code::InvalidArg, "buffer_of: not a tensor made by input(): ", t ? op_name(t->op) : "null");
  return t;
}

bool is_computed(const UOp* x) {
  while (is_movement(x->op)) x = x->src(0);
  return is_elementwise(x->op) && x->op != Op::Const;
}

const UOp* constant(Graph& g, DType dtype, double value) {
  check_tensor_dtype("constant", dtype);
  if (dtype.is_float()) return g.make(Op::Const, dtype, {}, round_float(dtype, value));
  if (!std::isfinite(value) || std::trunc(value) != value)
    fail(Code::InvalidArg, "constant: ", dtype.name(), " needs an integer value, got ", value);
  // a value this far out cannot convert to i128; constant_int checks the exact range
  if (std::fabs(value) > 1e20)
    fail(Code::InvalidArg, "constant: value ", value, " is outside the range of ", dtype.name());
  return constant_int(g, dtype, static_cast<i128>(value));
}

const UOp* constant_int(Graph& g, DType dtype, i128 value) {
  check_tensor_dtype("constant", dtype);
  if (dtype.is_float()) return g.make(Op::Const, dtype, {}, round_float(dtype, static_cast<double>(value)));
  if (value < dtype.int_min() || value > dtype.int_max())
    fail(Code::InvalidArg, "constant: value ", static_cast<double>(value), " is outside the range of ", dtype.name());
  // uint64 values above INT64_MAX keep their bit pattern in the int64 arg
  return g.make(Op::Const, dtype, {}, static_cast<int64_t>(static_cast<uint64_t>(value)));
}

const UOp* assign(Graph& g, const UOp* target, const UOp* value) {
  std::vector<int64_t> ts = static_shape(target, "assign: target"), vs = static_shape(value, "assign: value");
  if (target->op != Op::Buffer && !(target->op == Op::Reshape && target->src(0)->op == Op::Buffer))
    fail(Code::InvalidArg, "assign: the target must be an input tensor (a Buffer or the view input() makes), got ",
         op_name(target->op));
  if (ts != vs)
    fail(Code::InvalidArg, "assign: value of shape ", dims_str(vs), " does not match the target's shape ",
         dims_str(ts));
  if (value->dtype != target->dtype)
    fail(Code::InvalidArg, "assign: value is ", value->dtype.name(), ", the target is ", target->dtype.name(),
         " (cast first)");
  const UOp* buf = buffer_of(target);
  const UOp* store = g.make(Op::Store, dtypes::void_, {buf, reshape(g, value, {numel(ts)})});
  return g.make(Op::After, target->dtype, {target, store});
}

// ---- movement -----------------------------------------------------------------------------

const UOp* reshape(Graph& g, const UOp* x, const std::vector<int64_t>& shape) {
  std::vector<int64_t> old = static_shape(x, "reshape");
  check_nonnegative("reshape", "dims", shape);
  if (numel(old, "reshape") != numel(shape, "reshape"))
    fail(Code::InvalidArg, "reshape: element count must stay the same: ", dims_str(old), " has ", numel(old), ", ",
         dims_str(shape), " has ", numel(shape));
  if (old == shape) return x;
  return g.make(Op::Reshape, x->dtype, {x, g.shape_uop(shape)});
}

const UOp* reshape_sym(Graph& g, const UOp* x, const Shape& shape) {
  const Shape& old = sym_shape(x, "reshape");
  std::vector<int64_t> fixed_old, fixed_new;
  std::vector<const UOp*> sym_old, sym_new;
  for (const Dim& d : old) d.is_const() ? fixed_old.push_back(d.value) : sym_old.push_back(d.sym);
  for (const Dim& d : shape) d.is_const() ? fixed_new.push_back(d.value) : sym_new.push_back(d.sym);
  if (sym_new.empty() && sym_old.empty()) return reshape(g, x, fixed_new);
  check_nonnegative("reshape", "dims", fixed_new);
  // Element counts of symbolic shapes only compare when each symbolic dim keeps an axis of its own.
  std::sort(sym_old.begin(), sym_old.end());
  std::sort(sym_new.begin(), sym_new.end());
  if (sym_old != sym_new)
    fail(Code::Unsupported, "reshape: ", shape_str(old), " to ", shape_str(shape),
         " merges or splits a symbolic dim; each symbolic dim must stay its own axis");
  if (numel(fixed_old, "reshape") != numel(fixed_new, "reshape"))
    fail(Code::InvalidArg, "reshape: element count must stay the same: ", shape_str(old), " to ", shape_str(shape));
  if (old == shape) return x;
  return g.make(Op::Reshape, x->dtype, {x, g.shape_uop(shape)});
}

const UOp* permute(Graph& g, const UOp* x, const std::vector<int64_t>& order) {
  const Shape& old = sym_shape(x, "permute");
  if (order.size() != old.size())
    fail(Code::InvalidArg, "permute: order needs one entry per axis: got ", order.size(), " for shape ",
         shape_str(old));
  std::vector<bool> seen(old.size(), false);
  bool identity = true;
  for (size_t k = 0; k < order.size(); k++) {
    int64_t a = order[k];
    if (a < 0 || a >= int64_t(old.size()) || seen[size_t(a)])
      fail(Code::InvalidArg, "permute: order ", dims_str(order), " is not a permutation of the ", old.size(),
           " axes of ", shape_str(old));
    seen[size_t(a)] = true;
    identity = identity && a == int64_t(k);
  }
  if (identity) return x;
  return g.make(Op::Permute, x->dtype, {x}, order);
}

const UOp* expand(Graph& g, const UOp* x, const std::vector<int64_t>& shape) {
  std::vector<int64_t> old = static_shape(x, "expand");
  if (shape.size() != old.size())
    fail(Code::InvalidArg, "expand: rank must stay the same (reshape first): ", dims_str(old), " to ", dims_str(shape));
  check_nonnegative("expand", "dims", shape);
  for (size_t k = 0; k < old.size(); k++)
    if (old[k] != 1 && old[k] != shape[k])
      fail(Code::InvalidArg, "expand: only size-1 axes broadcast: ", dims_str(old), " to ", dims_str(shape), " (axis ",
           k, ": ", old[k], " vs ", shape[k], ")");
  if (old == shape) return x;
  return g.make(Op::Expand, x->dtype, {x, g.shape_uop(shape)});
}

const UOp* expand_sym(Graph& g, const UOp* x, const Shape& shape) {
  const Shape& old = sym_shape(x, "expand");
  if (shape.size() != old.size())
    fail(Code::InvalidArg, "expand: rank must stay the same (reshape first): ", shape_str(old), " to ",
         shape_str(shape));
  for (size_t k = 0; k < old.size(); k++) {
    if (shape[k].is_const() && shape[k].value < 0)
      fail(Code::InvalidArg, "expand: dims must be >= 0, got ", shape_str(shape));
    if (!(old[k] == shape[k]) && !(old[k].is_const() && old[k].value == 1))
      fail(Code::InvalidArg, "expand: only size-1 axes broadcast: ", shape_str(old), " to ", shape_str(shape),
           " (axis ", k, ")");
  }
  if (old == shape) return x;
  return g.make(Op::Expand, x->dtype, {x, g.shape_uop(shape)});
}

const UOp* flip(Graph& g, const UOp* x, const std::vector<int64_t>& flags) {
  // any axis may be symbolic: a flipped one indexes from its size at run time
  const Shape& old = sym_shape(x, "flip");
  if (flags.size() != old.size())
    fail(Code::InvalidArg, "flip: flags needs one entry per axis: got ", flags.size(), " for shape ", shape_str(old));
  bool any = false;
  for (int64_t f : flags) {
    if (f != 0 && f != 1) fail(Code::InvalidArg, "flip: flags must be 0 or 1, got ", dims_str(flags));
    any = any || f == 1;
  }
  if (!any) return x;
  return g.make(Op::Flip, x->dtype, {x}, flags);
}

namespace {

using Dims = std::vector<int64_t>;

// Pad or Shrink of a tensor with symbolic axes: each symbolic axis passes through whole, written as
// offset 0 and size -1 (a symbolic axis itself is never padded or shrunk); the constant axes move as
// `check` (the all-constant builder's checks, run on the constant axes alone) allows.
const UOp* move_keeping_symbolic(Graph& g, Op op, const UOp* x, const std::vector<int64_t>& offsets,
                                 const std::vector<int64_t>& sizes,
                                 void (*check)(const Dims&, const Dims&, const Dims&)) {
  const char* name = op == Op::Pad ? "pad" : "shrink";
  const Shape& old = *x->shape();
  if (offsets.size() != old.size() || sizes.size() != old.size())
    fail(Code::InvalidArg, name, ": offsets and sizes need one entry per axis: got ", offsets.size(), " and ",
         sizes.size(), " for shape ", shape_str(old));
  Dims fixed_old, fixed_off, fixed_size;
  Shape to = old;
  bool moves = false;
  for (size_t k = 0; k < old.size(); k++) {
    if (!old[k].is_const()) {
      if (offsets[k] != 0 || sizes[k] != -1)
        fail(Code::Unsupported, name, ": axis ", k, " of ", shape_str(old),
             " is symbolic; pass offset 0 and size -1 to keep it whole (only constant axes can be ",
             op == Op::Pad ? "padded" : "shrunk", "), got offset ", offsets[k], " and size ", sizes[k]);
      continue;
    }
    fixed_old.push_back(old[k].value);
    fixed_off.push_back(offsets[k]);
    fixed_size.push_back(sizes[k]);
    to[k] = Dim::of(sizes[k]);
    moves = moves || offsets[k] != 0 || sizes[k] != old[k].value;
  }
  check(fixed_old, fixed_off, fixed_size);
  if (!moves) return x;
  return g.make(op, x->dtype, {x, g.shape_uop(offsets), g.shape_uop(to)});
}

void check_pad(const Dims& old, const Dims& offsets, const Dims& new_shape) {
  check_rank("pad", "offsets", offsets.size(), old.size(), old);
  check_rank("pad", "new shape", new_shape.size(), old.size(), old);
  check_nonnegative("pad", "offsets", offsets);
  for (size_t k = 0; k < old.size(); k++)
    if (checked_add(offsets[k], old[k], "pad: axis ", k, " offset + size") > new_shape[k])
      fail(Code::InvalidArg, "pad: ", dims_str(old), " at offsets ", dims_str(offsets), " does not fit in ",
           dims_str(new_shape), " (axis ", k, ": ", offsets[k], "+", old[k], " > ", new_shape[k], ")");
}

void check_shrink(const Dims& old, const Dims& offsets, const Dims& sizes) {
  check_rank("shrink", "offsets", offsets.size(), old.size(), old);
  check_rank("shrink", "sizes", sizes.size(), old.size(), old);
  check_nonnegative("shrink", "offsets", offsets);
  check_nonnegative("shrink", "sizes", sizes);
  for (size_t k = 0; k < old.size(); k++)
    if (checked_add(offsets[k], sizes[k], "shrink: axis ", k, " offset + size") > old[k])
      fail(Code::InvalidArg, "shrink: window at offsets ", dims_str(offsets), " of sizes ", dims_str(sizes), " leaves ",
           dims_str(old), " (axis ", k, ": ", offsets[k], "+", sizes[k], " > ", old[k], ")");
}

}  // namespace

const UOp* pad(Graph& g, const UOp* x, const std::vector<int64_t>& offsets, const std::vector<int64_t>& new_shape) {
  if (is_symbolic(sym_shape(x, "pad"))) return move_keeping_symbolic(g, Op::Pad, x, offsets, new_shape, check_pad);
  std::vector<int64_t> old = static_shape(x, "pad");
  check_pad(old, offsets, new_shape);
  if (old == new_shape) return x;  // then every offset is 0
  return g.make(Op::Pad, x->dtype, {x, g.shape_uop(offsets), g.shape_uop(new_shape)});
}

const UOp* shrink(Graph& g, const UOp* x, const std::vector<int64_t>& offsets, const std::vector<int64_t>& sizes) {
  if (is_symbolic(sym_shape(x, "shrink"))) return move_keeping_symbolic(g, Op::Shrink, x, offsets, sizes, check_shrink);
  std::vector<int64_t> old = static_shape(x, "shrink");
  check_shrink(old, offsets, sizes);
  if (old == sizes) return x;  // then every offset is 0
  return g.make(Op::Shrink, x->dtype, {x, g.shape_uop(offsets), g.shape_uop(sizes)});
}

const UOp* panel_copy(Graph& g, const UOp* x, int64_t axis, int64_t panel, int64_t outer_at) {
  const std::vector<int64_t> shape = static_shape(x, "panel_copy");
  const size_t a = size_t(axis);
  std::vector<int64_t> padded = shape;
  padded[a] = (shape[a] + panel - 1) / panel * panel;
  std::vector<int64_t> split = padded;  // the axis as (panels, panel)
  split[a] = padded[a] / panel;
  split.insert(split.begin() + axis + 1, panel);
  std::vector<int64_t> order;  // the other axes, the panels' index among them, the panel last
  for (int64_t i = 0; i < int64_t(split.size()); i++)
    if (i != axis && i != axis + 1) order.push_back(i);
  order.insert(order.begin() + outer_at, axis);
  order.push_back(axis + 1);
  std::vector<int64_t> back(order.size());
  for (size_t i = 0; i < order.size(); i++) back[size_t(order[i])] = int64_t(i);
  const std::vector<int64_t> zeros(shape.size(), 0);
  const UOp* packed = permute(g, reshape(g, pad(g, x, zeros, padded), split), order);
  packed = g.make(Op::Contiguous, packed->dtype, {packed});
  return shrink(g, reshape(g, permute(g, packed, back), padded), zeros, shape);
}

std::optional<PanelCopy> as_panel_copy(Graph& g, const UOp* view) {
  // shrink(reshape(permute(contiguous(permute(reshape(pad(x)))))): pad and shrink only where the
  // panels do not divide the axis
  const UOp* u = view->op == Op::Shrink ? view->src(0) : view;
  if (u->op != Op::Reshape || u->src(0)->op != Op::Permute) return std::nullopt;
  const UOp* copy = u->src(0)->src(0);
  if (copy->op != Op::Contiguous || copy->src(0)->op != Op::Permute) return std::nullopt;
  const UOp* split = copy->src(0)->src(0);
  const std::vector<int64_t>& order = copy->src(0)->as<std::vector<int64_t>>();
  if (split->op != Op::Reshape || order.size() < 2 || order.back() < 1) return std::nullopt;
  const UOp* x = split->src(0)->op == Op::Pad ? split->src(0)->src(0) : split->src(0);
  const Shape *xs = x->shape(), *ss = split->shape();
  if (!xs || !ss || ss->size() != xs->size() + 1 || is_symbolic(*xs)) return std::nullopt;
  const int64_t axis = order.back() - 1;
  const auto at = std::find(order.begin(), order.end(), axis);
  if (at == order.end() || !(*ss)[size_t(axis) + 1].is_const()) return std::nullopt;
  PanelCopy pc{x, axis, (*ss)[size_t(axis) + 1].value, int64_t(at - order.begin())};
  // the same nodes again (hash-consed): nothing else has this form
  try {
    if (pc.panel < 1 || panel_copy(g, x, pc.axis, pc.panel, pc.outer_at) != view) return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;  // a look-alike whose parts panel_copy refuses
  }
  return pc;
}

const UOp* index(Graph& g, const UOp* x, std::span<const UOp* const> indices) {
  std::vector<int64_t> xs = static_shape(x, "index");
  if (indices.size() > xs.size())
    fail(Code::InvalidArg, "index: ", indices.size(), " indices for the ", xs.size(), " axes of ", dims_str(xs));
  if (indices.empty()) return x;
  std::vector<const UOp*> src{x};
  for (size_t k = 0; k < indices.size(); k++) {
    std::string what = cat("index: index ", k);
    std::vector<int64_t> is = static_shape(indices[k], what.c_str());
    if (!indices[k]->dtype.is_int())
      fail(Code::InvalidArg, what, " must be an integer tensor, got ", indices[k]->dtype.name());
    if (is.size() > 1) fail(Code::InvalidArg, what, " must have shape () or (n,), got ", dims_str(is));
    src.push_back(indices[k]);
  }
  return g.make(Op::Index, x->dtype, src);
}

const UOp* stack_leading(Graph& g, std::span<const UOp* const> xs) {
  if (xs.empty()) fail(Code::InvalidArg, "stack: needs at least one tensor");
  std::vector<int64_t> first = static_shape(xs[0], "stack");
  for (size_t k = 1; k < xs.size(); k++) {
    std::vector<int64_t> s = static_shape(xs[k], "stack");
    if (s != first)
      fail(Code::InvalidArg, "stack: all shapes must match: tensor 0 is ", dims_str(first), ", tensor ", k, " is ",
           dims_str(s));
    if (xs[k]->dtype != xs[0]->dtype)
      fail(Code::InvalidArg, "stack: all dtypes must match: tensor 0 is ", xs[0]->dtype.name(), ", tensor ", k, " is ",
           xs[k]->dtype.name());
  }
  return g.make(Op::Stack, xs[0]->dtype, xs);
}

const UOp* slice(Graph& g, const UOp* x, int64_t offset, int64_t size, DType dtype) {
  std::vector<int64_t> xs = static_shape(x, "slice");
  check_tensor_dtype("slice", dtype);
  if (offset < 0 || size < 0) fail(Code::InvalidArg, "slice: offset ", offset, " and size ", size, " must be >= 0");
  int64_t have = 0, from = 0, want = 0, end = 0;
  if (__builtin_mul_overflow(numel(xs), int64_t(x->dtype.itemsize()), &have) ||
      __builtin_mul_overflow(offset, int64_t(x->dtype.itemsize()), &from) ||
      __builtin_mul_overflow(size, int64_t(dtype.itemsize()), &want) || __builtin_add_overflow(from, want, &end) ||
      end > have)
    fail(Code::InvalidArg, "slice: ", size, " ", dtype.name(), " elements at offset ", offset, " (", x->dtype.name(),
         " elements) run past the ", have, " bytes of ", dims_str(xs));
  return g.make(Op::Slice, dtype, {x, g.cint(offset)}, SliceArg{size, dtype});
}

const UOp* binary_data(Graph& g, std::string bytes) { return g.make(Op::Binary, dtypes::uint8, {}, std::move(bytes)); }

const UOp* reduce(Graph& g, const UOp* x, Op op, const std::vector<int64_t>& axes) {
  const Shape& old = sym_shape(x, "reduce");
  if (op != Op::Add && op != Op::Max && op != Op::Mul)
    fail(Code::InvalidArg, "reduce: op must be Add, Max or Mul, got ", op_name(op));
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 0; k < sorted.size(); k++) {
    if (sorted[k] < 0 || sorted[k] >= int64_t(old.size()))
      fail(Code::InvalidArg, "reduce: axis ", sorted[k], " is out of range for shape ", shape_str(old));
    if (k > 0 && sorted[k] == sorted[k - 1])
      fail(Code::InvalidArg, "reduce: axis ", sorted[k], " is listed twice in ", dims_str(axes));
  }
  if (sorted.empty()) return x;
  return g.make(Op::Reduce, x->dtype, {x}, ReduceArg{op, sorted});
}

const UOp* cast(Graph& g, const UOp* x, DType dtype) {
  sym_shape(x, "cast");
  check_tensor_dtype("cast", dtype);
  if (x->dtype == dtype) return x;
  return g.make(Op::Cast, dtype, {x}, dtype);
}

const UOp* bitcast(Graph& g, const UOp* x, DType dtype) {
  check_tensor_dtype("bitcast", dtype);
  // the same element size reinterprets each element (any dim may be symbolic); another size rescales
  // the last axis, whose dims must then be constant
  sym_shape(x, "bitcast");
  if (dtype.itemsize() != x->dtype.itemsize()) static_shape(x, "bitcast");
  if (x->dtype == dtype) return x;
  // element sizes may differ: the last axis rescales (the Graph's verifier checks it divides)
  return g.make(Op::Bitcast, dtype, {x}, dtype);
}

// ---- elementwise --------------------------------------------------------------------------

const UOp* elementwise(Graph& g, Op op, std::span<const UOp* const> src) {
  std::string name = lower_op_name(op);
  if (!tensor_elementwise(op))
    fail(Code::InvalidArg, name, ": not an elementwise op the tensor level builds",
         op == Op::Cast ? " (use cast)" : "");
  const OpInfo& info = op_info(op);
  if (int(src.size()) != info.min_src)
    fail(Code::InvalidArg, name, ": takes ", int(info.min_src), " operands, got ", src.size());
  Shape shape;
  for (const UOp* s : src) shape = broadcast_sym(name.c_str(), shape, sym_shape(s, name.c_str()));

  // Where's condition is bool; every other operand is a value of one shared dtype.
  size_t first_value = op == Op::Where ? 1 : 0;
  if (op == Op::Where && !src[0]->dtype.is_bool())
    fail(Code::InvalidArg, "where: condition must be bool, got ", src[0]->dtype.name());
  DType dt = src[first_value]->dtype;
  for (size_t k = first_value; k < src.size(); k++)
    if (src[k]->dtype != dt)
      fail(Code::InvalidArg, name, ": operands need one dtype, got ", dt.name(), " and ", src[k]->dtype.name(),
           " (cast first)");
  Accepts a = accepts(op);
  if (!accepted(a, dt)) fail(Code::InvalidArg, name, ": needs ", accepts_str(a), ", got ", dt.name());
  return g.make(op, is_comparison(op) ? dtypes::bool_ : dt, src);
}

const UOp* unary(Graph& g, Op op, const UOp* a) { return elementwise(g, op, {&a, 1}); }

const UOp* binary(Graph& g, Op op, const UOp* a, const UOp* b) {
  const UOp* s[2] = {a, b};
  return elementwise(g, op, s);
}

const UOp* ternary(Graph& g, Op op, const UOp* a, const UOp* b, const UOp* c) {
  const UOp* s[3] = {a, b, c};
  return elementwise(g, op, s);
}

}  // namespace sn
