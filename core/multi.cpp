#include "core/multi.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/tensor/tensor.h"
#include "core/util/error.h"

namespace sn {

bool spans_devices(std::span<const UOp* const> roots) {
  for (const UOp* u : toposort(roots)) {
    if (u->op == Op::Copy || u->op == Op::Replicated) return true;
    if (u->device().tuple) return true;
  }
  return false;
}

namespace {

// Where a value of the user's graph lives after lowering: one node per device.
struct Placed {
  std::vector<const UOp*> parts;  // one per device of `devs`; unplaced: the node itself
  std::vector<std::string> devs;  // canonical device names; empty: no device (constants, shapes)
  bool tuple = false;             // on an n-tuple device
  int axis = -1;                  // the shard axis (tuple only), -1: replicated
  bool unplaced() const { return devs.empty(); }
};

std::vector<int64_t> shape_of(const UOp* u) {
  if (!u->shape()) fail(Code::InvalidArg, "multi-device: ", op_name(u->op), " %", u->id, " has no shape");
  std::vector<int64_t> s;
  for (const Dim& d : *u->shape()) {
    if (!d.is_const())
      fail(Code::Unsupported, "multi-device programs need static shapes: ", op_name(u->op), " %", u->id,
           " has the symbolic shape ", shape_str(*u->shape()));
    s.push_back(d.value);
  }
  return s;
}

// Axis `a` of a rank-`rank` tensor (negative counts from the end), checked.
size_t axis_index(const UOp* u, int64_t a, size_t rank) {
  int64_t k = a < 0 ? a + int64_t(rank) : a;
  if (k < 0 || k >= int64_t(rank))
    fail(Code::InvalidArg, op_name(u->op), " %", u->id, ": axis ", a, " is out of range for rank ", rank);
  return size_t(k);
}

std::string device_list(const std::vector<std::string>& devs, bool tuple) {
  std::string s = tuple ? "(" : "";
  for (size_t i = 0; i < devs.size(); i++) s += (i ? "," : "") + devs[i];
  return tuple ? s + ")" : s;
}

class Lowering {
 public:
  Lowering(Graph& g, std::string home) : g_(g), home_(std::move(home)) {}

  const Placed& lower(const UOp* u) {
    if (auto it = done_.find(u); it != done_.end()) return it->second;
    Placed p = lower_node(u);
    return done_.emplace(u, std::move(p)).first->second;
  }

  // The value of a placed node on device `to` (a whole copy).
  const UOp* gather_to(const Placed& p, const std::string& to) {
    if (p.unplaced()) return p.parts[0];
    if (!p.tuple) return copy_to(p.parts[0], p.devs[0], to);
    if (p.axis < 0) {
      for (size_t i = 0; i < p.devs.size(); i++)
        if (p.devs[i] == to) return p.parts[i];
      return copy_to(p.parts[0], p.devs[0], to);
    }
    std::vector<const UOp*> parts;
    for (size_t i = 0; i < p.devs.size(); i++) parts.push_back(copy_to(p.parts[i], p.devs[i], to));
    return join(parts, p.axis);
  }

 private:
  const UOp* copy_to(const UOp* x, const std::string& from, const std::string& to) {
    if (from.empty() || from == to) return x;
    return g_.make(Op::Copy, x->dtype, {x}, MemArg{Device{{to}, false}, AddrSpace::Global});
  }

  // Block i of n along `axis`.
  const UOp* block(const UOp* x, int axis, size_t i, size_t n) {
    std::vector<int64_t> s = shape_of(x), off(s.size(), 0);
    int64_t len = s[size_t(axis)] / int64_t(n);
    off[size_t(axis)] = len * int64_t(i);
    s[size_t(axis)] = len;
    return shrink(g_, x, off, s);
  }

