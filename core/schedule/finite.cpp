#include "core/schedule/finite.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

namespace sn {

namespace {

// Whether no element of `bytes` (elements of dt) is inf or NaN: its exponent field not all ones.
// 16 bytes at a time in vectors of the compiler's (SSE2, NEON), with no branch but one per block:
// ResNet-18's 47 MB of weights take about 2 ms, what reading them from memory takes (a scalar
// loop took 4.5 ms).
template <class Bits>
bool no_full_exponent(const std::string& bytes, Bits exponent) {
  typedef Bits Vec __attribute__((vector_size(16)));
  constexpr size_t kLanes = 16 / sizeof(Bits);
  const size_t n = bytes.size() / sizeof(Bits);
  const char* p = bytes.data();
  const Vec e = Vec{} + exponent;
  size_t i = 0;
  for (constexpr size_t kBlock = 4096; i + kBlock <= n; i += kBlock) {
    Vec full{};
    for (size_t j = i; j < i + kBlock; j += kLanes) {
      Vec v;
      std::memcpy(&v, p + j * sizeof(Bits), sizeof v);
      full |= Vec((v & e) == e);
    }
    for (size_t l = 0; l < kLanes; l++)
      if (full[l]) return false;
  }
  for (; i < n; i++) {
    Bits b;
    std::memcpy(&b, p + i * sizeof(Bits), sizeof(Bits));
    if ((b & exponent) == exponent) return false;
  }
  return true;
}

bool bytes_finite(const std::string& bytes, DType dt) {
  switch (dt.scalar) {
    case Scalar::Float32:
      return no_full_exponent<uint32_t>(bytes, 0x7f800000u);
    case Scalar::Float64:
      return no_full_exponent<uint64_t>(bytes, 0x7ff0000000000000ull);
    case Scalar::Float16:
      return no_full_exponent<uint16_t>(bytes, 0x7c00u);
    case Scalar::BFloat16:
      return no_full_exponent<uint16_t>(bytes, 0x7f80u);
    default:
      return !dt.is_float();  // integers and bools are; fp8 constants are not checked
  }
}

// Whether every value v takes in its kernel is finite, given which of the kernel's slots are.
class FiniteValues {
 public:
  explicit FiniteValues(const std::vector<bool>& slot_finite) : slot_finite_(slot_finite) {}

  bool operator()(const UOp* v) {
    if (!v->dtype.is_float()) return true;
    auto it = memo_.find(v);
    if (it != memo_.end()) return it->second;
    bool r = compute(v);
    memo_.emplace(v, r);
    return r;
  }

 private:
  bool compute(const UOp* v) {
    switch (v->op) {
      case Op::Const:
        return std::isfinite(v->const_float());
      case Op::Load: {
        const UOp* base = v->src(0)->op == Op::Index ? v->src(0)->src(0) : nullptr;
        if (base == nullptr || base->op != Op::Param) return false;
        const int64_t slot = base->as<ParamArg>().slot;
        if (slot < 0 || size_t(slot) >= slot_finite_.size() || !slot_finite_[size_t(slot)]) return false;
        return v->nsrc() < 2 || (*this)(v->src(1));  // the alt of a gated load
      }
      case Op::Where:
        return (*this)(v->src(1)) && (*this)(v->src(2));
      case Op::Neg:
        return (*this)(v->src(0));
      case Op::Cast: {
        // to float32 or float64 from an integer (at most 2^64 < 3.4e38) or from a float no wider
        const DType to = v->dtype, from = v->src(0)->dtype;
        if (to.scalar != Scalar::Float32 && to.scalar != Scalar::Float64) return false;
        if (!from.is_float()) return true;
        return from.itemsize() <= to.itemsize() && (*this)(v->src(0));
      }
      default:
        return false;
    }
  }

  const std::vector<bool>& slot_finite_;
  std::unordered_map<const UOp*, bool> memo_;
};

}  // namespace

std::vector<std::vector<int64_t>> finite_params(const Schedule& s) {
  // A buffer's state as the kernels run in order: constants as their bytes say, inputs and outputs
  // never (the caller writes them), intermediates finite until a kernel stores what may not be.
  std::vector<bool> finite(s.buffers.size(), false);
  for (size_t b = 0; b < s.buffers.size(); b++) {
    const ScheduleBuffer& sb = s.buffers[b];
    if (sb.kind == ScheduleBuffer::Kind::Constant)
      finite[b] = bytes_finite(sb.source->as<std::string>(), sb.dtype);
    else
      finite[b] = sb.kind == ScheduleBuffer::Kind::Intermediate;
  }
  std::vector<std::vector<int64_t>> out(s.kernels.size());
  for (size_t k = 0; k < s.kernels.size(); k++) {
    const ScheduledKernel& sk = s.kernels[k];
    std::vector<bool> slot_finite(sk.buffers.size(), false);
    for (size_t slot = 0; slot < sk.buffers.size(); slot++) {
      slot_finite[slot] = finite[size_t(sk.buffers[slot])];
      if (slot_finite[slot]) out[k].push_back(int64_t(slot));
    }
    FiniteValues finite_value(slot_finite);
    for (const UOp* st : sk.ast->src()) {
      const UOp* base = st->op == Op::Store && st->src(0)->op == Op::Index ? st->src(0)->src(0) : nullptr;
      const int64_t slot = base && base->op == Op::Param ? base->as<ParamArg>().slot : -1;
      if (slot < 0 || size_t(slot) >= sk.buffers.size()) {  // a root not seen before: it may write any
        for (int b : sk.buffers)
          finite[size_t(b)] = finite[size_t(b)] && s.buffers[size_t(b)].kind == ScheduleBuffer::Kind::Constant;
        continue;
      }
      const size_t b = size_t(sk.buffers[size_t(slot)]);
      finite[b] = finite[b] && finite_value(st->src(1));
    }
  }
  return out;
}

}  // namespace sn
