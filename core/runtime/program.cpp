#include "core/runtime/program.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <future>
#include <map>
#include <numeric>

#include "core/util/checked.h"
#include "core/util/error.h"

namespace sn {

std::string TensorSpec::str() const { return dtype.name() + format_dims(shape); }

std::vector<int64_t> TensorSpec::shape_at(const int64_t* var_values) const {
  if (!symbolic()) return shape;
  std::vector<int64_t> out;
  for (const LaunchExpr& e : sym) out.push_back(e.eval(var_values));
  return out;
}

std::string Program::stage_text(std::string_view stage) const {
  std::string out;
  if (!stages) return out;
  for (const StageDump& d : *stages) {
    if (d.stage != stage) continue;
    if (d.kernel >= 0) out += cat("# kernel ", d.kernel, ": ", d.kernel_name, "\n");
    out += d.text;
    if (!d.text.empty() && d.text.back() != '\n') out += '\n';
  }
  return out;
}

std::vector<std::string> Program::stage_names() const {
  std::vector<std::string> names;
  if (!stages) return names;
  for (const StageDump& d : *stages)
    if (std::find(names.begin(), names.end(), d.stage) == names.end()) names.push_back(d.stage);
  return names;
}

namespace {

void check_var(const Program& p, size_t v, int64_t value) {
  const KernelVar& kv = p.vars[v];
  if (value < kv.min || value > kv.max)
    fail(Code::InvalidArg, "variable ", kv.name, " = ", value, " is outside its range [", kv.min, ", ", kv.max, "]");
}

// Values of p.vars (by position) from (name, value) pairs, each checked against its range.
void read_vars(const Program& p, std::span<const std::pair<std::string, int64_t>> given, std::vector<int64_t>& values,
               std::vector<bool>& bound) {
  values.assign(p.vars.size(), 0);
  bound.assign(p.vars.size(), false);
  for (const auto& [name, value] : given) {
    auto it = std::find_if(p.vars.begin(), p.vars.end(), [&](const KernelVar& v) { return v.name == name; });
    if (it == p.vars.end()) fail(Code::InvalidArg, "the program has no variable named '", name, "'");
    values[size_t(it - p.vars.begin())] = value;
    bound[size_t(it - p.vars.begin())] = true;
  }
}

}  // namespace

std::shared_ptr<Buffer> Program::allocate_output(size_t i) const {
  if (i >= outputs.size()) fail(Code::InvalidArg, "program has ", outputs.size(), " outputs, asked for output ", i);
  if (outputs[i].symbolic())
    fail(Code::InvalidArg, "output ", i, " has the symbolic shape ", outputs[i].str(),
         ": allocate it for given variable values");
  return Buffer::allocate(device, outputs[i].dtype, outputs[i].shape);
}

std::shared_ptr<Buffer> Program::allocate_output(size_t i,
                                                 std::span<const std::pair<std::string, int64_t>> given) const {
  if (i >= outputs.size()) fail(Code::InvalidArg, "program has ", outputs.size(), " outputs, asked for output ", i);
  std::vector<int64_t> values;
  std::vector<bool> bound;
  read_vars(*this, given, values, bound);
  for (size_t v = 0; v < vars.size(); v++) {
    if (bound[v]) {
      check_var(*this, v, values[v]);
      continue;
    }
    // a variable the shape does not use may stay unbound; one it uses may not
    std::vector<int64_t> lo = values, hi = values;
    lo[v] = vars[v].min;
    hi[v] = vars[v].max;
    if (outputs[i].shape_at(lo.data()) != outputs[i].shape_at(hi.data()))
      fail(Code::InvalidArg, "output ", i, " (", outputs[i].str(), "): variable ", vars[v].name, " is not given");
    values[v] = vars[v].min;
  }
  return Buffer::allocate(device, outputs[i].dtype, outputs[i].shape_at(values.data()));
}

namespace {

// A bound buffer fits when it has the spec's dtype and device and, for a static spec, its shape;
// a symbolic spec takes any shape with at least the elements of its shape at `var_values` (null:
// the values are not known yet, checked again at run time).
void check_binding(const Program& p, const char* what, size_t i, const TensorSpec& spec, const Buffer* b,
                   const int64_t* var_values = nullptr) {
  if (b == nullptr) fail(Code::InvalidArg, what, " ", i, " is not bound");
  if (b->dtype() != spec.dtype)
    fail(Code::InvalidArg, what, " ", i, ": expected ", spec.str(), ", got a buffer of ", b->dtype().name(),
         format_dims(b->shape()));
  if (!spec.symbolic() && b->shape() != spec.shape)
    fail(Code::InvalidArg, what, " ", i, ": expected shape ", format_dims(spec.shape), " (", spec.str(),
         "), got a buffer of shape ", format_dims(b->shape()));
  if (spec.symbolic() && var_values != nullptr) {
    std::vector<int64_t> shape = spec.shape_at(var_values);
    int64_t need = checked_numel(shape, what);
    if (b->numel() < need)
      fail(Code::InvalidArg, what, " ", i, ": shape ", format_dims(shape), " at these variable values needs ", need,
           " elements, the buffer has ", b->numel());
  }
  if (&b->device() != p.device.get())
    fail(Code::InvalidArg, what, " ", i, ": the buffer is on ", b->device().name(),
         b->device().name() == p.device->name() ? " of another context" : "", ", the program runs on ",
         p.device->name());
}

// "1 input", "2 inputs".
std::string count_of(size_t n, const char* noun) { return cat(n, " ", noun, n == 1 ? "" : "s"); }

// A buffer the caller owns, passed where a step program wants a shared_ptr (it does not keep it).
std::shared_ptr<Buffer> borrowed(const Buffer* b) {
  return std::shared_ptr<Buffer>(std::shared_ptr<Buffer>(), const_cast<Buffer*>(b));
}

// Copies value src into dst: host memory on both sides is one memcpy, else copy_buffer.
void transfer(Buffer& dst, const Buffer& src) {
  if (src.nbytes() != dst.nbytes() || src.dtype() != dst.dtype())
    fail(Code::Internal, "multi-device copy: ", src.str(), " does not fit ", dst.str());
  if (src.nbytes() == 0) return;
  if (&src.device() != &dst.device() && src.device().host_memory() && dst.device().host_memory()) {
    src.device().synchronize();
    DevicePtr s = src.address(), d = dst.address();
    std::memcpy(static_cast<char*>(d.base) + d.offset, static_cast<const char*>(s.base) + s.offset, src.nbytes());
    return;
  }
  copy_buffer(dst, src);
}

// Runs a multi-device plan. Every copy and step is a task that starts when the tasks making its
// values have finished, so work on different devices overlaps wherever the data allows (a device
// runs one step at a time: its steps depend on each other through their order in the plan). The
// first error is rethrown after every task has finished.
void execute_multi(const Program& p, const std::vector<const Buffer*>& inputs,
                   const std::vector<const Buffer*>& outputs) {
  const MultiPlan& plan = *p.multi;
  std::vector<std::shared_ptr<Buffer>> vals(plan.values.size());
  for (size_t v = 0; v < plan.values.size(); v++) {
    const MultiPlan::Value& val = plan.values[v];
    vals[v] =
        val.input >= 0 ? borrowed(inputs.at(size_t(val.input))) : Buffer::allocate(val.device, val.dtype, val.shape);
  }
  struct Task {
    const MultiPlan::Transfer* copy = nullptr;
    const MultiPlan::Step* step = nullptr;
    std::vector<size_t> deps;
  };
  std::vector<Task> tasks;
  std::vector<int> maker(plan.values.size(), -1);  // value -> the task that writes it
  std::map<const ComputeDevice*, size_t> last_on;  // device -> its latest step task
  auto need = [&](Task& t, int v) {
    if (maker[size_t(v)] >= 0) t.deps.push_back(size_t(maker[size_t(v)]));
  };
  for (const MultiPlan::Wave& wave : plan.waves) {
    for (const MultiPlan::Transfer& c : wave.copies) {
      Task t;
      t.copy = &c;
      need(t, c.src);
      maker[size_t(c.dst)] = int(tasks.size());
      tasks.push_back(std::move(t));
    }
    for (const MultiPlan::Step& st : wave.steps) {
      Task t;
      t.step = &st;
      for (int v : st.inputs) need(t, v);
      if (auto it = last_on.find(st.program->device.get()); it != last_on.end()) t.deps.push_back(it->second);
      last_on[st.program->device.get()] = tasks.size();
      for (int v : st.outputs) maker[size_t(v)] = int(tasks.size());
      tasks.push_back(std::move(t));
    }
  }
  auto work = [&](const Task& t) {
    if (t.copy) {
      transfer(*vals[size_t(t.copy->dst)], *vals[size_t(t.copy->src)]);
      return;
    }
    std::vector<std::shared_ptr<Buffer>> in, out;
    for (int v : t.step->inputs) in.push_back(vals[size_t(v)]);
    for (int v : t.step->outputs) out.push_back(vals[size_t(v)]);
    t.step->program->run(in, out);
  };
  std::vector<std::shared_future<void>> done(tasks.size());
  for (size_t i = 0; i < tasks.size(); i++)
    done[i] = std::async(std::launch::async, [&, i] {
                for (size_t d : tasks[i].deps) done[d].get();  // rethrows a dependency's error
                work(tasks[i]);
              }).share();
  std::exception_ptr first;
  for (auto& f : done) {
    try {
      f.get();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
  for (size_t i = 0; i < outputs.size(); i++)
    transfer(const_cast<Buffer&>(*outputs[i]), *vals[size_t(plan.outputs.at(i))]);
}

// Runs every launch of `p` on the bound buffers. `arena` holds the intermediates (p.arena_bytes).
void execute(const Program& p, const std::vector<const Buffer*>& inputs, const std::vector<const Buffer*>& outputs,
             const std::vector<int64_t>& vars, const std::vector<bool>& var_bound, Storage* arena,
             std::vector<double>* timings) {
  if (inputs.size() != p.inputs.size())
    fail(Code::InvalidArg, "the program takes ", count_of(p.inputs.size(), "input"), ", got ", inputs.size());
  if (outputs.size() != p.outputs.size())
    fail(Code::InvalidArg, "the program has ", count_of(p.outputs.size(), "output"), ", got ", outputs.size());
  if (std::string why = p.device->cannot_run(); !why.empty())
    fail(Code::Device, "the program is compiled for ", p.device->name(), ", which cannot run kernels: ", why);
  // the variables first: a symbolic shape's size depends on them
  for (size_t v = 0; v < p.vars.size(); v++) {
    if (!var_bound[v]) fail(Code::InvalidArg, "variable ", p.vars[v].name, " is not bound");
    check_var(p, v, vars[v]);
  }
  for (size_t i = 0; i < inputs.size(); i++) check_binding(p, "input", i, p.inputs[i], inputs[i], vars.data());
  for (size_t i = 0; i < outputs.size(); i++) check_binding(p, "output", i, p.outputs[i], outputs[i], vars.data());
  // A kernel writing an output must never change what a later kernel reads.
  for (size_t i = 0; i < outputs.size(); i++) {
    for (size_t j = 0; j < inputs.size(); j++)
      if (outputs[i]->overlaps(*inputs[j]))
        fail(Code::InvalidArg, "output ", i, " overlaps input ", j, " (outputs need memory of their own)");
    for (size_t j = 0; j < i; j++)
      if (outputs[i]->overlaps(*outputs[j])) fail(Code::InvalidArg, "outputs ", j, " and ", i, " overlap");
  }

  if (p.multi) {
    execute_multi(p, inputs, outputs);
    return;
  }

  // Device address of every program buffer.
  std::vector<DevicePtr> addr(p.buffers.size(), DevicePtr{nullptr, 0});
  for (size_t i = 0; i < inputs.size(); i++) {
    if (p.input_slots[i] < 0) continue;  // listed by the caller, unused by the outputs
    for (size_t b = 0; b < p.buffers.size(); b++)
      if (p.buffers[b].role == ProgramBuffer::Role::Input && p.buffers[b].index == p.input_slots[i])
        addr[b] = inputs[i]->address();
  }
  for (size_t b = 0; b < p.buffers.size(); b++) {
    const ProgramBuffer& pb = p.buffers[b];
    if (pb.role == ProgramBuffer::Role::Output) addr[b] = outputs[size_t(pb.index)]->address();
    if (pb.role == ProgramBuffer::Role::Constant) addr[b] = DevicePtr{pb.storage ? pb.storage->ptr() : nullptr, 0};
    if (pb.role == ProgramBuffer::Role::Intermediate) {
      // (no arena where no launch takes an intermediate: see new_arena)
      if (!arena && pb.nbytes() != 0) fail(Code::Internal, "program: no arena for intermediate ", pb.index);
      addr[b] = arena ? DevicePtr{arena->ptr(), pb.arena_offset} : DevicePtr{nullptr, 0};
    }
  }

  if (timings) timings->assign(p.launches.size(), 0.0);
  std::vector<ComputeDevice::Command> commands(p.launches.size());
  for (size_t l = 0; l < p.launches.size(); l++) {
    const Launch& launch = p.launches[l];
    ComputeDevice::Command& c = commands[l];
    c.kernel = launch.kernel.get();
    c.bufs.assign(launch.buffers.size(), DevicePtr{nullptr, 0});
    for (size_t s = 0; s < launch.buffers.size(); s++) {
      c.bufs[s] = addr[size_t(launch.buffers[s])];
      if (!c.bufs[s].base) fail(Code::Internal, "program: launch ", l, " slot ", s, " has no buffer");
    }
    for (int v : launch.var_index) c.vars.push_back(vars[size_t(v)]);
    for (size_t d = 0; d < 3; d++) {
      c.size.global[d] = c.kernel->dims.global[d].eval(c.vars.data());
      c.size.local[d] = c.kernel->dims.local[d];
    }
  }
  if (!timings) {
    p.device->run(commands);
    p.device->synchronize();
    return;
  }
  double total_ms = 0;
  for (size_t l = 0; l < p.launches.size(); l++) {
    const Launch& launch = p.launches[l];
    const ComputeDevice::Command& c = commands[l];
    auto t0 = std::chrono::steady_clock::now();
    p.device->launch(*c.kernel, c.bufs, c.vars, c.size);
    p.device->synchronize();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    (*timings)[l] = ms;
    total_ms += ms;
    if (p.debug >= 1)
      std::fprintf(stderr, "sn: %-4s %4zu %-32s %-24s %10.3f ms\n", p.device->name().c_str(), l,
                   launch.kernel->name.c_str(), launch.kernel->launch_shape().c_str(), ms);
  }
  p.device->synchronize();
  if (timings && p.debug >= 1)
    std::fprintf(stderr, "sn: %-4s ran %zu kernels in %.3f ms\n", p.device->name().c_str(), p.launches.size(),
                 total_ms);
}

// Intermediates that are all empty (a value with a zero-size axis) take no bytes, but a kernel
// may still take one as a parameter that it never reads (a pad of it, whose gate never holds):
// such a program gets an arena of one aligned block, so that every parameter has an address.
std::shared_ptr<Storage> new_arena(const Program& p) {
  bool used = p.arena_bytes != 0;
  for (const ProgramBuffer& b : p.buffers)
    used = used || (b.role == ProgramBuffer::Role::Intermediate && b.first_use >= 0);
  return used ? p.device->allocate(std::max(p.arena_bytes, kBufferAlignment)) : nullptr;
}

}  // namespace

void Program::run(std::span<const std::shared_ptr<Buffer>> in, std::span<const std::shared_ptr<Buffer>> out,
                  std::span<const std::pair<std::string, int64_t>> var_values) const {
  std::vector<const Buffer*> ins, outs;
  for (const auto& b : in) ins.push_back(b.get());
  for (const auto& b : out) outs.push_back(b.get());
  std::vector<int64_t> values;
  std::vector<bool> bound;
  read_vars(*this, var_values, values, bound);
  // Take the cached arena (or make one when another thread is using it), and give it back after.
  std::shared_ptr<Storage> arena;
  {
    std::lock_guard<std::mutex> lk(arena_cache_.mu);
    arena = std::move(arena_cache_.arena);
  }
  if (!arena) arena = new_arena(*this);
  std::vector<double> timings;
  execute(*this, ins, outs, values, bound, arena.get(), debug >= 1 ? &timings : nullptr);
  std::lock_guard<std::mutex> lk(arena_cache_.mu);
  if (!arena_cache_.arena) arena_cache_.arena = std::move(arena);
}

CommandBuffer::CommandBuffer(std::shared_ptr<const Program> program) : program_(std::move(program)) {
  if (!program_) fail(Code::InvalidArg, "command buffer: no program");
  inputs_.resize(program_->inputs.size());
  outputs_.resize(program_->outputs.size());
  var_values_.assign(program_->vars.size(), 0);
  var_bound_.assign(program_->vars.size(), false);
}

void CommandBuffer::set_input(size_t i, std::shared_ptr<Buffer> buffer) {
  if (i >= inputs_.size())
    fail(Code::InvalidArg, "the program takes ", count_of(inputs_.size(), "input"), ", got input ", i);
  if (buffer) check_binding(*program_, "input", i, program_->inputs[i], buffer.get());
  inputs_[i] = std::move(buffer);
}

void CommandBuffer::set_output(size_t i, std::shared_ptr<Buffer> buffer) {
  if (i >= outputs_.size())
    fail(Code::InvalidArg, "the program has ", count_of(outputs_.size(), "output"), ", got output ", i);
  if (buffer) check_binding(*program_, "output", i, program_->outputs[i], buffer.get());
  outputs_[i] = std::move(buffer);
}

void CommandBuffer::set_var(std::string_view name, int64_t value) {
  const auto& vars = program_->vars;
  auto it = std::find_if(vars.begin(), vars.end(), [&](const KernelVar& v) { return v.name == name; });
  if (it == vars.end()) fail(Code::InvalidArg, "the program has no variable named '", std::string(name), "'");
  size_t v = size_t(it - vars.begin());
  check_var(*program_, v, value);
  var_values_[v] = value;
  var_bound_[v] = true;
}

void CommandBuffer::run() {
  std::vector<const Buffer*> ins, outs;
  for (const auto& b : inputs_) ins.push_back(b.get());
  for (const auto& b : outputs_) outs.push_back(b.get());
  if (!arena_ && program_->arena_bytes) arena_ = new_arena(*program_);
  bool timed = timing_ || program_->debug >= 1;
  execute(*program_, ins, outs, var_values_, var_bound_, arena_.get(), timed ? &timings_ : nullptr);
}

std::vector<size_t> plan_arena(std::span<const size_t> bytes, std::span<const int> first, std::span<const int> last,
                               size_t align, size_t* arena_bytes) {
  if (bytes.size() != first.size() || bytes.size() != last.size())
    fail(Code::Internal, "plan_arena: ", bytes.size(), " sizes, ", first.size(), " firsts, ", last.size(), " lasts");
  if (align == 0 || (align & (align - 1)) != 0) fail(Code::Internal, "plan_arena: alignment ", align);
  // Sizes are at most INT64_MAX (checked when the program is built); sums of them are checked here.
  auto round_up = [&](size_t n) {
    return size_t(checked_add(int64_t(n), int64_t(align - 1), "memory plan: bytes")) / align * align;
  };
  std::vector<size_t> order(bytes.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (bytes[a] != bytes[b]) return bytes[a] > bytes[b];
    return first[a] < first[b];
  });
  std::vector<size_t> offset(bytes.size(), 0);
  std::vector<size_t> placed;
  size_t total = 0;
  for (size_t i : order) {
    size_t need = round_up(bytes[i]);
    if (need == 0) continue;  // empty buffers take no room (any aligned address will do)
    // Ranges taken by placed buffers that are alive at the same time, by start.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed)
      if (first[j] <= last[i] && first[i] <= last[j]) busy.emplace_back(offset[j], offset[j] + round_up(bytes[j]));
    std::sort(busy.begin(), busy.end());
    size_t at = 0;
    for (const auto& [lo, hi] : busy) {
      if (at + need <= lo) break;
      at = std::max(at, hi);
    }
    offset[i] = at;
    placed.push_back(i);
    total = std::max(total, size_t(checked_add(int64_t(at), int64_t(need), "memory plan: arena bytes")));
  }
  *arena_bytes = total;
  return offset;
}

}  // namespace sn
