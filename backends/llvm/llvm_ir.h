// Linear -> LLVM IR text, for the host CPU (backends/cpu, ORC JIT) and for GPUs (NVPTX for
// backends/cuda, AMDGPU for backends/amd). One renderer; a dialect decides the few things that
// differ: the entry point, pointer address spaces, GPU indices, local memory and barriers.
//
//   Cpu     `<sym>(ptr bufs, ptr vars, i64 core_id, i64 ncores)` unpacks the argument arrays and
//           runs the kernel, its buffers' accesses in one alias scope each (see
//           backends/cpu/cpu_backend.h for the ABI).
//   Nvptx   a kernel (`nvvm.annotations`) `<sym>(ptr addrspace(1) noalias %b<slot>..., i64 %var<i>...)`:
//           one parameter per buffer in Param slot order, then one i64 per variable (sorted by
//           name); gidx/lidx are %ctaid/%tid, local buffers addrspace(3) globals, barriers bar.sync 0.
//   Amdgpu  the same parameters on an `amdgpu_kernel`; gidx/lidx are workgroup.id/workitem.id,
//           local buffers LDS (addrspace(3)), registers addrspace(5) allocas, barriers s_barrier
//           between workgroup-scope release/acquire fences.
#pragma once
#include <cstdint>
#include <string>

#include "core/codegen/codegen.h"

namespace sn {

enum class LlvmDialect { Cpu, Nvptx, Amdgpu };

// The CPU dialect's region of zeros, which the host defines (backends/cpu: never written): a load
// whose gate is off reads there, at its own index from the region's middle, where that index
// stays within half the region either side.
inline constexpr const char* kCpuZeroRegionSymbol = "sn_cpu_zero_region";
inline constexpr int64_t kCpuZeroRegionBytes = int64_t(64) << 20;

// LLVM IR text of a lowered kernel; `symbol` is the name of the entry point.
std::string render_llvm_ir(const LoweredKernel& k, const std::string& symbol, LlvmDialect dialect = LlvmDialect::Cpu);

}  // namespace sn
