#include "core/codegen/target.h"

#include <algorithm>

#include "core/util/error.h"

namespace sn {

bool Target::has_native(Op op) const {
  return std::find(native_math.begin(), native_math.end(), op) != native_math.end();
}

std::string Target::unsupported_dtype(DType dtype) const {
  if (dtype.is_void() || dtype.ptr || dtype.lanes != 1) return "not a tensor element type";
  if (!supports(dtype.scalar))
    return cat("the ", renderer, " target ", arch.empty() ? "" : "(" + arch + ") ", "has no ", dtype.name());
  return "";
}

std::string Target::key() const {
  std::string k = cat(renderer, "|", arch, "|", triple, "|", features, "|", has_threads, cores, "|", has_local,
                      has_shared, local_memory_bytes, "|", max_local_size[0], ",", max_local_size[1], ",",
                      max_local_size[2], ",", max_local_total, "|", max_global_size[0], ",", max_global_size[1], ",",
                      max_global_size[2], "|", warp_size, "|", vector_bits, "/", vector_registers, "|", dtypes, "|",
                      vector_math, "|", streaming_store_bytes, "|", has_gather_scatter, "|");
  for (Op op : native_math) k += cat(op_name(op), ",");
  for (const TensorCoreShape& tc : tensor_cores)
    k += cat("|tc", tc.m, "x", tc.n, "x", tc.k, scalar_name(tc.in), scalar_name(tc.acc));
  return k;
}

}  // namespace sn