  // The parts (all on one device) joined along `axis`: each padded to the full length, summed.
  const UOp* join(const std::vector<const UOp*>& parts, int axis) {
    std::vector<int64_t> full = shape_of(parts[0]);
    int64_t total = 0;
    for (const UOp* p : parts) total += shape_of(p)[size_t(axis)];
    full[size_t(axis)] = total;
    const UOp* acc = nullptr;
    int64_t at = 0;
    for (const UOp* p : parts) {
      std::vector<int64_t> off(full.size(), 0);
      off[size_t(axis)] = at;
      at += shape_of(p)[size_t(axis)];
      const UOp* padded = pad(g_, p, off, full);
      acc = acc == nullptr ? padded : binary(g_, p->dtype.is_bool() ? Op::Or : Op::Add, acc, padded);
    }
    return acc;
  }

  // A value on n-tuple device `to`, sharded on axis 0 (the spec's Copy to a tuple).
  Placed reshard(const Placed& p, const std::vector<std::string>& to, const UOp* u) {
    std::vector<int64_t> s = shape_of(u);
    size_t n = to.size();
    if (s.empty() || s[0] % int64_t(n) != 0)
      fail(Code::InvalidArg, "Copy to ", device_list(to, true), ": axis 0 of ", dims_str(s), " does not divide among ",
           n, " devices");
    Placed out{{}, to, true, 0};
    for (size_t j = 0; j < n; j++) {
      if (p.unplaced() || !p.tuple) {
        std::string from = p.unplaced() ? "" : p.devs[0];
        out.parts.push_back(copy_to(block(p.parts[0], 0, j, n), from, to[j]));
      } else if (p.axis == 0 && p.devs == to) {
        out.parts.push_back(p.parts[j]);
      } else if (p.axis < 0) {
        size_t k = 0;
        for (size_t i = 0; i < p.devs.size(); i++)
          if (p.devs[i] == to[j]) k = i;
        out.parts.push_back(copy_to(block(p.parts[k], 0, j, n), p.devs[k], to[j]));
      } else if (p.axis > 0) {  // each source sends its piece of block j
        std::vector<const UOp*> pieces;
        for (size_t i = 0; i < p.devs.size(); i++)
          pieces.push_back(copy_to(block(p.parts[i], 0, j, n), p.devs[i], to[j]));
        out.parts.push_back(join(pieces, p.axis));
      } else {  // sharded on axis 0 over other devices: gather, then take block j
        out.parts.push_back(block(gather_to(p, to[j]), 0, j, n));
      }
    }
    return out;
  }

  const UOp* rebuild(const UOp* u, const std::vector<const UOp*>& src) {
    if (std::equal(src.begin(), src.end(), u->src().begin(), u->src().end())) return u;
    return g_.make(u->op, u->dtype, src, u->arg, u->tag);
  }

