// A Program is what compiling a tensor graph for a device produces: the compiled kernels in launch
// order and the buffer plan (which buffer each kernel argument is, and where the intermediates sit
// in one shared arena). It holds no UOp of the graph it came from, so it outlives that graph and is
// reused for every graph with the same content (core/pipeline.h caches it).
//
// A CommandBuffer binds a Program to concrete input and output buffers (and launch-time variables)
// and runs its launches in order; rebinding and running again recompiles nothing. It owns the
// intermediate arena, so two command buffers of one Program may run on different threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/runtime/buffer.h"
#include "core/runtime/device.h"

namespace sn {

// dtype + shape of a program input or output. A symbolic dim is -1 in `shape` and its expression
// of the program's variables in `sym` (one entry per axis, constants for the static ones; empty
// when every dim is static).
struct TensorSpec {
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<LaunchExpr> sym;
  bool symbolic() const { return !sym.empty(); }
  // The shape at these values of Program::vars (by position).
  std::vector<int64_t> shape_at(const int64_t* var_values) const;
  std::string str() const;  // "float32(2,3)", "float32(b,3)" written with -1 for b
};

struct ProgramBuffer {
  enum class Role { Input, Output, Intermediate, Constant };
  Role role;
  DType dtype;
  int64_t size = 0;  // elements
  // Input: the input's number in schedule order (Program::inputs lists them in the user's order,
  // see input_slots); Output: the output's number; Intermediate: its number among intermediates.
  int index = 0;
  size_t arena_offset = 0;  // Intermediate: byte offset in the arena
  // Constant: the device memory the compile filled with its bytes (the spec's Binary; null when
  // empty). The program keeps no second copy: ResNet-18's 45 MB of weights cost 25 ms of page
  // faults to copy, and the C export reads them back from the storage.
  std::shared_ptr<Storage> storage;
  int first_use = -1;  // first and last launch that touch it (-1: none)
  int last_use = -1;
  size_t nbytes() const { return size_t(size) * size_t(dtype.itemsize()); }
};

struct Launch {
  std::shared_ptr<const DeviceKernel> kernel;
  // The kernel's identity: the content hash of its AST before optimization, the same in every
  // process (CompileOptions::kernel_opts and sn_program_kernel_opts name kernels by it).
  uint64_t ast_hash = 0;
  std::vector<int> buffers;    // Param slot k -> index into Program::buffers
  std::vector<int> var_index;  // kernel var i -> index into Program::vars
};

// The arena a Program keeps between run() calls. Copying a Program copies no arena.
struct ArenaCache {
  std::mutex mu;
  std::shared_ptr<Storage> arena;
  ArenaCache() = default;
  ArenaCache(const ArenaCache&) {}
  ArenaCache& operator=(const ArenaCache&) { return *this; }
};

// Text of the graph after one stage, for one kernel (kernel = -1: the whole program).
struct StageDump {
  std::string stage;  // "tensor", "schedule", "ast", "optimized", ..., "linear", "source", "plan"
  int kernel = -1;    // the schedule's kernel (-1: the whole program); a precomputed one has no launch
  std::string text;
  std::string kernel_name;  // that kernel's name
};

// How a program that spans several devices runs (core/multi.cpp makes it): single-device programs
// ("steps") over values, each value one buffer on one device, and copies of values between devices.
// Waves list them in an order that respects the data (a wave's copies, then its steps, at most one
// per device); when run, each copy and step is a task that starts as soon as the tasks writing its
// inputs (and the previous step on its device) are done, so devices work in parallel. The program's
// own inputs and outputs live on Program::device; the outputs are copied from their values last.
struct MultiPlan {
  struct Value {
    std::shared_ptr<ComputeDevice> device;
    DType dtype;
    std::vector<int64_t> shape;
    int input = -1;  // >= 0: the program's input of this number (caller's order), else a temporary
  };
  struct Transfer {
    int src = 0, dst = 0;  // value ids
  };
  struct Step {
    std::shared_ptr<const Program> program;  // runs on program->device
    std::vector<int> inputs, outputs;        // value ids, in the step program's order
  };
  struct Wave {
    std::vector<Transfer> copies;  // before the steps
    std::vector<Step> steps;       // on distinct devices: run in parallel
  };
  std::vector<Value> values;
  std::vector<Wave> waves;
  std::vector<int> outputs;  // the value each program output is copied from
};

class Program {
 public:
  std::shared_ptr<ComputeDevice> device;
  std::vector<ProgramBuffer> buffers;
  std::vector<Launch> launches;
  std::vector<KernelVar> vars;      // every launch-time variable of the program, sorted by name
  std::vector<TensorSpec> inputs;   // in the caller's order
  std::vector<int> input_slots;     // caller's input i -> schedule input number (ProgramBuffer::index)
  std::vector<TensorSpec> outputs;  // in output order
  size_t arena_bytes = 0;           // one allocation for every intermediate
  size_t unshared_bytes = 0;        // what the intermediates would take without sharing
  uint64_t hash = 0;                // the schedule's content hash
  int debug = 0;                    // SN_DEBUG level it was compiled with (1+: run timings)
  double compile_ms = 0;            // wall time of the whole pipeline
  std::shared_ptr<const std::vector<StageDump>> stages;  // kept when asked for (CompileOptions)
  // Set when the program spans devices: it runs this plan (launches and buffers then list every
  // step's kernels for inspection only).
  std::shared_ptr<const MultiPlan> multi;

