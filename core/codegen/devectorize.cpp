// Devectorize: for targets without vector types (C-style renderers), every vector value becomes
// its scalar lanes. A vector op is one scalar op per lane; a vector load or store (an Index with a
// k-lane pointer: k consecutive elements) is k scalar ones, each with its lane of a per-lane gate;
// a vector register or local buffer is a scalar one k times as long; Vectorize and Gep disappear,
// except around a Wmma, whose fragments stay vectors.
#include <unordered_map>

#include "core/codegen/codegen.h"

namespace sn {

namespace {

class Devectorizer {
 public:
  explicit Devectorizer(Graph& g) : g_(g) {}

  const UOp* run(const UOp* sink) {
    for (const UOp* u : toposort(sink)) visit(u);
    return one_.at(sink);
  }

 private:
  static bool vector(const UOp* u) { return u->dtype.lanes > 1; }

  // Lane i of the rebuilt form of u (a scalar source is the same for every lane).
  const UOp* lane(const UOp* u, size_t i) {
    auto it = lanes_.find(u);
    return it == lanes_.end() ? one_.at(u) : it->second.at(i);
  }

  void visit(const UOp* u) {
    std::vector<const UOp*> s;
    for (const UOp* x : u->src()) s.push_back(lanes_.count(x) ? nullptr : one_.at(x));
    const size_t k = u->dtype.lanes;
    switch (u->op) {
      case Op::Buffer:
        if (k > 1) {
          BufferArg b = u->as<BufferArg>();
          b.size *= int64_t(k);
          one_[u] = g_.make(Op::Buffer, u->dtype.base(), {}, b, u->tag);
          return;
        }
        break;
      case Op::After:  // ordering only: the dtype follows its (now scalar) base
        if (k > 1) {
          std::vector<const UOp*> deps;
          for (size_t i = 1; i < u->nsrc(); i++) deps.push_back(whole(u->src(i)));
          auto after = [&](const UOp* base) {
            std::vector<const UOp*> src{base};
            src.insert(src.end(), deps.begin(), deps.end());
            return g_.make(Op::After, base->dtype, src, u->arg, u->tag);
          };
          if (!lanes_.count(u->src(0))) {  // a vector buffer, now scalar
            one_[u] = after(one_.at(u->src(0)));
            return;
          }
          auto& out = lanes_[u];
          for (size_t i = 0; i < k; i++) out.push_back(after(lane(u->src(0), i)));
          return;
        }
        break;
      case Op::Index:
        if (k > 1 && lanes_.count(u->src(1))) {  // k elements at the k lanes of the index (a scatter)
          DType p = u->dtype.base().as_ptr(u->dtype.addrspace);
          auto& out = lanes_[u];
          for (size_t i = 0; i < k; i++) out.push_back(g_.make(Op::Index, p, {one_.at(u->src(0)), lane(u->src(1), i)}));
          return;
        }
        if (k > 1) {  // k consecutive elements
          const UOp* base = one_.at(u->src(0));
          const UOp* idx = one_.at(u->src(1));
          DType p = u->dtype.base().as_ptr(u->dtype.addrspace);
          auto& out = lanes_[u];
          for (size_t i = 0; i < k; i++) {
            const UOp* at = idx;
            if (i > 0)
              at = idx->op == Op::Const ? g_.cint(int64_t(idx->const_int()) + int64_t(i), idx->dtype)
                                        : g_.alu(Op::Add, idx, g_.cint(int64_t(i), idx->dtype));
            out.push_back(g_.make(Op::Index, p, {base, at}));
          }
          return;
        }
        break;
      case Op::Load:
        if (lanes_.count(u->src(0))) {
          auto& out = lanes_[u];
          for (size_t i = 0; i < k; i++) {
            std::vector<const UOp*> src{lane(u->src(0), i)};
            if (u->nsrc() == 3) src.push_back(lane(u->src(1), i)), src.push_back(lane(u->src(2), i));
            out.push_back(g_.make(Op::Load, u->dtype.base(), src, u->arg, u->tag));
          }
          return;
        }
        break;
      case Op::Store:
        if (lanes_.count(u->src(0))) {
          std::vector<const UOp*> stores;
          for (size_t i = 0; i < lanes_.at(u->src(0)).size(); i++) {
            std::vector<const UOp*> src{lane(u->src(0), i), lane(u->src(1), i)};
            if (u->nsrc() == 3) src.push_back(lane(u->src(2), i));
            stores.push_back(g_.make(Op::Store, dtypes::void_, src, u->arg, u->tag));
          }
          one_[u] = g_.make(Op::Group, dtypes::void_, stores);
          return;
        }
        break;
      case Op::Vectorize: {
        auto& out = lanes_[u];
        for (size_t i = 0; i < u->nsrc(); i++) out.push_back(lane(u->src(i), 0));
        return;
      }
      case Op::Wmma: {  // a tensor-core instruction takes and gives whole fragments (vector registers)
        std::vector<const UOp*> src;
        for (const UOp* x : u->src()) src.push_back(as_vector(x));
        const UOp* w = g_.make(Op::Wmma, u->dtype, src, u->arg, u->tag);
        auto& out = lanes_[u];
        for (size_t i = 0; i < k; i++) out.push_back(g_.make(Op::Gep, u->dtype.base(), {w}, int64_t(i)));
        return;
      }
      case Op::Gep:
        if (u->holds<int64_t>()) {
          one_[u] = lane(u->src(0), size_t(u->as<int64_t>()));
        } else {
          auto& out = lanes_[u];
          for (int64_t i : u->as<std::vector<int64_t>>()) out.push_back(lane(u->src(0), size_t(i)));
          if (out.size() == 1) one_[u] = out[0], lanes_.erase(u);
        }
        return;
      default:
        break;
    }
    if (k > 1) {  // an elementwise op, Cast or Bitcast: one scalar op per lane
      if (!is_elementwise(u->op) && u->op != Op::Cast && u->op != Op::Bitcast)
        fail(Code::Internal, "devectorize: ", op_name(u->op), " of ", u->dtype.name());
      auto& out = lanes_[u];
      Arg arg = u->op == Op::Cast || u->op == Op::Bitcast ? Arg{u->dtype.base()} : u->arg;
      for (size_t i = 0; i < k; i++) {
        std::vector<const UOp*> src;
        for (const UOp* x : u->src()) src.push_back(lane(x, i));
        out.push_back(g_.make(u->op, u->dtype.base(), src, arg, u->tag));
      }
      return;
    }
    for (size_t i = 0; i < s.size(); i++)
      if (!s[i]) s[i] = whole(u->src(i));
    one_[u] = g_.replace_src(u, s);
  }

  // A vector value as one vector node again: a Vectorize of its lanes.
  const UOp* as_vector(const UOp* u) {
    if (auto it = one_.find(u); it != one_.end()) return it->second;
    const auto& ls = lanes_.at(u);
    return g_.make(Op::Vectorize, u->dtype, ls);
  }

  // A vector used where one node is needed: only ordering sources (After, Barrier, End, Sink)
  // take vectors whole, so a Group of its lanes orders after all of them.
  const UOp* whole(const UOp* u) {
    if (auto it = one_.find(u); it != one_.end()) return it->second;
    return g_.make(Op::Group, dtypes::void_, lanes_.at(u));
  }

  Graph& g_;
  std::unordered_map<const UOp*, const UOp*> one_;                 // node -> its scalar rebuild
  std::unordered_map<const UOp*, std::vector<const UOp*>> lanes_;  // vector node -> its lanes
};

}  // namespace

const UOp* devectorize(Graph& g, const UOp* sink) { return Devectorizer(g).run(sink); }

}  // namespace sn
