// The UOp: (op, dtype, src, arg, tag), immutable and hash-consed by its Graph, plus the typed
// args and the derived-property types (shape, device, min/max).
#pragma once
#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/ir/dtype.h"
#include "core/ir/ops.h"

namespace sn {

class UOp;
class Graph;

// ---- typed args -------------------------------------------------------------------------

// A device: empty = none (virtual, e.g. a Const), one name, or an n-tuple of names.
struct Device {
  std::vector<std::string> names;
  bool tuple = false;  // an n-tuple device (multi-device), even when it has one name
  bool null() const { return names.empty(); }
  std::string str() const;  // "CPU", "(CPU:0,CPU:1)", "NULL"
  bool operator==(const Device&) const = default;
};

struct ReduceArg {  // Reduce: the reduction op (Add, Max, Mul) and the axes it collapses
  Op op;
  std::vector<int64_t> axes;
  bool operator==(const ReduceArg&) const = default;
};
struct RangeArg {  // Range: a loop id (unique within a kernel) and its kind
  int64_t id;
  AxisType type;
  bool operator==(const RangeArg&) const = default;
};
struct BufferArg {  // Buffer: identity (distinct buffers of equal size stay distinct), size, place
  uint64_t id;
  int64_t size;
  Device device;
  AddrSpace addrspace = AddrSpace::Global;
  bool operator==(const BufferArg&) const = default;
};
struct ParamArg {  // Param: slot number of a Function's argument, and where it lives
  int64_t slot;
  Device device;
  AddrSpace addrspace = AddrSpace::Global;
  bool operator==(const ParamArg&) const = default;
};
struct VarArg {  // DefineVar: a bounded symbolic integer variable
  std::string name;
  int64_t min, max;
  bool operator==(const VarArg&) const = default;
};
struct MemArg {  // Load / Copy / Stage: target device and address space
  Device device;
  AddrSpace addrspace = AddrSpace::Global;
  bool operator==(const MemArg&) const = default;
};
struct SliceArg {  // Slice: size elements of dtype
  int64_t size;
  DType dtype;
  bool operator==(const SliceArg&) const = default;
};

// Const: int64_t for bool/int/index dtypes (uint64 keeps its bit pattern), double for floats.
// std::vector<int64_t>: Permute order, Flip flags (0/1), Replicated axes.
// DType: Cast / Bitcast target. int64_t: GetTuple index. std::string: Special name, Custom format,
// Source text, Binary bytes, CustomFunction name, Ins mnemonic.
using Arg = std::variant<std::monostate, int64_t, double, std::vector<int64_t>, DType, std::string, ReduceArg, RangeArg,
                         BufferArg, ParamArg, VarArg, MemArg, SliceArg>;

uint64_t hash_arg(const Arg& a);
bool arg_equal(const Arg& a, const Arg& b);  // doubles by bit pattern (NaN == NaN, -0.0 != 0.0)
// Stable across processes (content hashes key the disk cache); inline: Graph::intern calls it per
// source of every node it builds or finds.
inline uint64_t hash_combine(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}
std::string arg_str(const Arg& a);  // for the printer; "" for monostate

// ---- derived property types ------------------------------------------------------------

// One dimension of a shape: a constant, or (sym != nullptr) a symbolic index expression.
struct Dim {
  int64_t value = 0;
  const UOp* sym = nullptr;
  bool is_const() const { return sym == nullptr; }
  bool operator==(const Dim& o) const { return sym == o.sym && (sym != nullptr || value == o.value); }
  static Dim of(int64_t v) { return Dim{v, nullptr}; }
};
using Shape = std::vector<Dim>;
std::string shape_str(const Shape& s);  // "(2,3,n)"
// Whether some dim is symbolic.
bool is_symbolic(const Shape& s);
// Product of the dims if all are constant.
std::optional<int64_t> shape_numel(const Shape& s);

// Interval of values a node can take. Integers/bools: exact i128 bounds. Floats: doubles
// (±inf when unknown).
struct MinMax {
  bool is_float = false;
  i128 lo = 0, hi = 0;
  double flo = 0, fhi = 0;
};

// ---- the node ----------------------------------------------------------------------------

class UOp {
  // (Fields in this order: what every walk and every intern probe reads, op to hash_, shares the
  // first 32 bytes, so one cache line however a node lies in its block; the node stays 224 bytes
  // with no padding. With op and the sources on different lines than the hash, lowering conv
  // 64x56x56 read-missed the L1 cache 77k times, now 64k: callgrind's cache model.)
 public:
  Op op;
  DType dtype;
  uint32_t id = 0;  // creation order within its graph (children always have smaller ids)

 private:
  uint32_t nsrc_ = 0;
  const UOp* const* srcs_ = nullptr;
  uint64_t hash_ = 0;  // intern hash (pointer-based, not stable across processes)
  Graph* graph_ = nullptr;

 public:
  int64_t tag = 0;  // scratch for passes; part of identity
  Arg arg;

  std::span<const UOp* const> src() const { return {srcs_, nsrc_}; }
  const UOp* src(size_t i) const { return srcs_[i]; }
  size_t nsrc() const { return nsrc_; }
  Graph* graph() const { return graph_; }

  // shape: derived and verified when the node is built; nullptr if the node has none (void ops)
  const Shape* shape() const { return has_shape_ ? &shape_ : nullptr; }
  // Lazily derived, iteratively (deep graphs never recurse):
  const MinMax& minmax() const;
  const Device& device() const;
  int axis() const;               // sharding axis, -1 = null
  uint64_t content_hash() const;  // stable across processes: op, dtype, arg, children's hashes
  // Derives minmax and content_hash of this node and everything under it, so that other threads
  // may then read them (a kernel renders on a compile thread while this one lowers the next).
  void derive_for_readers() const;

  // typed arg access
  template <class T>
  const T& as() const {
    return std::get<T>(arg);
  }
  template <class T>
  bool holds() const {
    return std::holds_alternative<T>(arg);
  }

  // Const helpers (valid when op == Const)
  bool is_const() const { return op == Op::Const; }
  i128 const_int() const;  // interpreted by dtype
  double const_float() const;
  bool is_const_value(double v) const;  // Const equal to v (ints and floats)

 private:
  friend class Graph;
  friend struct PropsAccess;
  // (The rest ordered by size, so that a node is 224 bytes, not 256 with padding: lowering a
  // convolution builds thousands of nodes, and on a program's first compile each fresh page costs
  // a fault.)
  mutable uint64_t content_hash_ = 0;
  mutable const Device* device_ = nullptr;
  mutable MinMax minmax_;
  Shape shape_;
  mutable int axis_ = -1;
  bool has_shape_ = false;
  // Bit set = property computed. Set (release) after the value is written, so a thread that sees
  // the bit (acquire) sees the value; a property is computed by one thread at a time (graph.h).
  mutable std::atomic<uint8_t> lazy_{0};
};

// The scalar a Vectorize repeats in every lane (a splat), or nullptr.
const UOp* splat_source(const UOp* u);

}  // namespace sn
