// Pat builders, the recursive matcher, Captures and the PatternMatcher rule index.
#include "core/rewrite/pattern.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace sn {

// ---- Pat builders ----------------------------------------------------------------------------

Pat Pat::any(const char* name) {
  Pat p;
  p.name_ = name;
  return p;
}

Pat Pat::cvar(const char* name) {
  Pat p;
  p.ops_ = {Op::Const};
  p.const_only_ = true;
  p.name_ = name;
  return p;
}

Pat Pat::cval(double v, const char* name) {
  Pat p = cvar(name);
  p.has_cval_ = true;
  p.cval_ = v;
  return p;
}

Pat Pat::op(Op op, std::vector<Pat> src, const char* name) {
  Pat p;
  p.ops_ = {op};
  p.src_given_ = !src.empty();
  p.src_ = std::move(src);
  p.name_ = name;
  return p;
}

Pat Pat::ops(std::initializer_list<Op> ops, std::vector<Pat> src, const char* name) {
  Pat p;
  p.ops_.assign(ops.begin(), ops.end());
  p.src_given_ = !src.empty();
  p.src_ = std::move(src);
  p.name_ = name;
  return p;
}

Pat Pat::named(const char* name) const {
  Pat p = *this;
  p.name_ = name;
  return p;
}

Pat Pat::comm() const {
  Pat p = *this;
  p.commutative_ = true;
  return p;
}

Pat Pat::any_len() const {
  Pat p = *this;
  p.allow_any_len_ = true;
  return p;
}

Pat Pat::repeat(Pat each) const {
  Pat p = *this;
  p.repeat_ = std::make_shared<Pat>(std::move(each));
  return p;
}

Pat Pat::dtype(std::initializer_list<DType> dts) const {
  Pat p = *this;
  p.dtypes_.assign(dts.begin(), dts.end());
  return p;
}

Pat Pat::dtype_if(std::function<bool(DType)> pred) const {
  Pat p = *this;
  p.dtype_pred_ = std::move(pred);
  return p;
}

Pat Pat::arg_if(std::function<bool(const Arg&)> pred) const {
  Pat p = *this;
  p.arg_pred_ = std::move(pred);
  return p;
}

Pat Pat::arg_eq(Arg a) const {
  Pat p = *this;
  p.arg_eq_ = std::make_shared<const Arg>(std::move(a));
  return p;
}

// ---- Captures -------------------------------------------------------------------------------

namespace {
// Names are usually the same string literal, so the pointer compare settles most lookups.
inline bool same_name(const char* a, const char* b) { return a == b || std::strcmp(a, b) == 0; }
}  // namespace

const UOp* Captures::get(const char* name) const {
  if (name == nullptr) return nullptr;
  for (size_t i = 0; i < n_; ++i)
    if (same_name(slots_[i].name, name)) return slots_[i].node;
  return nullptr;
}

const UOp* Captures::operator[](const char* name) const {
  const UOp* u = get(name);
  if (u == nullptr) fail(Code::Internal, "pattern capture '", name ? name : "(null)", "' is not bound");
  return u;
}

bool Captures::bind(const char* name, const UOp* u) {
  if (name == nullptr) return true;
  for (size_t i = 0; i < n_; ++i)
    if (same_name(slots_[i].name, name)) return slots_[i].node == u;
  if (n_ == kSlots) fail(Code::Internal, "pattern binds more than ", kSlots, " names (at '", name, "')");
  slots_[n_++] = {name, u};
  return true;
}

// ---- matching -------------------------------------------------------------------------------

namespace {

// A Const's value equals v, compared as numbers: integer args exactly (uint64 by its bit
// pattern), float args as doubles.
bool const_equals(const UOp* u, double v) {
  if (const auto* i = std::get_if<int64_t>(&u->arg)) {
    if (std::floor(v) != v || !(v >= -9223372036854775808.0 && v < 18446744073709551616.0)) return false;
    i128 have =
        u->dtype.scalar == Scalar::UInt64 ? static_cast<i128>(static_cast<uint64_t>(*i)) : static_cast<i128>(*i);
    i128 want = v < 0 ? static_cast<i128>(static_cast<int64_t>(v)) : static_cast<i128>(static_cast<uint64_t>(v));
    return have == want;
  }
  if (const auto* d = std::get_if<double>(&u->arg)) return *d == v;
  return false;
}

}  // namespace

