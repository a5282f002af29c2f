#include "core/schedule/finite.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>

#include "core/runtime/disk_cache.h"
#include "core/util/error.h"

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

std::atomic<uint64_t> g_scanned_bytes{0}, g_disk_hits{0};

// Whether a constant's bytes, as elements of dt, are all finite: kept in `disk` (when given) for a
// constant of kKeptScanBytes or more (2 MiB scan in about 0.1 ms, a few reads of the cache; a
// smaller one is scanned every time, and the cache holds fewer entries).
// The key names the bytes by their content hash (the graph keeps it from building the node), so
// the same weights in another program or process find it. A value that is not one of the two
// answers is scanned again and replaced.
bool constant_finite(const UOp* source, DType dt, DiskCache* disk) {
  const std::string& bytes = source->as<std::string>();
  std::string key;
  if (disk && bytes.size() >= kKeptScanBytes) {
    key = cat("finite/1/", disk_cache_version(), "/", source->content_hash(), "/", bytes.size(), "/", dt.name());
    if (std::optional<std::string> v = disk->get(key); v && (*v == "finite" || *v == "not finite")) {
      g_disk_hits++;
      return *v == "finite";
    }
  }
  g_scanned_bytes += bytes.size();
  const bool finite = bytes_finite(bytes, dt);
  if (!key.empty()) disk->put(key, finite ? "finite" : "not finite");
  return finite;
}

// Whether every value v takes in its kernel is finite, given which of the kernel's slots are.
class FiniteValues {
 public:
  explicit FiniteValues(std::function<bool(int64_t slot)> slot_finite) : slot_finite_(std::move(slot_finite)) {}

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
        if (!slot_finite_(base->as<ParamArg>().slot)) return false;
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

  std::function<bool(int64_t)> slot_finite_;
  std::unordered_map<const UOp*, bool> memo_;
};

// Whether a kernel can use what finite_params says of it: it sums (a Reduce) where a load is
// gated, padded with zeros. Other kernels ask nothing, so the constants only they read are never
// scanned (a 64 MB matrix of a matrix-vector product: 2.4 ms).
bool pads_a_sum(const UOp* ast) {
  bool reduce = false, gated = false;
  for (const UOp* u : toposort(ast)) {
    reduce = reduce || u->op == Op::Reduce;
    gated = gated || (u->op == Op::Load && u->nsrc() == 3);
  }
  return reduce && gated;
}

// Which buffers hold only finite values when a kernel starts, worked out on demand: a constant
// is scanned once, the first time a kernel asks; an intermediate is finite when every kernel that
// wrote it before stored finite values.
class Finiteness {
 public:
  Finiteness(const Schedule& s, DiskCache* disk)
      : s_(s), disk_(disk), scanned_(s.buffers.size(), -1), writes_(s.buffers.size()) {
    for (size_t k = 0; k < s.kernels.size(); k++) {
      const ScheduledKernel& sk = s.kernels[k];
      for (const UOp* st : sk.ast->src()) {
        const UOp* base = st->op == Op::Store && st->src(0)->op == Op::Index ? st->src(0)->src(0) : nullptr;
        const int64_t slot = base && base->op == Op::Param ? base->as<ParamArg>().slot : -1;
        if (slot >= 0 && size_t(slot) < sk.buffers.size()) {
          writes_[size_t(sk.buffers[size_t(slot)])].push_back({k, st});
        } else {  // a root not seen before: it may write any of its buffers, anything
          for (int b : sk.buffers) writes_[size_t(b)].push_back({k, nullptr});
        }
      }
    }
  }

  // Whether buffer b holds only finite values when kernel k starts.
  bool before(size_t b, size_t k) {
    const ScheduleBuffer& sb = s_.buffers[b];
    if (sb.kind == ScheduleBuffer::Kind::Constant) {
      if (scanned_[b] < 0) scanned_[b] = constant_finite(sb.source, sb.dtype, disk_);
      return scanned_[b] == 1;
    }
    if (sb.kind != ScheduleBuffer::Kind::Intermediate) return false;  // the caller writes it
    auto [it, fresh] = known_.emplace(std::make_pair(b, k), false);
    if (!fresh) return it->second;
    bool finite = true;
    for (const auto& [w, st] : writes_[b]) {
      if (w >= k || !finite) break;
      finite = st != nullptr && stores_finite(w, st);
    }
    known_[{b, k}] = finite;
    return finite;
  }

 private:
  bool stores_finite(size_t w, const UOp* store) {
    const ScheduledKernel& sk = s_.kernels[w];
    FiniteValues finite_value([&](int64_t slot) {
      return slot >= 0 && size_t(slot) < sk.buffers.size() && before(size_t(sk.buffers[size_t(slot)]), w);
    });
    return finite_value(store->src(1));
  }

  const Schedule& s_;
  DiskCache* disk_;
  std::vector<int8_t> scanned_;                                     // per constant: -1 not yet, 0, 1
  std::vector<std::vector<std::pair<size_t, const UOp*>>> writes_;  // per buffer: (kernel, Store or null)
  std::map<std::pair<size_t, size_t>, bool> known_;                 // (buffer, kernel) -> before()
};

}  // namespace

std::vector<std::vector<int64_t>> finite_params(const Schedule& s, DiskCache* disk) {
  Finiteness finiteness(s, disk);
  std::vector<std::vector<int64_t>> out(s.kernels.size());
  for (size_t k = 0; k < s.kernels.size(); k++) {
    const ScheduledKernel& sk = s.kernels[k];
    if (!pads_a_sum(sk.ast)) continue;
    for (size_t slot = 0; slot < sk.buffers.size(); slot++)
      if (finiteness.before(size_t(sk.buffers[slot]), k)) out[k].push_back(int64_t(slot));
  }
  return out;
}

FiniteStats finite_stats() { return FiniteStats{g_scanned_bytes.load(), g_disk_hits.load()}; }

}  // namespace sn