  Placed lower_node(const UOp* u) {
    if (u->op == Op::Buffer) {
      const Device& d = u->as<BufferArg>().device;
      if (d.tuple)
        fail(Code::Unsupported, "multi-device: Buffer %", u->id, " is on the n-tuple device ", d.str(),
             ": make the input on one device and shard it (sn_tensor_shard)");
      return Placed{{u}, {d.null() ? home_ : canonical_device_name(d.names[0])}, false, -1};
    }
    // Other nodes that name their own device (a kernel's Param, a Load or Stage of memory) do not
    // belong in a tensor graph on an n-tuple device: lowered as they are, every step would still
    // span the devices (and compile_multi recurse on it without end: libFuzzer, a Param on
    // (CPU:0,CPU:1) passed to sn_compile).
    if ((u->op == Op::Param || u->op == Op::Load || u->op == Op::Stage) && u->device().tuple)
      fail(Code::InvalidArg, "multi-device: ", op_name(u->op), " %", u->id, " names the n-tuple device ",
           u->device().str(),
           "; only inputs are placed on devices (make the input on one device and shard it with "
           "sn_tensor_shard)");
    std::vector<const Placed*> ps;
    for (const UOp* s : u->src()) ps.push_back(&lower(s));

    if (u->op == Op::Copy) {
      const Device* d = std::get_if<MemArg>(&u->arg) ? &u->as<MemArg>().device : nullptr;
      if (d == nullptr || d->null()) return *ps[0];
      std::vector<std::string> to;
      for (const std::string& nm : d->names) to.push_back(canonical_device_name(nm));
      if (d->tuple) return reshard(*ps[0], to, u);
      return Placed{{gather_to(*ps[0], to[0])}, {to[0]}, false, -1};
    }

    // the devices and shard axis of the value operands
    const Placed* multi = nullptr;
    std::string single;
    for (size_t i = 0; i < ps.size(); i++) {
      const Placed& p = *ps[i];
      if (p.unplaced()) continue;
      if (p.tuple) {
        if (multi != nullptr && multi->devs != p.devs)
          fail(Code::InvalidArg, op_name(u->op), ": operands are on ", device_list(multi->devs, true), " and ",
               device_list(p.devs, true), " (move one with sn_tensor_to)");
        if (multi != nullptr && multi->axis >= 0 && p.axis >= 0 && multi->axis != p.axis)
          fail(Code::InvalidArg, op_name(u->op), ": operands on ", device_list(p.devs, true),
               " are sharded on different axes (", multi->axis, " and ", p.axis, ")");
        if (multi == nullptr || multi->axis < 0) multi = &p;
      } else {
        if (!single.empty() && single != p.devs[0])
          fail(Code::InvalidArg, op_name(u->op), ": operands are on ", single, " and ", p.devs[0],
               " (move one with sn_tensor_to)");
        single = p.devs[0];
      }
    }
    if (multi != nullptr && !single.empty())
      fail(Code::InvalidArg, op_name(u->op), ": operands are on ", single, " and ", device_list(multi->devs, true),
           " (move one with sn_tensor_to, or shard or broadcast it)");

    if (multi == nullptr) {  // one device or none: the node itself over lowered sources
      std::vector<const UOp*> src;
      for (const Placed* p : ps) src.push_back(p->parts[0]);
      const UOp* r = rebuild(u, src);
      if (u->op == Op::Replicated) {
        std::vector<int64_t> s = shape_of(u->src(0)), off(s.size(), 0);
        for (int64_t a : u->as<std::vector<int64_t>>()) s[axis_index(u, a, s.size())] = 1;
        r = shrink(g_, src[0], off, s);
      }
      if (single.empty()) return Placed{{r}, {}, false, -1};
      return Placed{{r}, {single}, false, -1};
    }
    return lower_sharded(u, ps, *multi);
  }

