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

const TensorCoreShape* Target::tensor_core(const std::string& name) const {
  for (const TensorCoreShape& tc : tensor_cores)
    if (tc.name == name) return &tc;
  return nullptr;
}

int64_t tc_coord(const TcCoord& c, int64_t lane, int64_t elem) {
  int64_t v = 0;
  for (const TcTerm& t : c) v += ((t.lane ? lane : elem) / t.div % t.mod) * t.mul;
  return v;
}

namespace {

TcTerm lane(int div, int mod, int mul = 1) { return TcTerm{true, div, mod, mul}; }
TcTerm elem(int div, int mod, int mul = 1) { return TcTerm{false, div, mod, mul}; }

TensorCoreShape tc_named(std::string name, int m, int n, int k, Scalar in, int threads, int a, int b, int c) {
  TensorCoreShape tc;
  tc.name = std::move(name);
  tc.m = m, tc.n = n, tc.k = k, tc.in = in, tc.acc = Scalar::Float32, tc.threads = threads;
  tc.a_elems = a, tc.b_elems = b, tc.c_elems = c;
  return tc;
}

}  // namespace

std::vector<TensorCoreShape> nvidia_tensor_cores(int sm) {
  if (sm < 80) return {};
  // mma.sync.aligned.m16n8k16.row.col (PTX ISA, "Matrix fragments for mma.m16n8k16"): lane =
  // 4 * groupID + threadID_in_group.
  std::vector<TensorCoreShape> out;
  for (Scalar in : {Scalar::Float16, Scalar::BFloat16}) {
    TensorCoreShape tc =
        tc_named(in == Scalar::Float16 ? "m16n8k16_f16_f32" : "m16n8k16_bf16_f32", 16, 8, 16, in, 32, 8, 4, 4);
    tc.a_row = {lane(4, 8), elem(2, 2, 8)};
    tc.a_col = {lane(1, 4, 2), elem(1, 2), elem(4, 2, 8)};
    tc.b_row = {lane(1, 4, 2), elem(1, 2), elem(2, 2, 8)};
    tc.b_col = {lane(4, 8)};
    tc.c_row = {lane(4, 8), elem(2, 2, 8)};
    tc.c_col = {lane(1, 4, 2), elem(1, 2)};
    out.push_back(tc);
  }
  return out;
}

std::vector<TensorCoreShape> amd_tensor_cores(const std::string& gfx) {
  std::vector<TensorCoreShape> out;
  if (gfx == "gfx908" || gfx == "gfx90a" || gfx.rfind("gfx94", 0) == 0) {
    // v_mfma_f32_16x16x16{f16,bf16_1k}, wave64 (AMD's matrix instruction calculator): lane = 16 *
    // block + i; A[i][4 * block + e], B[4 * block + e][i], D[4 * block + e][i].
    for (Scalar in : {Scalar::Float16, Scalar::BFloat16}) {
      if (in == Scalar::BFloat16 && gfx == "gfx908") continue;  // bf16_1k came with gfx90a
      TensorCoreShape tc = tc_named(in == Scalar::Float16 ? "mfma_16x16x16_f16_f32" : "mfma_16x16x16_bf16_f32", 16, 16,
                                    16, in, 64, 4, 4, 4);
      tc.a_row = {lane(1, 16)};
      tc.a_col = {lane(16, 4, 4), elem(1, 4)};
      tc.b_row = {lane(16, 4, 4), elem(1, 4)};
      tc.b_col = {lane(1, 16)};
      tc.c_row = {lane(16, 4, 4), elem(1, 4)};
      tc.c_col = {lane(1, 16)};
      out.push_back(tc);
    }
  } else if (gfx.rfind("gfx11", 0) == 0) {
    // v_wmma_f32_16x16x16_{f16,bf16}, wave32 (AMD's RDNA3 WMMA guide): lanes 16-31 repeat A and B of
    // lanes 0-15; A[lane % 16][e], B[e][lane % 16], D[2 * e + lane / 16][lane % 16].
    for (Scalar in : {Scalar::Float16, Scalar::BFloat16}) {
      TensorCoreShape tc = tc_named(in == Scalar::Float16 ? "wmma_16x16x16_f16_f32" : "wmma_16x16x16_bf16_f32", 16, 16,
                                    16, in, 32, 16, 16, 8);
      tc.a_row = {lane(1, 16)};
      tc.a_col = {elem(1, 16)};
      tc.b_row = {elem(1, 16)};
      tc.b_col = {lane(1, 16)};
      tc.c_row = {elem(1, 8, 2), lane(16, 2)};
      tc.c_col = {lane(1, 16)};
      out.push_back(tc);
    }
  }
  return out;
}

std::string Target::key() const {
  std::string k =
      cat(renderer, "|", arch, "|", triple, "|", features, "|", has_threads, cores, "|", has_local, has_shared,
          local_memory_bytes, "|", max_local_size[0], ",", max_local_size[1], ",", max_local_size[2], ",",
          max_local_total, "|", max_global_size[0], ",", max_global_size[1], ",", max_global_size[2], "|", warp_size,
          "/", compute_units, "|", vector_bits, "/", vector_registers, "|", dtypes, "|", vector_math, "|",
          streaming_store_bytes, "|", has_gather_scatter, "|", cache_bytes, "|", packed_panel, "|");
  for (Op op : native_math) k += cat(op_name(op), ",");
  for (const TensorCoreShape& tc : tensor_cores)
    k += cat("|tc", tc.name, tc.m, "x", tc.n, "x", tc.k, scalar_name(tc.in), scalar_name(tc.acc),
             tc.emulated ? "e" : "");
  return k;
}

}  // namespace sn
