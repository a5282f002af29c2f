#include "tests/oracle/kernel_interp.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "tests/oracle/scalar_ops.h"

namespace sn::oracle {

namespace {

using namespace scalar;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One scalar: floats use f, bool/int/index use i (exact, already wrapped to the dtype).
struct Val {
  double f = 0;
  i128 i = 0;
};

bool is_kernel_op(Op op) {
  switch (op) {
    case Op::Sink:
    case Op::Store:
    case Op::Param:
    case Op::Index:
    case Op::Load:
    case Op::Range:
    case Op::Reduce:
    case Op::Const:
    case Op::DefineVar:
    case Op::Bitcast:
      return true;
    default:
      return is_elementwise(op);
  }
}

Val cast_val(DType from, DType to, Val x) {
  Val r;
  if (!from.is_float()) {
    if (to.is_float())
      r.f = int_to_float(to, x.i);
    else
      r.i = wrap_int(to, x.i);
    return r;
  }
  if (to.is_float()) {
    r.f = round_float(to, x.f);
  } else if (to.is_bool()) {
    r.i = x.f != 0;
  } else {
    if (!std::isfinite(x.f) || std::fabs(x.f) >= 1e38)
      fail(Code::InvalidArg, "kernel interp: cast of ", x.f, " from ", from.name(), " to ", to.name(), " is undefined");
    r.i = wrap_int(to, static_cast<i128>(std::trunc(x.f)));
  }
  return r;
}

Val bitcast_val(DType from, DType to, Val x) {
  if (from.itemsize() != to.itemsize())
    fail(Code::InvalidArg, "kernel interp: scalar bitcast from ", from.name(), " to ", to.name(), " changes size");
  uint8_t bytes[16] = {};
  if (from.is_float()) {
    encode_float(from, x.f, bytes);
  } else {
    uint64_t u = uint64_t(x.i);
    for (int b = 0; b < from.itemsize(); b++) bytes[b] = uint8_t(u >> (8 * b));
  }
  Val r;
  if (to.is_float()) {
    r.f = decode_float(to, bytes);
  } else {
    uint64_t u = 0;
    for (int b = 0; b < to.itemsize(); b++) u |= uint64_t(bytes[b]) << (8 * b);
    r.i = wrap_int(to, i128(u));
  }
  return r;
}

Val read_elem(const Array& a, size_t k) {
  Val v;
  if (a.dtype.is_float())
    v.f = a.f[k];
  else
    v.i = a.int_at(k);
  return v;
}

void write_elem(Array& a, size_t k, Val v) {
  if (a.dtype.is_float())
    a.f[k] = round_float(a.dtype, v.f);
  else
    a.set_int(k, v.i);
}

// Evaluates one kernel. Nodes are numbered in topological order; each keeps its last value and
// the clock time it was computed, and a value is reused while none of the ranges it depends on has
// been set since.
class KernelRunner {
 public:
  KernelRunner(const UOp* ast, std::span<Array* const> slots, const VarValues& vars,
               std::vector<std::vector<uint8_t>>* stored)
      : ast_(ast), slots_(slots), vars_(vars), stored_(stored) {}

  void run() {
    if (ast_->op != Op::Sink) fail(Code::InvalidArg, "kernel interp: the root is ", op_name(ast_->op), ", not Sink");
    number_nodes();
    check_contract();
    for (const UOp* s : ast_->src()) {
      if (s->op != Op::Store) fail(Code::InvalidArg, "kernel interp: Sink source ", op_name(s->op), " is not a Store");
      int n = id_.at(s);
      written_.clear();
      loop(n, open_[size_t(n)], 0);
    }
  }

