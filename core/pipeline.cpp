// The pipeline, stage by stage, as in the spec's table (DESIGN.md §2):
//
//   stage        in                  out                               where
//   check        tensor graph        (errors only)                     here
//   schedule     tensor graph        kernels over buffers, in order    core/schedule (Callify, Rangeify, split)
//   lower        kernel AST          Linear                            lower_kernel below, one line per stage:
//                                                                      optimize (core/opt), launch, expand,
//                                                                      simplify, reduce, parallel, isel, linearize
//                                                                      (core/codegen; opt builds on codegen)
//   compile      Linear              compiled kernel                   the device's backend (render + compile),
//                                                                      overlapping lower: a kernel starts on
//                                                                      another core once lowered; small ones
//                                                                      batch (compile_together)
//   precompute   launch list         input-independent launches run    core/runtime/precompute.cpp
//                                    once; what they wrote = constants;
//                                    the constants get device memory
//   plan         launch list         intermediate arena offsets        plan_arena (core/runtime/program.cpp)
//
// Each stage can be dumped (CompileOptions::on_stage / keep_stages, SN_DEBUG >= 3).
#include "core/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/multi.h"
#include "core/opt/opt.h"
#include "core/opt/search.h"
#include "core/runtime/disk_cache.h"
#include "core/runtime/precompute.h"
#include "core/schedule/finite.h"
#include "core/schedule/schedule.h"
#include "core/tensor/tensor.h"
#include "core/util/checked.h"
#include "core/util/error.h"
#include "core/util/parallel.h"

namespace sn {

namespace {

// A kernel of at least kAloneInstructions (linearized) compiles on its own: the LLVM fixed cost
// per module (about 4M instructions, 1.3 ms: the small CNN's six kernels took 229M as one module,
// 242M as four, 249M as six; 2.2M of it was building the codegen pipeline, which each target
// machine now keeps) is then a small part of its compile (a 142-instruction softmax's codegen: 21M). Smaller ones
// (elementwise kernels, weight packing, pools: 24-67 instructions in ResNet-18) are batched up to kBatchInstructions,
// about 25 ms of LLVM time, so that batches still spread over the cores.
constexpr size_t kAloneInstructions = 128;
constexpr size_t kBatchInstructions = 512;
constexpr size_t kNodesPerAstNode = 13;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Collects and prints stage dumps: kept when asked (keep_stages), printed by SN_DEBUG level
// (3: optimized ASTs, 4: source, 5: linearized UOps), handed to the caller's hook.
class Dumper {
 public:
  Dumper(const CompileOptions& o, int debug) : opts_(o), debug_(debug) {}

  bool wants_graphs() const { return opts_.keep_stages || opts_.on_stage || debug_ >= 3; }

  void graph(std::string_view stage, int kernel, const UOp* root) {
    if (opts_.on_stage) opts_.on_stage(stage, kernel, root);
    bool print = (debug_ >= 3 && stage == "optimized") || (debug_ >= 5 && stage == "linear");
    if (!opts_.keep_stages && !print) return;
    text(stage, kernel, stage == "linear" ? linear_str(root) : to_sexpr(root), print);
  }

  void text(std::string_view stage, int kernel, std::string text, bool print) {
    if (print) {
      std::fprintf(stderr, "sn: ---- %.*s%s ----\n%s%s", int(stage.size()), stage.data(),
                   kernel >= 0 ? cat(" of kernel ", kernel).c_str() : "", text.c_str(),
                   text.empty() || text.back() != '\n' ? "\n" : "");
    }
    if (opts_.keep_stages) dumps_.push_back(StageDump{std::string(stage), kernel, std::move(text), ""});
  }

  // Names each kernel's dumps: kernels[k] is the schedule's kernel k. (Stage texts look names up
  // here, not in the launches: precompute drops the launches of what it runs at compile time.)
  void name_kernels(const std::vector<std::shared_ptr<const DeviceKernel>>& kernels) {
    for (StageDump& d : dumps_)
      if (d.kernel >= 0 && size_t(d.kernel) < kernels.size()) d.kernel_name = kernels[size_t(d.kernel)]->name;
  }