class Matcher {
 public:
  // The checks on the node itself (no sources, no capture); cheapest first, so the arity and
  // dtype reject a node before any recursion. The matcher skips the op test at the root,
  // where its per-op index has already done it.
  template <bool kCheckOp = true>
  static bool node_ok(const Pat& p, const UOp* u) {
    if (kCheckOp && !p.ops_.empty() && std::find(p.ops_.begin(), p.ops_.end(), u->op) == p.ops_.end()) return false;
    if (p.src_given_ && !p.repeat_) {
      size_t want = p.src_.size();
      if (p.allow_any_len_ ? u->nsrc() < want : u->nsrc() != want) return false;
    }
    if (!p.dtypes_.empty() && std::find(p.dtypes_.begin(), p.dtypes_.end(), u->dtype) == p.dtypes_.end()) return false;
    if (p.const_only_ && u->op != Op::Const) return false;
    if (p.has_cval_ && !const_equals(u, p.cval_)) return false;
    if (p.arg_eq_ && !(u->arg == *p.arg_eq_)) return false;
    if (p.dtype_pred_ && !p.dtype_pred_(u->dtype)) return false;
    if (p.arg_pred_ && !p.arg_pred_(u->arg)) return false;
    return true;
  }

  template <bool kCheckOp = true>
  static bool match(const Pat& p, const UOp* u, Captures& cap) {
    if (!node_ok<kCheckOp>(p, u)) return false;
    size_t mark = cap.mark();
    if (!cap.bind(p.name_, u)) return false;
    if (match_sources(p, u, cap)) return true;
    cap.reset(mark);
    return false;
  }

 private:
  // Sources of u against p's source patterns. On failure the captures may hold partial
  // bindings; match() resets them.
  static bool match_sources(const Pat& p, const UOp* u, Captures& cap) {
    if (p.repeat_) {
      for (const UOp* s : u->src())
        if (!match(*p.repeat_, s, cap)) return false;
      return true;
    }
    if (!p.src_given_) return true;
    const size_t n = p.src_.size();
    if (!p.commutative_ || n < 2) {
      for (size_t i = 0; i < n; ++i)
        if (!match(p.src_[i], u->src(i), cap)) return false;
      return true;
    }
    size_t mark = cap.mark();
    if (n == 2) {  // the common case, without the permutation machinery
      if (match(p.src_[0], u->src(0), cap) && match(p.src_[1], u->src(1), cap)) return true;
      cap.reset(mark);
      return match(p.src_[0], u->src(1), cap) && match(p.src_[1], u->src(0), cap);
    }
    // More sources: try every order of the listed ones.
    if (n > 8) fail(Code::Internal, "commutative pattern with ", n, " sources (at most 8)");
    std::array<uint8_t, 8> perm{};
    for (size_t i = 0; i < n; ++i) perm[i] = static_cast<uint8_t>(i);
    do {
      size_t i = 0;
      while (i < n && match(p.src_[i], u->src(perm[i]), cap)) ++i;
      if (i == n) return true;
      cap.reset(mark);
    } while (std::next_permutation(perm.begin(), perm.begin() + n));
    return false;
  }
};

bool pat_match(const Pat& p, const UOp* u, Captures& cap) { return Matcher::match(p, u, cap); }

// ---- PatternMatcher -------------------------------------------------------------------------

PatternMatcher::PatternMatcher(std::vector<Rule> rules) : rules_(std::move(rules)) {
  by_op_.assign(static_cast<size_t>(Op::Count_), {});
  for (size_t i = 0; i < rules_.size(); ++i) {
    const Pat& p = rules_[i].pat;
    if (!rules_[i].fn) fail(Code::InvalidArg, "rule '", rules_[i].name, "' has no callback");
    if (p.any_op()) {
      for (auto& v : by_op_) v.push_back(static_cast<uint32_t>(i));
    } else {
      for (Op op : p.op_set()) {
        auto& v = by_op_[static_cast<size_t>(op)];
        // an op listed twice in a set must not run the rule twice
        if (v.empty() || v.back() != i) v.push_back(static_cast<uint32_t>(i));
      }
    }
  }
}

PatternMatcher PatternMatcher::operator+(const PatternMatcher& o) const {
  std::vector<Rule> all = rules_;
  all.insert(all.end(), o.rules_.begin(), o.rules_.end());
  return PatternMatcher(std::move(all));
}

const UOp* PatternMatcher::rewrite(Graph& g, const UOp* u, void* ctx) const {
  if (by_op_.empty()) return nullptr;
  const auto& idx = by_op_[static_cast<size_t>(u->op)];
  if (idx.empty()) return nullptr;
  Captures cap;
  for (uint32_t i : idx) {
    const Rule& r = rules_[i];
    cap.clear();
    if (!Matcher::match<false>(r.pat, u, cap)) continue;
    const UOp* out = r.fn(Match{g, u, cap, ctx});
    if (out != nullptr && out != u) return out;
  }
  return nullptr;
}

}  // namespace sn