 private:
  void number_nodes() {
    nodes_ = toposort(ast_);
    for (size_t k = 0; k < nodes_.size(); k++) id_.emplace(nodes_[k], int(k));
    size_t n = nodes_.size();
    src_.resize(n);
    open_.resize(n);
    val_.resize(n);
    at_.assign(n, 0);
    range_val_.assign(n, 0);
    range_set_.assign(n, 0);
    bound_.assign(n, 0);
    for (size_t k = 0; k < n; k++) {
      const UOp* u = nodes_[k];
      std::vector<int>& open = open_[k];
      for (const UOp* s : u->src()) {
        int j = id_.at(s);
        src_[k].push_back(j);
        open.insert(open.end(), open_[size_t(j)].begin(), open_[size_t(j)].end());
      }
      if (u->op == Op::Range) open.push_back(int(k));
      if (u->op == Op::Reduce)  // its ranges are closed inside it
        open.erase(
            std::remove_if(open.begin(), open.end(),
                           [&](int r) { return std::find(src_[k].begin() + 1, src_[k].end(), r) != src_[k].end(); }),
            open.end());
      std::sort(open.begin(), open.end(), [&](int a, int b) {
        return nodes_[size_t(a)]->as<RangeArg>().id < nodes_[size_t(b)]->as<RangeArg>().id ||
               (nodes_[size_t(a)]->as<RangeArg>().id == nodes_[size_t(b)]->as<RangeArg>().id && a < b);
      });
      open.erase(std::unique(open.begin(), open.end()), open.end());
    }
  }

  void check_contract() {
    std::unordered_map<int64_t, const UOp*> range_ids;
    std::unordered_set<const UOp*> param_shapes;  // the Stack operand of each Param is not a value
    for (const UOp* u : nodes_)
      if (u->op == Op::Param) param_shapes.insert(u->src(0));
    for (const UOp* u : nodes_) {
      if (param_shapes.count(u)) continue;
      if (!is_kernel_op(u->op) && u != ast_)
        fail(Code::InvalidArg, "kernel interp: ", op_name(u->op), " is not a kernel-IR op");
      if (u->op != Op::Sink && u->op != Op::Store && u->op != Op::Param && u->op != Op::Index &&
          !(u->shape() && u->shape()->empty()))
        fail(Code::InvalidArg, "kernel interp: ", op_name(u->op), " is not a scalar");
      if (u->op == Op::Range) {
        auto [it, fresh] = range_ids.emplace(u->as<RangeArg>().id, u);
        if (!fresh && it->second != u)
          fail(Code::InvalidArg, "kernel interp: two Ranges share id ", u->as<RangeArg>().id);
      }
      if (u->op == Op::Param) {
        int64_t slot = u->as<ParamArg>().slot;
        if (slot < 0 || size_t(slot) >= slots_.size())
          fail(Code::InvalidArg, "kernel interp: Param slot ", slot, " but ", slots_.size(), " arrays");
        const Array& a = *slots_[size_t(slot)];
        if (!u->dtype.ptr || u->dtype.base() != a.dtype)
          fail(Code::InvalidArg, "kernel interp: Param ", slot, " is ", u->dtype.name(), ", its array ",
               a.dtype.name());
        const Shape& s = *u->shape();
        if (s.size() != 1 || !s[0].is_const() || size_t(s[0].value) != a.numel())
          fail(Code::InvalidArg, "kernel interp: Param ", slot, " has shape ", shape_str(s), ", its array ", a.numel(),
               " elements");
      }
      if (u->op == Op::Load || u->op == Op::Store) {
        if (u->src(0)->op != Op::Index || u->src(0)->src(0)->op != Op::Param)
          fail(Code::InvalidArg, "kernel interp: ", op_name(u->op), " address is not Index(Param, ...)");
      }
      if (u->op == Op::Load && u->nsrc() == 2) fail(Code::InvalidArg, "kernel interp: Load with an alt but no gate");
    }
  }

  void bind(int r, int64_t v) {
    range_val_[size_t(r)] = v;
    range_set_[size_t(r)] = ++clock_;
    bound_[size_t(r)] = 1;
  }

  int64_t bound_of(int range) { return int64_t(eval(src_[size_t(range)][0]).i); }