  // A node with an operand on the n-tuple device of `m`.
  Placed lower_sharded(const UOp* u, const std::vector<const Placed*>& ps, const Placed& m) {
    const size_t n = m.devs.size();
    const int a = m.axis;
    const std::vector<int64_t> full = shape_of(u);
    Placed out{{}, m.devs, true, a};
    // operand k's part for device i: a replicated (or device-less) operand is cut to the block
    // the sharded ones hold
    auto part = [&](size_t k, size_t i) -> const UOp* {
      const Placed& p = *ps[k];
      const UOp* x = p.unplaced() ? p.parts[0] : p.parts[i];
      if (a >= 0 && (p.unplaced() || p.axis < 0) && x->shape() && x->shape()->size() == full.size() &&
          shape_of(x)[size_t(a)] == full[size_t(a)] && full[size_t(a)] != 1)
        return block(x, a, i, n);
      return x;
    };
    auto local_shape = [&](std::vector<int64_t> s, int axis) {
      if (axis >= 0) s[size_t(axis)] /= int64_t(n);
      return s;
    };
    const Op op = u->op;
    if (is_elementwise(op) || op == Op::Cast || op == Op::Bitcast || op == Op::Contiguous ||
        op == Op::ContiguousBackward || op == Op::Detach) {
      for (size_t i = 0; i < n; i++) {
        std::vector<const UOp*> src;
        for (size_t k = 0; k < ps.size(); k++) src.push_back(part(k, i));
        out.parts.push_back(rebuild(u, src));
      }
      return out;
    }
    if (op == Op::Permute || op == Op::Flip) {
      const auto& arg = u->as<std::vector<int64_t>>();
      if (arg.size() != full.size())
        fail(Code::InvalidArg, op_name(op), " %", u->id, ": ", arg.size(), " entries for rank ", full.size());
      if (op == Op::Flip && a >= 0 && arg[size_t(a)] != 0)
        fail(Code::Unsupported, "Flip of the shard axis ", a, " of a tensor on ", device_list(m.devs, true));
      if (op == Op::Permute && a >= 0)
        for (size_t k = 0; k < arg.size(); k++)
          if (arg[k] == a) out.axis = int(k);
      for (size_t i = 0; i < n; i++) out.parts.push_back(g_.make(op, u->dtype, {m.parts[i]}, arg));
      return out;
    }
    if (op == Op::Reshape || op == Op::Expand) {
      if (op == Op::Reshape && a >= 0) {
        out.axis = u->axis();
        if (out.axis < 0)
          fail(Code::InvalidArg, "reshape of ", dims_str(shape_of(u->src(0))), " sharded on axis ", a, " over ",
               device_list(m.devs, true), " to ", dims_str(full), " splits the devices' blocks");
      }
      for (size_t i = 0; i < n; i++) {
        std::vector<int64_t> ls = local_shape(full, out.axis);
        out.parts.push_back(op == Op::Reshape ? reshape(g_, m.parts[i], ls) : expand(g_, m.parts[i], ls));
      }
      return out;
    }
    if (op == Op::Pad || op == Op::Shrink) {
      if (u->nsrc() != 3) fail(Code::InvalidArg, op_name(op), " %", u->id, " needs offsets and sizes");
      Shape off = as_shape(u->src(1)), sz = as_shape(u->src(2));
      std::vector<int64_t> offs, sizes;
      for (const Dim& d : off) offs.push_back(d.value);
      for (const Dim& d : sz) sizes.push_back(d.value);
      std::vector<int64_t> in = shape_of(u->src(0));
      if (offs.size() != in.size() || sizes.size() != in.size())
        fail(Code::InvalidArg, op_name(op), " %", u->id, ": offsets and sizes need one entry per axis");
      if (a >= 0 && (offs[size_t(a)] != 0 || sizes[size_t(a)] != in[size_t(a)]))
        fail(Code::Unsupported, op_name(op), " along the shard axis ", a, " of a tensor on ", device_list(m.devs, true),
             " (gather it first)");
      for (size_t i = 0; i < n; i++) {
        std::vector<int64_t> ls = local_shape(sizes, a);
        out.parts.push_back(op == Op::Pad ? pad(g_, m.parts[i], offs, ls) : shrink(g_, m.parts[i], offs, ls));
      }
      return out;
    }
    if (op == Op::Reduce) {
      const ReduceArg& r = u->as<ReduceArg>();
      bool over_shard = false;
      for (int64_t x : r.axes)
        if (int(axis_index(u, x, full.size())) == a) over_shard = true;
      std::vector<const UOp*> partial;
      for (size_t i = 0; i < n; i++) partial.push_back(g_.make(Op::Reduce, u->dtype, {m.parts[i]}, r));
      if (!over_shard) {
        out.parts = partial;
        return out;
      }
      // partial reduces, copied to every device and combined there: replicated
      out.axis = -1;
      for (size_t j = 0; j < n; j++) {
        const UOp* acc = partial[j];
        for (size_t i = 0; i < n; i++)
          if (i != j) acc = binary(g_, r.op, acc, copy_to(partial[i], m.devs[i], m.devs[j]));
        out.parts.push_back(acc);
      }
      return out;
    }
    if (op == Op::Replicated) {
      std::vector<int64_t> in = shape_of(u->src(0)), off(in.size(), 0), ls = local_shape(in, a);
      for (int64_t x : u->as<std::vector<int64_t>>()) {
        size_t k = axis_index(u, x, in.size());
        if (int(k) == a && in[k] != int64_t(n))
          fail(Code::InvalidArg, "Replicated: shard axis ", a, " of ", dims_str(in), " has ", in[k],
               " elements; one per device (", n, ") is needed");
        ls[k] = 1;
      }
      out.axis = -1;
      for (size_t i = 0; i < n; i++) out.parts.push_back(shrink(g_, m.parts[i], off, ls));
      return out;
    }
    fail(Code::Unsupported, op_name(op), " of a tensor on the n-tuple device ", device_list(m.devs, true),
         " is not supported (gather it to one device with sn_tensor_to first)");
  }