  // Every dump of `stage`, kernel by kernel under "# kernel i: name" headers; "" when the stage was
  // not kept. stage_names() lists the ones that were.
  std::string stage_text(std::string_view stage) const;
  std::vector<std::string> stage_names() const;

  // Runs once on these buffers (inputs in the caller's order) with the launch-time variables
  // `vars` (name, value). Reuses one cached arena between calls; safe to call from several
  // threads (a busy arena is not shared: a concurrent call allocates its own).
  void run(std::span<const std::shared_ptr<Buffer>> inputs, std::span<const std::shared_ptr<Buffer>> outputs,
           std::span<const std::pair<std::string, int64_t>> vars = {}) const;

  // Allocates an output buffer of output i's dtype and shape.
  std::shared_ptr<Buffer> allocate_output(size_t i) const;
  // The same for an output of symbolic shape: its shape at the launch-time variables `vars`
  // (every variable the shape uses must be given, in its range).
  std::shared_ptr<Buffer> allocate_output(size_t i, std::span<const std::pair<std::string, int64_t>> vars) const;

 private:
  mutable ArenaCache arena_cache_;
};

class CommandBuffer {
 public:
  explicit CommandBuffer(std::shared_ptr<const Program> program);

  const Program& program() const { return *program_; }
  // Binds input i (caller's order) / output i; checked at bind time (dtype, shape, device).
  void set_input(size_t i, std::shared_ptr<Buffer> buffer);
  void set_output(size_t i, std::shared_ptr<Buffer> buffer);
  // Binds a launch-time variable by name (checked against its range).
  void set_var(std::string_view name, int64_t value);

  // Runs every launch in order. Throws InvalidArg when a buffer or variable is unbound, or an output
  // overlaps an input or another output.
  void run();

  // Milliseconds each launch took in the last run (measured only when the program's debug level
  // is >= 1 or timing is on).
  const std::vector<double>& timings_ms() const { return timings_; }
  void set_timing(bool on) { timing_ = on; }

 private:
  std::shared_ptr<const Program> program_;
  std::vector<std::shared_ptr<Buffer>> inputs_, outputs_;
  std::vector<int64_t> var_values_;
  std::vector<bool> var_bound_;
  std::shared_ptr<Storage> arena_;
  std::vector<double> timings_;
  bool timing_ = false;
};

// The interval allocator of the memory plan: buffer i needs bytes[i] from launch first[i] to
// last[i] (inclusive). Places each at an `align`-aligned offset of one arena so that buffers whose
// lifetimes overlap never share a byte; returns the offsets and sets *arena_bytes. Largest buffers
// are placed first, each at the lowest offset that fits between the ones already placed.
std::vector<size_t> plan_arena(std::span<const size_t> bytes, std::span<const int> first, std::span<const int> last,
                               size_t align, size_t* arena_bytes);

}  // namespace sn
