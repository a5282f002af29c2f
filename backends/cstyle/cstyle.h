// The C-style renderer: one rendering of a Linear into C-like source, with the differences between
// OpenCL C, CUDA C and C99 in a small table (CDialect). Used by the OpenCL backend (backends/cl),
// the C-source backend and its ahead-of-time export (backends/c), and later CUDA C.
//
// What every dialect shares: one statement per instruction (`T vN = expr;`), `for` loops for
// Ranges, `if` blocks for gated stores, buffers indexed as arrays, integer math that wraps like
// the LLVM backend (signed arithmetic through unsigned types, division and shifts that never
// trap), f16 / bf16 / fp8 held as their bits and converted by helper functions that round like
// the oracle. Helpers are emitted once per source file, only those a kernel uses.
#pragma once
#include <set>
#include <string>

#include "core/codegen/codegen.h"

namespace sn {

struct CDialect {
  const char* name;  // "OpenCL C", "CUDA C", "C99"
  // Scalar type names by Scalar kind (f16/bf16 as their 16 bits, fp8 as its byte, index as 64 bits).
  const char* types[size_t(Scalar::Count_)];
  const char* int64_suffix;  // literal suffixes: "L"/"UL" (OpenCL), "LL"/"ULL" (C, CUDA)
  const char* uint64_suffix;
  const char* function;       // qualifiers of helper functions ("static inline", "static __device__ inline")
  const char* kernel;         // qualifiers of the kernel ("__kernel void", "extern \"C\" __global__ void", "void")
  const char* global_ptr;     // a buffer parameter's pointer qualifiers: "__global ", ""
  const char* restrict_;      // "restrict", "__restrict__"
  const char* local_decl;     // a local array: "__local ", "__shared__ ", nullptr (no local memory)
  const char* barrier;        // "barrier(CLK_LOCAL_MEM_FENCE);", "__syncthreads();", nullptr
  const char* group_id;       // printf-style with %d: "get_group_id(%d)", "blockIdx.%c"
  const char* local_id;       //                       "get_local_id(%d)", "threadIdx.%c"
  bool xyz;                   // the ids take x/y/z instead of 0/1/2
  bool offset_params;         // each buffer arrives as (char pointer, byte offset): OpenCL buffers
  bool float_suffix_math;     // exp2f/sqrtf for float (C, CUDA); OpenCL overloads exp2/sqrt
  const char* preamble;       // first lines of every file
  const char* fp64_preamble;  // added when the file uses double
};

extern const CDialect kOpenCL, kCudaC, kC99;

// One kernel as a function named `name`, and the helper functions it calls.
struct CKernel {
  std::string function;           // the kernel's definition
  std::set<std::string> helpers;  // names, for c_helpers()
  bool uses_double = false;
};
CKernel render_c(const LoweredKernel& k, const CDialect& d, const std::string& name);

// The preamble and the definitions of the named helpers, in an order that compiles.
std::string c_prelude(const CDialect& d, const std::set<std::string>& helpers, bool uses_double);

// A C identifier from any text ("r_16_4" stays, "a-b" -> "a_b", a leading digit gets a prefix).
std::string c_identifier(const std::string& s);

}  // namespace sn