  std::shared_ptr<const std::vector<StageDump>> take() {
    if (!opts_.keep_stages) return nullptr;
    return std::make_shared<const std::vector<StageDump>>(std::move(dumps_));
  }

 private:
  const CompileOptions& opts_;
  int debug_;
  std::vector<StageDump> dumps_;
};

// ---- check -------------------------------------------------------------------------------

// Everything the device cannot do that we can see before scheduling: value dtypes it cannot hold
// or compute, inputs that live on another device.
void check_graph(std::span<const UOp* const> outputs, const ComputeDevice& device) {
  for (size_t i = 0; i < outputs.size(); i++)
    if (outputs[i] == nullptr) fail(Code::InvalidArg, "compile: output ", i, " is null");
  for (const UOp* u : toposort(outputs)) {
    if (u->dtype.is_void() || u->dtype.is_index() || u->shape() == nullptr) continue;
    DType d = u->dtype.ptr ? u->dtype.base() : u->dtype.elem();
    if (std::string why = device.unsupported_dtype(d); !why.empty())
      fail(Code::Unsupported, "compile: device ", device.name(), " cannot run ", d.name(), " (", op_name(u->op), " %",
           u->id, "): ", why);
    if (u->op == Op::Buffer) {
      const Device& bd = u->as<BufferArg>().device;
      if (bd.null()) continue;  // a buffer with no device runs wherever the program does
      if (bd.tuple || canonical_device_name(bd.names[0]) != canonical_device_name(device.name()))
        fail(Code::Device, "compile: input Buffer %", u->id, " lives on ", bd.str(), ", the program is compiled for ",
             device.name(), " (make its inputs on ", device.name(), ")");
    }
  }
}

// ---- inputs in the caller's order ---------------------------------------------------------

// The launch-time variables of a schedule, sorted by name (Program::vars); one name with two
// ranges is InvalidArg.
std::vector<KernelVar> schedule_vars(const Schedule& s) {
  std::vector<KernelVar> out;
  for (const UOp* v : s.vars) {
    const VarArg& va = v->as<VarArg>();
    auto same = [&](const KernelVar& k) { return k.name == va.name; };
    auto it = std::find_if(out.begin(), out.end(), same);
    if (it == out.end())
      out.push_back(KernelVar{va.name, va.min, va.max});
    else if (it->min != va.min || it->max != va.max)
      fail(Code::InvalidArg, "compile: variable ", va.name, " has two ranges [", it->min, ", ", it->max, "] and [",
           va.min, ", ", va.max, "]");
  }
  std::sort(out.begin(), out.end(), [](const KernelVar& a, const KernelVar& b) { return a.name < b.name; });
  return out;
}

// The spec of a program input or output: a symbolic dim is -1 with its expression of `vars`.
TensorSpec spec_of(DType dtype, const UOp* t, std::span<const KernelVar> vars, const char* what) {
  TensorSpec spec{dtype, {}, {}};
  const Shape& shape = sym_shape(t, what);
  bool symbolic = false;
  for (const Dim& d : shape) {
    spec.shape.push_back(d.is_const() ? d.value : -1);
    symbolic = symbolic || !d.is_const();
  }
  if (!symbolic) return spec;
  for (const Dim& d : shape) {
    if (d.is_const()) {
      spec.sym.emplace_back(d.value);
      continue;
    }
    try {
      spec.sym.push_back(LaunchExpr::of(d.sym, vars));
    } catch (const Error& e) {
      fail(Code::Unsupported, what, ": the symbolic dim of ", shape_str(shape),
           " cannot be computed at launch: ", e.message());
    }
  }
  return spec;
}

// The Buffer behind an input tensor: the Buffer or its Reshape (input()), or a Reshape of a Shrink
// of the flat Buffer (input_sym()); null for anything else.
const UOp* input_buffer(const UOp* t) {
  if (t->op == Op::Reshape && t->src(0)->op == Op::Shrink) t = t->src(0);
  if (t->op == Op::Shrink) t = t->src(0);
  if (t->op == Op::Reshape) t = t->src(0);
  return t->op == Op::Buffer ? t : nullptr;
}

struct InputBinding {
  TensorSpec spec;
  int slot = -1;  // schedule input number, -1 when the outputs do not read it
};

std::vector<InputBinding> bind_inputs(const Schedule& s, std::span<const UOp* const> outputs,
                                      const std::vector<const UOp*>& listed, std::span<const KernelVar> vars) {
  std::unordered_map<const UOp*, int> slot_of;  // Buffer node -> schedule input number
  for (const ScheduleBuffer& b : s.buffers)
    if (b.kind == ScheduleBuffer::Kind::Input) slot_of.emplace(b.source, b.index);

  std::vector<InputBinding> out;
  if (!listed.empty()) {
    std::unordered_set<const UOp*> seen;
    for (size_t i = 0; i < listed.size(); i++) {
      const UOp* t = listed[i];
      if (t == nullptr) fail(Code::InvalidArg, "compile: input ", i, " is null");
      const UOp* buf = input_buffer(t);
      if (buf == nullptr)
        fail(Code::InvalidArg, "compile: input ", i, " is a ", op_name(t->op),
             ", not an input tensor (a Buffer, or the view input() or input_sym() makes)");
      if (!seen.insert(buf).second)
        fail(Code::InvalidArg, "compile: input ", i, " (Buffer %", buf->id, ") is listed twice");
      auto it = slot_of.find(buf);
      out.push_back({spec_of(buf->dtype, t, vars, "compile input"), it == slot_of.end() ? -1 : it->second});
    }
    for (const auto& [buf, slot] : slot_of)
      if (!seen.count(buf))
        fail(Code::InvalidArg, "compile: the outputs read Buffer %", buf->id, " (", buf->dtype.name(), ", ",
             buf->as<BufferArg>().size, " elements), which the input list does not name");
    return out;
  }

  // Creation order, and the shape the graph views each buffer with when it has exactly one.
  std::vector<const UOp*> bufs;
  for (const auto& [buf, slot] : slot_of) bufs.push_back(buf);
  std::sort(bufs.begin(), bufs.end(),
            [](const UOp* a, const UOp* b) { return a->as<BufferArg>().id < b->as<BufferArg>().id; });
  std::unordered_map<const UOp*, std::vector<const UOp*>> views;
  for (const UOp* u : toposort(outputs))
    if (u->op == Op::Reshape && u->src(0)->op == Op::Buffer) views[u->src(0)].push_back(u);
  // input_sym's views (a Reshape to symbolic dims) name the shape of their buffers first
  std::unordered_map<const UOp*, std::vector<const UOp*>> sym_views;
  for (const UOp* u : toposort(outputs))
    if (u->op == Op::Reshape && u->src(0)->op == Op::Shrink && input_buffer(u) != nullptr && !shape_numel(*u->shape()))
      sym_views[input_buffer(u)].push_back(u);
  for (const UOp* buf : bufs) {
    TensorSpec spec{buf->dtype, {buf->as<BufferArg>().size}, {}};
    auto sv = sym_views.find(buf);
    auto it = views.find(buf);
    if (sv != sym_views.end() && sv->second.size() == 1)
      spec = spec_of(buf->dtype, sv->second[0], vars, "compile input");
    else if (it != views.end() && it->second.size() == 1)
      spec = spec_of(buf->dtype, it->second[0], vars, "compile input");
    out.push_back({spec, slot_of.at(buf)});
  }
  return out;
}

// ---- memory plan --------------------------------------------------------------------------

std::string plan_memory(Program& p) {
  for (size_t l = 0; l < p.launches.size(); l++)
    for (int b : p.launches[l].buffers) {
      ProgramBuffer& pb = p.buffers[size_t(b)];
      if (pb.first_use < 0) pb.first_use = int(l);
      pb.last_use = int(l);
    }
  std::vector<size_t> bytes, ids;
  std::vector<int> first, last;
  p.unshared_bytes = 0;
  for (size_t b = 0; b < p.buffers.size(); b++) {
    const ProgramBuffer& pb = p.buffers[b];
    if (pb.role != ProgramBuffer::Role::Intermediate || pb.first_use < 0) continue;
    ids.push_back(b);
    bytes.push_back(pb.nbytes());
    first.push_back(pb.first_use);
    last.push_back(pb.last_use);
    int64_t rounded = checked_add(int64_t(pb.nbytes()), int64_t(kBufferAlignment - 1), "memory plan: bytes");
    p.unshared_bytes =
        size_t(checked_add(int64_t(p.unshared_bytes), rounded / int64_t(kBufferAlignment) * int64_t(kBufferAlignment),
                           "memory plan: unshared bytes"));
  }
  std::vector<size_t> offsets = plan_arena(bytes, first, last, kBufferAlignment, &p.arena_bytes);
  for (size_t k = 0; k < ids.size(); k++) p.buffers[ids[k]].arena_offset = offsets[k];

  std::string text;
  static const char* kRole[] = {"input", "output", "intermediate", "constant"};
  static_assert(sizeof kRole / sizeof kRole[0] == size_t(ProgramBuffer::Role::Constant) + 1);
  for (size_t b = 0; b < p.buffers.size(); b++) {
    const ProgramBuffer& pb = p.buffers[b];
    text += cat("buffer ", b, ": ", kRole[int(pb.role)], " ", pb.index, " ", pb.dtype.name(), "[", pb.size, "]");
    if (pb.first_use >= 0) text += cat(" launches ", pb.first_use, "..", pb.last_use);
    if (pb.role == ProgramBuffer::Role::Intermediate) text += cat(" arena offset ", pb.arena_offset);
    text += "\n";
  }
  text += cat("arena: ", p.arena_bytes, " bytes (", p.unshared_bytes, " without sharing)\n");
  return text;
}

std::string schedule_text(const Schedule& s) {
  static const char* kKind[] = {"input", "output", "intermediate", "constant"};
  static_assert(sizeof kKind / sizeof kKind[0] == size_t(ScheduleBuffer::Kind::Constant) + 1);
  std::string text;
  for (size_t b = 0; b < s.buffers.size(); b++)
    text += cat("buffer ", b, ": ", kKind[int(s.buffers[b].kind)], " ", s.buffers[b].index, " ",
                s.buffers[b].dtype.name(), "[", s.buffers[b].size, "]\n");
  for (size_t k = 0; k < s.kernels.size(); k++) {
    text += cat("kernel ", k, ": buffers");
    for (int b : s.kernels[k].buffers) text += cat(" ", b);
    text += "\n";
  }
  return text;
}

// A cached Program belongs to the device object it was compiled for, not to its name or target: a
// compile-only target ("CUDA", sm_90) and the GPU it describes share both, yet only one of them runs.
// The address is a safe identity: the cached Program holds its device, so it cannot be reused. (The
// device's target follows from it.)
uint64_t program_key(uint64_t schedule_hash, const ComputeDevice& device, const CompileOptions& o, int beam) {
  uint64_t h = hash_combine(schedule_hash, uint64_t(reinterpret_cast<uintptr_t>(&device)));
  h = hash_combine(h, uint64_t(o.optimize) | uint64_t(o.allow_threads) << 1 | uint64_t(beam) << 2);
  for (const auto& [id, opts] : o.kernel_opts) h = hash_combine(hash_combine(h, id), hash_arg(Arg{opts_str(opts)}));
  return h;
}

}  // namespace

std::string kernel_id_str(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

namespace {
// The calling thread's CPU time in milliseconds.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}
}  // namespace

// ---- lower: one kernel, stage by stage ------------------------------------------------------

LoweredKernel lower_kernel(Graph& g, const UOp* ast, const Target& target, const LowerOptions& opts) {
  check_kernel_ast(ast);
  LoweredKernel k;
  k.ast = ast;
  k.target = target;
  k.key = kernel_key(ast, target, opts);
  // Each stage's time runs from the end of the one before (the hook's own time excluded). It is
  // this thread's CPU time, not the wall clock: compile_program lowers while the backend compiles
  // the kernels before on every core, and the time those threads hold this one's core is theirs.
  double t0 = thread_cpu_ms();
  auto stage = [&](const char* name, const UOp* root) {
    double t1 = thread_cpu_ms();
    if (std::string_view(name) != "ast") k.stage_ms.emplace_back(name, std::max(0.0, t1 - t0));
    k.stages.emplace_back(name, root);
    if (opts.on_stage) opts.on_stage(name, root);
    t0 = thread_cpu_ms();
  };
  stage("ast", ast);
  OptResult o = optimize_kernel(g, ast, target, opts);
  stage("optimized", o.sink);
  k.opts = o.applied;
  k.name = kernel_name(o.sink);
  ParallelDims dims;
  const UOp* s = index_launch_axes(g, o.sink, target, &dims);
  // Index math simplified before expand too: its copies then substitute constants into final forms
  // (folded as they are built), and the simplify stage after it finds most addresses final instead
  // of rebuilding every load (a 3x3 convolution's lowering: 6.77M -> 6.37M instructions). What a
  // gate proves about an address is left to that stage, which sees each copy's gate anyway.
  if (opts.simplify) s = simplify_indices(g, s, /*under_gates=*/false);
  stage("launch", s);
  s = expand_kernel(g, s, LaneAccess::of(target));
  stage("expanded", s);
  if (opts.simplify) {
    s = simplify_indices(g, s);
    stage("simplified", s);
  }
  s = lower_reduces(g, s, opts.finite_params);
  stage("reduce", s);
  s = index_group_axes(g, s, target, &dims);
  stage("parallel", s);
  k.threads = dims.threads;
  s = select_instructions(g, s, target);
  stage("isel", s);
  k.linear = linearize(g, s);
  stage("linear", k.linear);
  describe_lowered(k, target, dims);
  return k;
}

std::shared_ptr<const Program> compile_program(Runtime& rt, Graph& g, std::span<const UOp* const> outputs,
                                               std::shared_ptr<ComputeDevice> device, const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  if (!device) device = rt.device();
  const int debug = options.debug >= 0 ? options.debug : rt.debug();
  Dumper dump(options, debug);
  if (outputs.empty() && options.effects.empty()) fail(Code::InvalidArg, "compile: no outputs and no effects");
  for (size_t i = 0; i < options.effects.size(); i++)
    if (options.effects[i] == nullptr) fail(Code::InvalidArg, "compile: effect ", i, " is null");
  std::vector<const UOp*> roots(outputs.begin(), outputs.end());
  roots.insert(roots.end(), options.effects.begin(), options.effects.end());
  // a graph over several devices compiles to one program per device and copies (core/multi.h)
  if (std::find(roots.begin(), roots.end(), nullptr) == roots.end() && spans_devices(roots))
    return compile_multi(rt, g, outputs, device, options);

  // check
  check_graph(roots, *device);
  if (dump.wants_graphs()) dump.graph("tensor", -1, g.sink(roots));

  // schedule: Callify + Rangeify + kernel split
  auto t_schedule = std::chrono::steady_clock::now();
  Schedule s = schedule_graph(g, outputs, options.effects,
                              ScheduleOptions{.packed_panel = device->target().packed_panel,
                                              .precomputes = device->cannot_run().empty(),
                                              .cache_bytes = device->target().all_cache_bytes()});
  const double schedule_ms = ms_since(t_schedule);
  if (options.keep_stages) dump.text("schedule", -1, schedule_text(s), false);
  const std::vector<KernelVar> vars = schedule_vars(s);
  std::vector<InputBinding> inputs = bind_inputs(s, roots, options.inputs, vars);

  auto finish = [&](std::shared_ptr<Program> p) {
    p->inputs.clear();
    p->input_slots.clear();
    for (const InputBinding& in : inputs) {
      p->inputs.push_back(in.spec);
      p->input_slots.push_back(in.slot);
    }
    p->debug = debug;
    if (!options.keep_stages) p->stages = nullptr;
    p->compile_ms = ms_since(t0);
    return std::shared_ptr<const Program>(std::move(p));
  };

  const int beam = options.beam >= 0 ? options.beam : beam_width_from_env();
  const uint64_t key = program_key(s.hash, *device, options, beam);
  if (options.use_cache && !dump.wants_graphs()) {
    if (auto hit = rt.find_program(key)) {
      if (debug >= 2)
        std::fprintf(stderr, "sn: program %016llx from the cache (%zu kernels)\n",
                     static_cast<unsigned long long>(s.hash), hit->launches.size());
      return finish(std::make_shared<Program>(*hit));
    }
  }

  auto p = std::make_shared<Program>();
  p->device = device;
  p->hash = s.hash;
  std::vector<std::string_view> constant_bytes;  // by buffer
  for (const ScheduleBuffer& b : s.buffers) {
    ProgramBuffer pb;
    pb.role = b.kind == ScheduleBuffer::Kind::Input      ? ProgramBuffer::Role::Input
              : b.kind == ScheduleBuffer::Kind::Output   ? ProgramBuffer::Role::Output
              : b.kind == ScheduleBuffer::Kind::Constant ? ProgramBuffer::Role::Constant
                                                         : ProgramBuffer::Role::Intermediate;
    // (a constant's storage is filled by precompute_constants, from the graph's bytes)
    constant_bytes.push_back(b.kind == ScheduleBuffer::Kind::Constant ? std::string_view(b.source->as<std::string>())
                                                                      : std::string_view());
    pb.dtype = b.dtype;
    pb.size = b.size;
    // nbytes() and the memory plan multiply and add byte sizes without checks of their own.
    (void)checked_bytes(b.size, b.dtype.itemsize(), "compile: a buffer of ", b.dtype.name());
    pb.index = b.index;
    p->buffers.push_back(pb);
    if (b.kind == ScheduleBuffer::Kind::Output) {
      if (size_t(b.index) >= p->outputs.size()) p->outputs.resize(size_t(b.index) + 1);
      p->outputs[size_t(b.index)] = spec_of(b.dtype, b.source, vars, "compile output");
    }
  }
  p->vars = vars;

  // lower, kernel by kernel in launch order (in the caller's graph, so on this thread)
  LowerOptions lo;
  lo.optimize = options.optimize;
  lo.allow_threads = options.allow_threads;
  const size_t nk = s.kernels.size();
  std::vector<bool> cached(nk, false);  // found compiled: no stage ran for it here
  std::vector<std::shared_ptr<const DeviceKernel>> kernels(nk);
  std::vector<std::optional<LoweredKernel>> pending(nk);
  std::vector<std::exception_ptr> errors(nk);
  std::map<uint64_t, size_t> first_of_key;  // a kernel that appears twice compiles once
  std::vector<uint64_t> keys(nk, 0);        // kernel_key of each kernel
  std::vector<int> repeats(nk, -1);         // the earlier kernel this one repeats (not lowered again)
  std::set<uint64_t> forced_used;
  // compile: the backend's render + compile of each new kernel starts as soon as it is lowered,
  // on the other cores while this thread lowers the next (finish() joins in). Small kernels wait
  // to compile together, as one batch (the CPU: one LLVM module, whose fixed cost dominates an
  // elementwise kernel's compile), until the batch holds kBatchInstructions; a kernel of
  // kAloneInstructions or more starts alone at once. A free core takes the costliest compile
  // waiting: its kernels' instructions and the module's fixed cost (kAloneInstructions' worth).
  TaskQueue compiles(/*hold=*/beam > 0);
  auto submit = [&](std::vector<size_t> ids) {
    double cost = double(kAloneInstructions);
    for (size_t k : ids) cost += double(pending[k]->linear->nsrc());
    compiles.push(
        [&, ids = std::move(ids)] {
          std::vector<const LoweredKernel*> batch;
          for (size_t k : ids) batch.push_back(&*pending[k]);
          try {
            std::vector<std::shared_ptr<const DeviceKernel>> got = device->compile_together(batch);
            for (size_t j = 0; j < ids.size(); j++) kernels[ids[j]] = got[j];
          } catch (...) {
            errors[ids[0]] = std::current_exception();
          }
        },
        cost);
  };
  std::vector<size_t> batch;
  size_t batch_instructions = 0;
  // which buffers each kernel reads are known finite (constants checked here): products of their
  // values with a padding zero are left out of sums
  const std::vector<std::vector<int64_t>> finite =
      finite_params(s, rt.devices().disk_cache() ? disk_cache().get() : nullptr);
  // Lowering builds about 13 nodes per node of its kernels' ASTs (ResNet-18: 1.9k AST nodes, 24k
  // new nodes): the graph's table is sized for them once, not doubled five times on the way (each
  // doubling rehashes every node into pages not touched before: 0.4-0.5 ms for the last one, which
  // fell on one kernel's stages).
  size_t ast_nodes = 0;
  for (const ScheduledKernel& sk : s.kernels) ast_nodes += toposort(sk.ast).size();
  g.reserve(g.size() + kNodesPerAstNode * ast_nodes);
  for (size_t k = 0; k < nk; k++) {
    const ScheduledKernel& sk = s.kernels[k];
    const uint64_t id = sk.ast->content_hash();
    // optimize: forced opts, else BEAM's (searched once per kernel, core/opt/search.h), else the heuristic's
    LowerOptions klo = lo;
    klo.finite_params = finite[k];
    auto forced = options.kernel_opts.find(id);
    if (forced != options.kernel_opts.end()) {
      klo.opts = forced->second;
      forced_used.insert(id);
    } else if (beam > 0 && options.optimize) {
      BeamOptions bo;
      bo.width = beam;
      bo.disk_cache = rt.devices().disk_cache();
      bo.debug = debug;
      klo.opts = beam_search(sk.ast, *device, klo, bo);
    }
    keys[k] = kernel_key(sk.ast, device->target(), klo);
    if (!dump.wants_graphs()) {
      kernels[k] = device->find(keys[k]);
      cached[k] = kernels[k] != nullptr;
      if (kernels[k]) continue;
      // The same kernel earlier in this program (ResNet-18 repeats 11 of its 50): lowered once.
      if (auto it = first_of_key.find(keys[k]); it != first_of_key.end()) {
        repeats[k] = int(it->second);
        continue;
      }
    }
    if (dump.wants_graphs())
      klo.on_stage = [&](std::string_view stage, const UOp* root) { dump.graph(stage, int(k), root); };
    try {
      pending[k] = lower_kernel(g, sk.ast, device->target(), klo);
    } catch (const Error& e) {
      if (forced == options.kernel_opts.end() || e.code() != Code::InvalidArg) throw;
      fail(Code::InvalidArg, "compile: the opts given for kernel ", kernel_id_str(id), " (", kernel_name(sk.ast), ") [",
           opts_str(forced->second), "] do not apply: ", e.message());
    }
    if (!first_of_key.emplace(keys[k], k).second) continue;
    // The compile thread reads this kernel's nodes while this one builds more in the same graph:
    // what it would derive lazily is derived here first.
    pending[k]->linear->derive_for_readers();
    const size_t instructions = pending[k]->linear->nsrc();
    if (instructions >= kAloneInstructions) {
      submit({k});
      continue;
    }
    batch.push_back(k);
    batch_instructions += instructions;
    if (batch_instructions >= kBatchInstructions) {
      submit(std::move(batch));
      batch = {};
      batch_instructions = 0;
    }
  }
  if (!batch.empty()) submit(std::move(batch));
  compiles.finish();
  for (size_t k = 0; k < nk; k++)
    if (errors[k]) std::rethrow_exception(errors[k]);
  for (size_t k = 0; k < nk; k++)
    if (!kernels[k]) kernels[k] = kernels[first_of_key.at(keys[k])];

  for (size_t k = 0; k < nk; k++) {
    const ScheduledKernel& sk = s.kernels[k];
    const std::shared_ptr<const DeviceKernel>& kernel = kernels[k];
    dump.text("source", int(k), kernel->source, debug >= 4);
    Launch launch;
    launch.kernel = kernel;
    launch.ast_hash = sk.ast->content_hash();
    launch.buffers = sk.buffers;
    if (kernel->params.size() > sk.buffers.size())
      fail(Code::Internal, "compile: kernel ", k, " (", kernel->name, ") has ", kernel->params.size(),
           " params but the schedule binds ", sk.buffers.size(), " buffers");
    for (const KernelVar& kv : kernel->vars) {
      auto it = std::find_if(p->vars.begin(), p->vars.end(), [&](const KernelVar& v) { return v.name == kv.name; });
      if (it == p->vars.end()) fail(Code::Internal, "compile: kernel ", k, " uses unknown variable ", kv.name);
      launch.var_index.push_back(int(it - p->vars.begin()));
    }
    p->launches.push_back(std::move(launch));
  }

  for (const auto& [id, opts] : options.kernel_opts)
    if (!forced_used.count(id)) {
      std::string ids;
      for (const ScheduledKernel& sk : s.kernels)
        ids += cat(ids.empty() ? "" : ", ", kernel_id_str(sk.ast->content_hash()));
      fail(Code::InvalidArg, "compile: opts are given for kernel ", kernel_id_str(id),
           ", which this program does not have (its kernels: ", ids.empty() ? "none" : ids, ")");
    }

  dump.name_kernels(kernels);
  // The launches' kernels in schedule order, for the per-stage times (precompute drops launches).
  std::vector<std::shared_ptr<const DeviceKernel>> lowered;
  for (const Launch& l : p->launches) lowered.push_back(l.kernel);

  // precompute: what no input or variable changes runs once, here; the constants get their storage
  size_t precomputed = precompute_constants(*p, constant_bytes);

  // plan
  std::string plan = plan_memory(*p);
  if (options.keep_stages) dump.text("plan", -1, plan, false);
  p->stages = dump.take();

  if (debug >= 2) {
    std::fprintf(stderr,
                 "sn: program %016llx: %zu kernels for %s in %.1f ms (schedule %.2f ms; %zu more ran once, at "
                 "compile); arena %zu bytes (%zu unshared)\n",
                 static_cast<unsigned long long>(s.hash), p->launches.size(), device->name().c_str(), ms_since(t0),
                 schedule_ms, precomputed, p->arena_bytes, p->unshared_bytes);
    // Milliseconds per stage per kernel (SN_DEBUG=2): our lowering stages (CPU time), then the backend's render +
    // compile (wall time).
    for (size_t k = 0; k < lowered.size(); k++) {
      std::string line;
      double ours = 0;
      for (const auto& [stage, ms] : lowered[k]->stage_ms) {
        line += cat(" ", stage, " ", fixed2(ms));
        ours += ms;
      }
      if (cached[k])
        std::fprintf(stderr, "sn: ms   %4zu %-32s compiled before\n", k, lowered[k]->name.c_str());
      else if (repeats[k] >= 0)
        std::fprintf(stderr, "sn: ms   %4zu %-32s repeats kernel %d\n", k, lowered[k]->name.c_str(), repeats[k]);
      else
        std::fprintf(stderr, "sn: ms   %4zu %-32s%s = %s ours + %s backend\n", k, lowered[k]->name.c_str(),
                     line.c_str(), fixed2(ours).c_str(), fixed2(lowered[k]->compile_ms).c_str());
    }
    for (size_t k = 0; k < p->launches.size(); k++) {
      const Launch& l = p->launches[k];
      std::string bufs;
      for (int b : l.buffers) {
        const ProgramBuffer& pb = p->buffers[size_t(b)];
        const char* role = pb.role == ProgramBuffer::Role::Input      ? "in"
                           : pb.role == ProgramBuffer::Role::Output   ? "out"
                           : pb.role == ProgramBuffer::Role::Constant ? "const"
                                                                      : "tmp";
        bufs += cat(bufs.empty() ? "" : " ", role, pb.index);
      }
      std::string opts;
      for (const Opt& o : l.kernel->opts) opts += (opts.empty() ? "" : " ") + opt_str(o);
      std::fprintf(stderr, "sn: %4zu %-32s %s  [%s]  {%s}  %.2f ms\n", k, l.kernel->name.c_str(),
                   l.kernel->launch_shape().c_str(), bufs.c_str(), opts.c_str(), l.kernel->compile_ms);
    }
  }
  if (options.use_cache) rt.store_program(key, p);
  return finish(std::make_shared<Program>(*p));
}

}  // namespace sn
