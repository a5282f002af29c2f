// What a device can compute, as the optimizer, expand and instruction selection see it (tinygrad's
// Renderer; Morok's device description). A backend fills one in when it opens a device; nothing in
// core/ asks which backend runs a kernel, only what its Target says.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/dtype.h"
#include "core/ir/ops.h"

namespace sn {

// Where a fragment element of a tensor-core instruction sits in its matrix: one coordinate (a row or
// a column) is the sum of terms ((x / div) % mod) * mul, x being the lane of the warp or the
// element's index in the lane's fragment. Every layout of the spec's targets is such a sum of bit
// fields (NVIDIA: lane = 4 * group + thread in group; AMD: lane = 16 * block + row).
struct TcTerm {
  bool lane = true;  // x is the lane (else the element index)
  int div = 1, mod = 1 << 30, mul = 1;
  bool operator==(const TcTerm&) const = default;
};
using TcCoord = std::vector<TcTerm>;

// A tensor-core instruction, warp-collective: D(m x n, acc) = A(m x k, in) * B(k x n, in) + C. Each
// of the `threads` lanes holds `a_elems` elements of A, `b_elems` of B and `c_elems` of C and D,
// placed by the layouts below (an element may sit in several lanes: AMD's WMMA repeats A and B in
// both halves of the wave).
struct TensorCoreShape {
  std::string name;  // the Wmma op's arg and the renderer's key: "m16n8k16_f16_f32"
  int m = 0, n = 0, k = 0;
  Scalar in = Scalar::Float16, acc = Scalar::Float32;
  int threads = 32;
  int a_elems = 0, b_elems = 0, c_elems = 0;
  TcCoord a_row, a_col;  // A[m][k]
  TcCoord b_row, b_col;  // B[k][n]
  TcCoord c_row, c_col;  // C[m][n] and D[m][n]
  // No instruction: core/codegen/tensor_cores.cpp computes it through local memory (GPU-style codegen
  // of tensor-core kernels tested on targets that have none, such as OpenCL on pocl).
  bool emulated = false;
  bool operator==(const TensorCoreShape&) const = default;
};

// The value of a fragment coordinate for a lane and an element.
int64_t tc_coord(const TcCoord& c, int64_t lane, int64_t elem);

// The tensor-core shapes of the spec's targets, by renderer family and architecture: NVIDIA
// mma.sync m16n8k16 (sm_80 and later), AMD MFMA 16x16x16 (gfx90a, gfx94x: wave64) and WMMA 16x16x16
// (gfx11: wave32), each for float16 and bfloat16 inputs with float32 accumulation; none elsewhere.
std::vector<TensorCoreShape> nvidia_tensor_cores(int sm);
std::vector<TensorCoreShape> amd_tensor_cores(const std::string& gfx);

struct Target {
  // Which renderer family emits the code: "CPU" (LLVM IR for the host), "CL" (OpenCL C), "C" (C99
  // source), "CUDA", "AMD". Part of every kernel cache key, so two backends never share a kernel.
  std::string renderer = "CPU";
  std::string arch;      // LLVM CPU name ("znver4"), OpenCL device name, "sm_90", "gfx942"
  std::string triple;    // LLVM target triple ("" for source renderers)
  std::string features;  // LLVM feature string, OpenCL extensions

  // ---- parallel axes ------------------------------------------------------------------------
  // THREAD axes: a kernel is launched once per core with core_id in [0, cores) (CPUs).
  bool has_threads = false;
  int cores = 1;
  // GLOBAL / LOCAL axes: a grid of work-groups (gidx0..2) of work-items (lidx0..2) (GPUs).
  bool has_local = false;
  // Local (work-group shared) memory with barriers: DefineLocal buffers, GROUP_REDUCE axes.
  bool has_shared = false;
  int64_t local_memory_bytes = 0;
  std::array<int64_t, 3> max_local_size{1, 1, 1};   // work-items per work-group, per dimension
  int64_t max_local_total = 1;                      // work-items per work-group, in total
  std::array<int64_t, 3> max_global_size{1, 1, 1};  // work-groups per dimension
  int warp_size = 1;                                // work-items that run in lockstep (1: none)
  // Multiprocessors that run work-groups side by side (CUDA SMs, AMD compute units, OpenCL compute
  // units); 0: unknown (a compile-only target). The GPU heuristic keeps its register tiles small
  // enough to leave each a work-group.
  int compute_units = 0;
  std::vector<TensorCoreShape> tensor_cores;  // Wmma instructions (the TC opt)

  // ---- values -------------------------------------------------------------------------------
  // Widest SIMD register in bits: vector lanes of UPCAST/UNROLL axes become vector values up to
  // this width. 0: the renderer has no vector types, isel splits every vector into scalars.
  int vector_bits = 0;
  // Stores to a buffer of at least this many bytes that write whole aligned vectors of a cache
  // line or more bypass the caches (x86 non-temporal stores: no read for ownership, no eviction of
  // what the caches hold), when the kernel does not read that buffer. 0: never. CPU only.
  int64_t streaming_store_bytes = 0;
  // Gather and scatter instructions: a vector's lanes loaded from or stored to k addresses at once
  // (x86 AVX-512). Strided accesses along vector lanes become one (core/codegen/expand.cpp).
  bool has_gather_scatter = false;
  // Bytes of cache one core can keep a kernel's operands in: its L2 and its share of the L3 (CPU;
  // 0: unknown). The CPU heuristic blocks a register tile's loops so that the rows it streams stay
  // within a quarter of it.
  int64_t cache_bytes = 0;
  // The caches of all the cores together (0: unknown): data larger than this comes from memory
  // each time it is read again.
  int64_t all_cache_bytes() const { return cache_bytes * cores; }
  // Width of the panels a large matrix product's right operand and a convolution's weight are
  // packed into (the schedule's rule 9): the columns the narrowest register tile takes as its
  // vector lanes, so that each step of a tile reads whole runs of its panels (a wider tile one
  // vector load per panel) rather than every other half of one. 32 by default (GPU tiles); the CPU
  // backend sets one register of float lanes with 16 registers (AVX2: 8), two with 32 (AVX-512).
  int64_t packed_panel = 32;
  // SIMD registers in the file (x86: 16 with AVX2, 32 with AVX-512; AArch64: 32). Register tiles keep their
  // accumulators within half of them, so operands and addresses never spill.
  int vector_registers = 32;
  // One bit per Scalar kind the target can store and compute (f16/bf16/fp8 math runs in float32
  // on every target; isel rounds after each op). Index is always supported.
  uint32_t dtypes = ~0u;
  // Transcendental ops of {Exp2, Log2, Sin, Sqrt, Pow} the renderer emits natively; isel
  // decomposes the others into polynomials (core/codegen/transcendental.cpp).
  std::vector<Op> native_math{Op::Exp2, Op::Log2, Op::Sin, Op::Sqrt, Op::Pow};
  // A vector math library the renderer may call for vectorized transcendentals ("libmvec-avx512",
  // "libmvec-avx2"; CPU only), or "".
  std::string vector_math;

  bool supports(Scalar s) const { return s == Scalar::Index || ((dtypes >> unsigned(s)) & 1u) != 0; }
  void drop(Scalar s) { dtypes &= ~(1u << unsigned(s)); }
  bool has_native(Op op) const;
  // Why the target cannot hold or compute `dtype` ("" when it can).
  std::string unsupported_dtype(DType dtype) const;
  // The tensor core called `name`, or nullptr.
  const TensorCoreShape* tensor_core(const std::string& name) const;
  // Identifies everything that changes generated code (part of kernel cache keys).
  std::string key() const;
};

}  // namespace sn