  void loop(int store, const std::vector<int>& loops, size_t depth) {
    if (depth == loops.size()) return do_store(store);
    int r = loops[depth];
    int64_t n = bound_of(r);
    for (int64_t i = 0; i < n; i++) {
      bind(r, i);
      loop(store, loops, depth + 1);
    }
    bound_[size_t(r)] = 0;
  }

  // (array slot, element) of an Index(Param, idx).
  std::pair<size_t, int64_t> address(int index) {
    size_t slot = size_t(nodes_[size_t(index)]->src(0)->as<ParamArg>().slot);
    return {slot, int64_t(eval(src_[size_t(index)][1]).i)};
  }

  void check_bounds(const char* what, size_t slot, int64_t k) {
    if (k < 0 || size_t(k) >= slots_[slot]->numel())
      fail(Code::InvalidArg, "kernel interp: ", what, " of element ", k, " of slot ", slot, " (", slots_[slot]->numel(),
           " elements) is out of bounds");
  }

  void do_store(int store) {
    const std::vector<int>& src = src_[size_t(store)];
    if (src.size() == 3 && eval(src[2]).i == 0) return;
    auto [slot, k] = address(src[0]);
    check_bounds("store", slot, k);
    Val v = eval(src[1]);
    if (!written_.insert({slot, k}).second)
      fail(Code::InvalidArg, "kernel interp: element ", k, " of slot ", slot, " is stored twice by one Store");
    if (stored_) {
      auto& flags = (*stored_)[slot];
      if (flags[size_t(k)])
        fail(Code::InvalidArg, "kernel interp: element ", k, " of slot ", slot, " was stored before");
      flags[size_t(k)] = 1;
    }
    write_elem(*slots_[slot], size_t(k), v);
  }

  Val eval(int n) {
    size_t k = size_t(n);
    if (at_[k] && fresh(k)) return val_[k];
    Val v = compute(n);
    val_[k] = v;
    at_[k] = ++clock_;
    return v;
  }

  // The cached value of node k still holds: every range it depends on is bound and unchanged.
  bool fresh(size_t k) const {
    for (int r : open_[k])
      if (!bound_[size_t(r)] || range_set_[size_t(r)] > at_[k]) return false;
    return true;
  }

  Val compute(int n) {
    const UOp* u = nodes_[size_t(n)];
    const std::vector<int>& src = src_[size_t(n)];
    Val r;
    switch (u->op) {
      case Op::Const:
        if (u->dtype.is_float())
          r.f = u->holds<double>() ? u->as<double>() : double(u->as<int64_t>());
        else
          r.i = u->const_int();
        return r;
      case Op::DefineVar: {
        const VarArg& v = u->as<VarArg>();
        auto it = vars_.find(v.name);
        if (it == vars_.end()) fail(Code::InvalidArg, "kernel interp: variable ", v.name, " is not bound");
        if (it->second < v.min || it->second > v.max)
          fail(Code::InvalidArg, "kernel interp: ", v.name, " = ", it->second, " is outside [", v.min, ", ", v.max,
               "]");
        r.i = it->second;
        return r;
      }
      case Op::Range:
        if (!bound_[size_t(n)])
          fail(Code::InvalidArg, "kernel interp: Range ", u->as<RangeArg>().id, " used outside its loop");
        r.i = range_val_[size_t(n)];
        return r;
      case Op::Load: {
        if (src.size() == 3 && eval(src[2]).i == 0) return eval(src[1]);
        auto [slot, k] = address(src[0]);
        check_bounds("load", slot, k);
        return read_elem(*slots_[slot], size_t(k));
      }
      case Op::Reduce:
        return reduce(n);
      case Op::Where:
        return eval(src[0]).i != 0 ? eval(src[1]) : eval(src[2]);
      case Op::Cast:
        return cast_val(u->src(0)->dtype, u->dtype, eval(src[0]));
      case Op::Bitcast:
        return bitcast_val(u->src(0)->dtype, u->dtype, eval(src[0]));
      default:
        break;
    }
    if (!is_elementwise(u->op) || u->op == Op::Threefry)
      fail(Code::Unsupported, "kernel interp: cannot evaluate ", op_name(u->op));
    Val x[3];
    for (size_t k = 0; k < src.size(); k++) x[k] = eval(src[k]);
    DType in = u->src(0)->dtype;
    if (is_comparison(u->op)) {
      r.i = in.is_float() ? compare(u->op, x[0].f, x[1].f) : compare(u->op, x[0].i, x[1].i);
    } else if (u->dtype.is_float()) {
      double f[3] = {x[0].f, x[1].f, x[2].f};
      r.f = round_float(u->dtype, float_op(u->op, f));
    } else {
      i128 i[3] = {x[0].i, x[1].i, x[2].i};
      r.i = int_op(u->op, i, u->dtype);
    }
    return r;
  }

