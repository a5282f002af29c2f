// Patterns over UOps and the rewrite engine. A Pat describes a node: an op set, a dtype filter,
// an arg predicate, source patterns (positional, commutative, or repeated) and a capture name.
// A repeated capture name must bind the same node. Rules pair a Pat with a callback that
// returns the replacement (or nullptr for "no match"). A PatternMatcher indexes its rules by
// root op. graph_rewrite applies a matcher over a whole graph to a fixed point.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace sn {

class Pat {
 public:
  // any node (optionally captured)
  static Pat any(const char* name = nullptr);
  static Pat var(const char* name) { return any(name); }
  // a Const (optionally captured); cval: a Const with exactly that value
  static Pat cvar(const char* name = nullptr);
  static Pat cval(double v, const char* name = nullptr);
  // an op (or one of a set) with positional sources (empty: sources not checked)
  static Pat op(Op op, std::vector<Pat> src = {}, const char* name = nullptr);
  static Pat ops(std::initializer_list<Op> ops, std::vector<Pat> src = {}, const char* name = nullptr);

  // modifiers (return a copy)
  Pat named(const char* name) const;
  Pat comm() const;                                   // also try the two sources swapped
  Pat any_len() const;                                // extra sources beyond the listed ones are allowed
  Pat repeat(Pat each) const;                         // every source matches `each` (any count)
  Pat dtype(std::initializer_list<DType> dts) const;  // exact dtype in the set
  Pat dtype_if(std::function<bool(DType)> pred) const;
  Pat arg_if(std::function<bool(const Arg&)> pred) const;
  Pat arg_eq(Arg a) const;

  // ---- introspection (used by the matcher) ----
  bool any_op() const { return ops_.empty(); }
  const std::vector<Op>& op_set() const { return ops_; }

 private:
  friend class Matcher;
  friend struct PatImpl;
  std::vector<Op> ops_;
  std::vector<DType> dtypes_;
  std::function<bool(DType)> dtype_pred_;
  std::function<bool(const Arg&)> arg_pred_;
  std::shared_ptr<const Arg> arg_eq_;
  const char* name_ = nullptr;
  std::vector<Pat> src_;
  std::shared_ptr<Pat> repeat_;  // every source matches this
  bool src_given_ = false;
  bool commutative_ = false;
  bool allow_any_len_ = false;
  bool const_only_ = false;
  bool has_cval_ = false;
  double cval_ = 0;
};

// Captures bound by a match. Names are compared by content; at most 16 per match.
class Captures {
 public:
  const UOp* get(const char* name) const;         // nullptr if unbound
  const UOp* operator[](const char* name) const;  // throws Error(Internal) if unbound
  bool bind(const char* name, const UOp* u);      // false if bound to another node
  void clear() { n_ = 0; }
  size_t size() const { return n_; }
  size_t mark() const { return n_; }
  void reset(size_t m) { n_ = m; }

 private:
  struct Slot {
    const char* name;
    const UOp* node;
  };
  // Left uninitialized (only the first n_ are read): PatternMatcher::rewrite makes one Captures per
  // node it visits, and zeroing 256 bytes each time was 0.5% of lowering a convolution.
  static constexpr size_t kSlots = 16;
  Slot slots_[kSlots];
  size_t n_ = 0;
};

// What a rule's callback sees.
struct Match {
  Graph& g;
  const UOp* root;      // the matched node
  const Captures& cap;  // named captures
  void* ctx;            // the caller's context (graph_rewrite's ctx)
  const UOp* operator[](const char* name) const { return cap[name]; }
};

using RewriteFn = std::function<const UOp*(const Match&)>;

struct Rule {
  Pat pat;
  RewriteFn fn;
  std::string name;  // for statistics and debugging
};

class PatternMatcher {
 public:
  PatternMatcher() = default;
  explicit PatternMatcher(std::vector<Rule> rules);
  PatternMatcher operator+(const PatternMatcher& o) const;  // rules of this first, then o's

  // First rule (in order) whose pattern matches and whose callback returns a node other than
  // nullptr and u. Returns nullptr when nothing rewrites.
  const UOp* rewrite(Graph& g, const UOp* u, void* ctx = nullptr) const;
  size_t size() const { return rules_.size(); }

 private:
  std::vector<Rule> rules_;
  std::vector<std::vector<uint32_t>> by_op_;  // rule indices per root op (wildcards included)
};

// Does `p` match `u`? Binds captures into `cap` (for tests and one-off checks).
bool pat_match(const Pat& p, const UOp* u, Captures& cap);

enum class RewriteOrder {
  ChildrenFirst,  // rewrite sources, rebuild the node, then apply rules to it, to a fixed point
  ParentFirst,    // apply rules to a node until none applies, then descend into its sources
};

struct RewriteStats {
  uint64_t visited = 0;   // nodes looked at
  uint64_t rewrites = 0;  // successful rule applications
};

// Rewrite the graph under root to a fixed point with memoization. Every replacement is itself
// rewritten. Throws Error(Internal) if rewriting does not converge (a rule cycle).
const UOp* graph_rewrite(Graph& g, const UOp* root, const PatternMatcher& pm, void* ctx = nullptr,
                         RewriteOrder order = RewriteOrder::ChildrenFirst, RewriteStats* stats = nullptr);

// Replace nodes by a map (one pass, no rule re-application); parents are rebuilt.
const UOp* substitute(Graph& g, const UOp* root, const std::vector<std::pair<const UOp*, const UOp*>>& map);

}  // namespace sn
