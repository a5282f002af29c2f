// The compiler pipeline: one function that runs the stages of the spec's table in order, from a
// tensor-level graph to a Program that a device can run (see core/pipeline.cpp).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/codegen/codegen.h"
#include "core/ir/graph.h"
#include "core/runtime/program.h"
#include "core/runtime/runtime.h"

namespace sn {

struct CompileOptions {
  int debug = -1;             // SN_DEBUG level for this compile and the program's runs; -1: the runtime's
  bool optimize = true;       // run the kernel optimizer (false: loops as scheduled, one thread)
  bool allow_threads = true;  // allow splitting kernels across the CPU's cores
  bool keep_stages = false;   // keep the text of every stage in Program::stages
  bool use_cache = true;      // look the program up in (and add it to) the runtime's program cache
  // The program's inputs in the caller's order: tensors made by input() (or their Buffers). Inputs
  // listed here but unused by the outputs are accepted and ignored when running; a Buffer the
  // outputs read that is missing here is an error. Empty: every Buffer the outputs read, in
  // creation order.
  std::vector<const UOp*> inputs;
  // In-place updates to run besides the outputs: the Afters made by assign() (tensor.h). Each
  // writes its value into its input buffer when the program runs, after every read of the old
  // value. (An After among the outputs does the same, and is an output too.)
  std::vector<const UOp*> effects;
  // BEAM search width per kernel (core/opt/search.h): 0 = the target's heuristic, -1 = $SN_BEAM
  // (else 0). Kernels with launch-time variables keep the heuristic.
  int beam = -1;
  // Opts to apply instead of the heuristic's or BEAM's choice, by kernel identity
  // (Launch::ast_hash). An identity no kernel of the program has is an error, so a stale list is
  // noticed.
  std::map<uint64_t, std::vector<Opt>> kernel_opts;
  // Called with the graph after each stage: "tensor" (kernel -1, a Sink of the outputs), then per
  // kernel "ast", "optimized", "launch", "expanded", "simplified", "reduce", "parallel", "isel",
  // "linear". Not called for kernels or programs answered from a cache.
  std::function<void(std::string_view stage, int kernel, const UOp* root)> on_stage;
};

// Compiles the tensor graph under `outputs` for `device` (nullptr: the runtime's default device):
//   check      dtypes the device cannot run and inputs on other devices fail here, before any work
//   schedule   Callify + Rangeify + kernel split (core/schedule): kernels over buffers, launch order
//   lower      per kernel: optimize, expand, reduce, isel, linearize (core/codegen, core/opt)
//   compile    per kernel: render + backend compile (cached by content: identical kernels once)
//   plan       intermediates share one arena where their lifetimes in the launch order do not overlap
// The result is cached by the schedule's content hash, so the same program built again (on other
// buffers, in another graph) compiles once. Throws sn::Error: InvalidArg for a bad graph,
// Unsupported for what cannot be compiled (naming the dtype or op), ComputeDevice, Compile.
// Lowers one kernel AST (Sink root, kernel IR) for the target, the per-kernel rows of the table: optimize
// (core/opt), launch, expand, simplify, reduce, parallel, isel, linearize (core/codegen); each stage timed and
// kept in LoweredKernel::stages. Throws Error(InvalidArg) when the AST breaks the kernel IR contract,
// Error(Unsupported) for what codegen cannot lower yet.
LoweredKernel lower_kernel(Graph& g, const UOp* kernel_ast, const Target& target, const LowerOptions& opts = {});

// A kernel identity (Launch::ast_hash) as sn_program_kernel_opts prints it: 16 lower-case hex digits.
std::string kernel_id_str(uint64_t v);

std::shared_ptr<const Program> compile_program(Runtime& rt, Graph& g, std::span<const UOp* const> outputs,
                                               std::shared_ptr<ComputeDevice> device = nullptr,
                                               const CompileOptions& options = {});

}  // namespace sn