  // Accumulates in double (floats) or exactly with wrapping (ints), like the oracle's Reduce.
  Val reduce(int n) {
    const UOp* u = nodes_[size_t(n)];
    Op op = u->as<ReduceArg>().op;
    DType dt = u->dtype;
    std::vector<int> ranges(src_[size_t(n)].begin() + 1, src_[size_t(n)].end());
    for (int r : ranges)
      if (bound_[size_t(r)])
        fail(Code::InvalidArg, "kernel interp: Reduce over Range ", nodes_[size_t(r)]->as<RangeArg>().id,
             " that is already bound");
    Val acc;
    if (dt.is_float())
      acc.f = op == Op::Add ? 0.0 : op == Op::Mul ? 1.0 : -INFINITY;
    else
      acc.i = op == Op::Add ? 0 : op == Op::Mul ? 1 : dt.int_min();
    auto combine = [&](Val v) {
      if (dt.is_float()) {
        if (op == Op::Add)
          acc.f += v.f;
        else if (op == Op::Mul)
          acc.f *= v.f;
        else
          acc.f = std::isnan(acc.f) || std::isnan(v.f) ? kNaN : std::max(acc.f, v.f);
      } else if (op == Op::Add) {
        acc.i = wrap_int(dt, acc.i + v.i);
      } else if (op == Op::Mul) {
        acc.i = wrap_mul(dt, acc.i, v.i);
      } else {
        acc.i = std::max(acc.i, v.i);
      }
    };
    // odometer over the ranges (bounds evaluated outside them)
    std::vector<int64_t> bounds;
    for (int r : ranges) bounds.push_back(bound_of(r));
    bool empty = std::any_of(bounds.begin(), bounds.end(), [](int64_t b) { return b <= 0; });
    if (!empty) {
      std::vector<int64_t> at(ranges.size(), 0);
      for (size_t k = 0; k < ranges.size(); k++) bind(ranges[k], 0);
      for (;;) {
        combine(eval(src_[size_t(n)][0]));
        size_t k = ranges.size();
        while (k-- > 0) {
          if (++at[k] < bounds[k]) {
            bind(ranges[k], at[k]);
            break;
          }
          at[k] = 0;
          bind(ranges[k], 0);
        }
        if (k == size_t(-1)) break;
      }
      for (int r : ranges) bound_[size_t(r)] = 0;
    }
    if (dt.is_float()) acc.f = round_float(dt, acc.f);
    return acc;
  }

  struct PairHash {
    size_t operator()(const std::pair<size_t, int64_t>& p) const {
      return std::hash<int64_t>()(p.second) * 31 + p.first;
    }
  };