  Graph& g_;
  std::string home_;
  std::unordered_map<const UOp*, Placed> done_;
};

// The Buffer behind an input tensor (its views and copies looked through), or null.
const UOp* input_buffer_of(const UOp* t) {
  while (t->op == Op::Copy || t->op == Op::Shrink || t->op == Op::Reshape) t = t->src(0);
  return t->op == Op::Buffer ? t : nullptr;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::shared_ptr<const Program> compile_multi(Runtime& rt, Graph& g, std::span<const UOp* const> outputs,
                                             std::shared_ptr<ComputeDevice> device, const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  if (!device) device = rt.device();
  if (!options.effects.empty())
    fail(Code::Unsupported, "compile: in-place updates (effects) in a program that spans devices are not supported");
  if (!options.kernel_opts.empty())
    fail(Code::Unsupported, "compile: kernel_opts in a program that spans devices are not supported");
  const std::string home = canonical_device_name(device->name());

  // the program's inputs, in the caller's order
  std::vector<TensorSpec> in_specs;
  std::unordered_map<const UOp*, int> input_of;  // Buffer -> input number
  const std::vector<const UOp*> nodes = toposort(outputs);
  if (!options.inputs.empty()) {
    for (size_t i = 0; i < options.inputs.size(); i++) {
      const UOp* t = options.inputs[i];
      if (t == nullptr) fail(Code::InvalidArg, "compile: input ", i, " is null");
      const UOp* buf = input_buffer_of(t);
      if (buf == nullptr)
        fail(Code::InvalidArg, "compile: input ", i, " is a ", op_name(t->op), ", not an input tensor");
      if (!input_of.emplace(buf, int(i)).second)
        fail(Code::InvalidArg, "compile: input ", i, " (Buffer %", buf->id, ") is listed twice");
      while (t->op == Op::Copy) t = t->src(0);
      in_specs.push_back(TensorSpec{buf->dtype, shape_of(t), {}});
    }
  } else {
    std::vector<const UOp*> bufs;
    std::unordered_map<const UOp*, std::vector<const UOp*>> views;
    for (const UOp* u : nodes) {
      if (u->op == Op::Buffer) bufs.push_back(u);
      if (u->op == Op::Reshape && u->src(0)->op == Op::Buffer) views[u->src(0)].push_back(u);
    }
    std::sort(bufs.begin(), bufs.end(),
              [](const UOp* x, const UOp* y) { return x->as<BufferArg>().id < y->as<BufferArg>().id; });
    for (const UOp* b : bufs) {
      input_of.emplace(b, int(in_specs.size()));
      auto it = views.find(b);
      in_specs.push_back(TensorSpec{
          b->dtype, it != views.end() && it->second.size() == 1 ? shape_of(it->second[0]) : shape_of(b), {}});
    }
  }
  for (const UOp* u : nodes)
    if (u->op == Op::Buffer && !input_of.count(u))
      fail(Code::InvalidArg, "compile: the outputs read Buffer %", u->id, " (", u->dtype.name(), ", ",
           u->as<BufferArg>().size, " elements), which the input list does not name");
    else if (u->op == Op::DefineVar)
      fail(Code::Unsupported, "compile: launch-time variables in a program that spans devices are not supported");

  // lower: every root on the program's device
  Lowering low(g, home);
  std::vector<const UOp*> roots;
  for (const UOp* o : outputs) {
    shape_of(o);
    roots.push_back(low.gather_to(low.lower(o), home));
  }

  // split: the device and wave of every node of the lowered graph
  const std::vector<const UOp*> lnodes = toposort(roots);
  std::unordered_map<const UOp*, std::string> dev;  // "" for nodes with no device
  std::unordered_map<const UOp*, int> wave;
  for (const UOp* u : lnodes) {
    std::string d;
    int w = -1;
    if (u->op == Op::Buffer) {
      const Device& bd = u->as<BufferArg>().device;
      d = bd.null() ? home : canonical_device_name(bd.names[0]);
    } else if (u->op == Op::Copy) {
      d = u->as<MemArg>().device.names[0];
      w = wave.at(u->src(0)) + 1;
    } else {
      for (const UOp* s : u->src()) {
        const std::string& sd = dev.at(s);
        if (sd.empty()) continue;
        if (!d.empty() && d != sd)
          fail(Code::Internal, "multi-device lowering: ", op_name(u->op), " %", u->id, " reads values on ", d, " and ",
               sd);
        d = sd;
        w = std::max(w, wave.at(s));
      }
      if (!d.empty()) w = std::max(w, 0);
    }
    dev[u] = d;
    wave[u] = w;
  }
  std::unordered_set<const UOp*> root_set(roots.begin(), roots.end());
  auto in_step = [&](const UOp* u) {
    return u->op != Op::Buffer && u->op != Op::Copy && (!dev.at(u).empty() || root_set.count(u));
  };
  auto step_dev = [&](const UOp* u) { return dev.at(u).empty() ? home : dev.at(u); };
  auto step_wave = [&](const UOp* u) { return std::max(wave.at(u), 0); };

  // steps, by (wave, device) in order of first appearance
  struct StepBuild {
    std::string device;
    int wave;
    std::vector<const UOp*> members, outputs;
  };
  std::vector<StepBuild> steps;
  std::map<std::pair<int, std::string>, size_t> step_of_key;
  std::unordered_map<const UOp*, size_t> step_of;
  for (const UOp* u : lnodes) {
    if (!in_step(u)) continue;
    auto key = std::make_pair(step_wave(u), step_dev(u));
    auto [it, fresh] = step_of_key.emplace(key, steps.size());
    if (fresh) steps.push_back(StepBuild{key.second, key.first, {}, {}});
    steps[it->second].members.push_back(u);
    step_of[u] = it->second;
  }
  // a member is a step output when a root, copied, or read by another step
  std::unordered_set<const UOp*> exported(roots.begin(), roots.end());
  for (const UOp* u : lnodes)
    for (const UOp* s : u->src())
      if (step_of.count(s) && (u->op == Op::Copy || !step_of.count(u) || step_of.at(u) != step_of.at(s)))
        exported.insert(s);
  for (StepBuild& st : steps)
    for (const UOp* u : st.members)
      if (exported.count(u)) st.outputs.push_back(u);

  auto plan = std::make_shared<MultiPlan>();
  std::map<std::string, std::shared_ptr<ComputeDevice>> devices;
  auto open = [&](const std::string& name) {
    auto it = devices.find(name);
    if (it == devices.end()) it = devices.emplace(name, rt.devices().open(name)).first;
    return it->second;
  };
  devices.emplace(home, device);
  auto new_value = [&](const std::string& d, DType dt, std::vector<int64_t> shape, int input) {
    plan->values.push_back(MultiPlan::Value{open(d), dt, std::move(shape), input});
    return int(plan->values.size() - 1);
  };
  std::map<int, MultiPlan::Wave> waves;
  // values: the inputs (on the program's device), their copies to other devices, copies, step outputs
  std::vector<int> input_value;
  for (size_t i = 0; i < in_specs.size(); i++)
    input_value.push_back(new_value(home, in_specs[i].dtype, in_specs[i].shape, int(i)));
  std::map<std::pair<const UOp*, std::string>, int> value_at;  // (node, device) -> value
  std::unordered_map<const UOp*, int> produced;                // step output -> value
  std::function<int(const UOp*, const std::string&)> value_of = [&](const UOp* u, const std::string& d) -> int {
    if (auto it = value_at.find({u, d}); it != value_at.end()) return it->second;
    int v;
    if (u->op == Op::Buffer) {
      int in = input_value[size_t(input_of.at(u))];
      if (d == home) return value_at[{u, d}] = in;
      v = new_value(d, u->dtype, plan->values[size_t(in)].shape, -1);
      waves[0].copies.push_back({in, v});
    } else if (u->op == Op::Copy) {
      int src = value_of(u->src(0), dev.at(u->src(0)).empty() ? home : dev.at(u->src(0)));
      v = new_value(d, u->dtype, shape_of(u), -1);
      waves[wave.at(u)].copies.push_back({src, v});
    } else {
      v = produced.at(u);
    }
    return value_at[{u, d}] = v;
  };
  for (StepBuild& st : steps)
    for (const UOp* u : st.outputs) produced[u] = new_value(st.device, u->dtype, shape_of(u), -1);

  // compile every step: its members over fresh inputs for what it reads from outside
  CompileOptions sub = options;
  sub.effects.clear();
  sub.inputs.clear();
  auto p = std::make_shared<Program>();
  uint64_t hash = 0x6d756c7469;
  for (StepBuild& st : steps) {
    std::unordered_map<const UOp*, const UOp*> memo;
    std::vector<int> in_values;
    std::vector<const UOp*> fresh_inputs;
    std::unordered_set<const UOp*> members(st.members.begin(), st.members.end());
    auto external = [&](const UOp* s) -> const UOp* {
      int v = value_of(s, st.device);
      const MultiPlan::Value& val = plan->values[size_t(v)];
      const UOp* t = input(g, val.dtype, val.shape, st.device);
      in_values.push_back(v);
      fresh_inputs.push_back(t);
      return reshape(g, t, shape_of(s));
    };
    std::function<const UOp*(const UOp*)> build = [&](const UOp* u) -> const UOp* {
      if (auto it = memo.find(u); it != memo.end()) return it->second;
      const UOp* r;
      if (u->op == Op::Buffer || u->op == Op::Copy || (step_of.count(u) && !members.count(u))) {
        r = external(u);
      } else if (!members.count(u) && dev.at(u).empty()) {
        r = u;  // constants and shapes: the same in every step
      } else {
        std::vector<const UOp*> src;
        for (const UOp* s : u->src()) src.push_back(build(s));
        r = std::equal(src.begin(), src.end(), u->src().begin(), u->src().end())
                ? u
                : g.make(u->op, u->dtype, src, u->arg, u->tag);
      }
      return memo[u] = r;
    };
    std::vector<const UOp*> outs;
    std::vector<int> out_values;
    for (const UOp* u : st.outputs) {
      outs.push_back(build(u));
      out_values.push_back(produced.at(u));
    }
    sub.inputs = fresh_inputs;
    std::shared_ptr<const Program> sp;
    if (fresh_inputs.empty()) sub.inputs.clear();
    if (spans_devices(outs))  // compile_program would come back here with the same graph
      fail(Code::Internal, "multi-device: the part of the program on ", st.device, " still spans devices");
    sp = compile_program(rt, g, outs, open(st.device), sub);
    if (!sp->vars.empty())
      fail(Code::Unsupported, "compile: launch-time variables in a program that spans devices are not supported");
    hash = hash_combine(hash, sp->hash);
    for (const Launch& l : sp->launches) {
      Launch copy = l;
      copy.buffers.clear();
      copy.var_index.clear();
      p->launches.push_back(std::move(copy));
    }
    waves[st.wave].steps.push_back(MultiPlan::Step{sp, in_values, out_values});
  }
  for (const UOp* r : roots) plan->outputs.push_back(value_of(r, home));
  for (auto& [w, wv] : waves) plan->waves.push_back(std::move(wv));

  p->device = device;
  p->multi = plan;
  p->hash = hash;
  p->inputs = in_specs;
  for (size_t i = 0; i < in_specs.size(); i++) p->input_slots.push_back(int(i));
  for (const UOp* o : outputs) p->outputs.push_back(TensorSpec{o->dtype, shape_of(o), {}});
  p->debug = options.debug >= 0 ? options.debug : rt.debug();
  p->compile_ms = ms_since(t0);
  return p;
}

}  // namespace sn