  const UOp* ast_;
  std::span<Array* const> slots_;
  const VarValues& vars_;
  std::vector<std::vector<uint8_t>>* stored_;
  std::vector<const UOp*> nodes_;
  std::unordered_map<const UOp*, int> id_;
  std::vector<std::vector<int>> src_;   // source node numbers
  std::vector<std::vector<int>> open_;  // ranges each node depends on, by range id
  std::vector<Val> val_;                // last value
  std::vector<uint64_t> at_;            // clock when val_ was computed (0: never)
  std::vector<int64_t> range_val_;      // Range nodes: the loop variable
  std::vector<uint64_t> range_set_;     // Range nodes: clock of the last assignment
  std::vector<uint8_t> bound_;          // Range nodes: inside its loop now
  uint64_t clock_ = 0;
  std::unordered_set<std::pair<size_t, int64_t>, PairHash> written_;
};

}  // namespace

void run_kernel(const UOp* ast, std::span<Array* const> slots, const VarValues& vars,
                std::vector<std::vector<uint8_t>>* stored) {
  if (ast == nullptr) fail(Code::InvalidArg, "kernel interp: null kernel");
  KernelRunner(ast, slots, vars, stored).run();
}

std::vector<Array> run_schedule(const Schedule& s, const std::vector<Array>& inputs, const VarValues& vars) {
  std::vector<Array> bufs;
  std::vector<std::vector<uint8_t>> stored;
  for (const ScheduleBuffer& b : s.buffers) {
    if (b.kind == ScheduleBuffer::Kind::Input) {
      if (b.index < 0 || size_t(b.index) >= inputs.size())
        fail(Code::InvalidArg, "kernel interp: no data for input ", b.index);
      Array a = inputs[size_t(b.index)];
      if (a.dtype != b.dtype || int64_t(a.numel()) != b.size)
        fail(Code::InvalidArg, "kernel interp: input ", b.index, " is ", a.str(0), ", the schedule wants ", b.size,
             " x ", b.dtype.name());
      a.shape = {b.size};
      bufs.push_back(std::move(a));
      stored.emplace_back(size_t(b.size), 1);  // inputs hold data already
    } else {
      bufs.push_back(Array::zeros(b.dtype, {b.size}));
      stored.emplace_back(size_t(b.size), 0);
    }
  }
  for (const ScheduledKernel& k : s.kernels) {
    std::vector<Array*> slots;
    std::vector<std::vector<uint8_t>> flags;
    for (int b : k.buffers) {
      if (b < 0 || size_t(b) >= bufs.size()) fail(Code::InvalidArg, "kernel interp: kernel names buffer ", b);
      slots.push_back(&bufs[size_t(b)]);
      flags.push_back(std::vector<uint8_t>(stored[size_t(b)].size(), 0));
    }
    run_kernel(k.ast, slots, vars, &flags);
    for (size_t slot = 0; slot < k.buffers.size(); slot++) {
      auto& into = stored[size_t(k.buffers[slot])];
      for (size_t e = 0; e < into.size(); e++) {
        if (!flags[slot][e]) continue;
        if (into[e])
          fail(Code::InvalidArg, "kernel interp: element ", e, " of buffer ", k.buffers[slot],
               " is stored by two kernels (or into an input)");
        into[e] = 1;
      }
    }
  }
  std::vector<Array> out;
  for (size_t b = 0; b < s.buffers.size(); b++) {
    const ScheduleBuffer& sb = s.buffers[b];
    if (sb.kind == ScheduleBuffer::Kind::Input) continue;
    const Shape& shape = *sb.source->shape();
    bool is_static = shape_numel(shape).has_value();
    if (is_static) {
      // every element of a statically shaped value must have been computed by some kernel
      for (size_t e = 0; e < stored[b].size(); e++)
        if (!stored[b][e])
          fail(Code::InvalidArg, "kernel interp: element ", e, " of buffer ", b, " (", op_name(sb.source->op),
               ") was never stored");
    }
    if (sb.kind != ScheduleBuffer::Kind::Output) continue;
    Array a = bufs[b];
    if (is_static) {
      a.shape.clear();
      for (const Dim& d : shape) a.shape.push_back(d.value);
    }
    if (size_t(sb.index) != out.size()) fail(Code::Internal, "kernel interp: outputs out of order");
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace sn::oracle
