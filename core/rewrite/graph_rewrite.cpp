// graph_rewrite and substitute: explicit-stack traversals (graphs can be millions of nodes
// deep), memoized per node so shared subgraphs are rewritten once.
#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/ir/node_map.h"
#include "core/rewrite/pattern.h"

namespace sn {

namespace {

// Successive rewrites of one node beyond this are taken as a rule cycle that never repeats a
// node (e.g. a rule that keeps producing fresh constants).
constexpr uint32_t kMaxSuccessiveRewrites = 100000;
// A stack this deep is far beyond any real graph (a 1M-node chain needs about 2M frames); it
// means rewrites keep nesting new work inside their results.
constexpr size_t kMaxStack = size_t{1} << 24;

// Marks a node whose rewrite has started but not finished. Never dereferenced.
const char kBusyTag = 0;
const UOp* const kBusy = reinterpret_cast<const UOp*>(&kBusyTag);

// One unit of pending work. `stage` says what is left to do for `n`; `a`, `b` carry the
// intermediate nodes of that work; `chain` counts successive rewrites leading to `n`.
struct Frame {
  const UOp* n;
  const UOp* a;
  const UOp* b;
  uint32_t stage;
  uint32_t chain;
};

[[noreturn]] void cycle_reentered(const UOp* u) {
  fail(Code::Internal, "graph_rewrite: rule cycle: node ", op_name(u->op), " (", u->dtype.name(), ", id ", u->id,
       ") is reached again while it is being rewritten");
}

[[noreturn]] void cycle_too_long(const UOp* u) {
  fail(Code::Internal, "graph_rewrite: rule cycle: more than ", kMaxSuccessiveRewrites,
       " successive rewrites, last node ", op_name(u->op), " (", u->dtype.name(), ")");
}

[[noreturn]] void stack_too_deep(const UOp* u) {
  fail(Code::Internal, "graph_rewrite: rule cycle: work stack above ", kMaxStack, " entries at node ", op_name(u->op),
       " (rewrites keep nesting)");
}

class Rewriter {
 public:
  Rewriter(Graph& g, const PatternMatcher& pm, void* ctx, RewriteStats* stats)
      : g_(g), pm_(pm), ctx_(ctx), stats_(stats) {
    stack_.reserve(64);  // one allocation where growing from empty took six
  }

  const UOp* children_first(const UOp* root);
  const UOp* parent_first(const UOp* root);
  const UOp* substitute(const UOp* root);
  NodeMap<const UOp*>& memo() { return memo_; }

 private:
  void push(const UOp* n, const UOp* a, const UOp* b, uint32_t stage, uint32_t chain) {
    if (stack_.size() >= kMaxStack) stack_too_deep(n);
    stack_.push_back(Frame{n, a, b, stage, chain});
  }
  // Push the sources of u that still need work, the first source on top.
  // Frame f's node (reached as a) rewrites to `next`: reuse next's final form when it is known,
  // else rewrite next first and record its result for f.n and a (stage 2, finish).
  void continue_with(const Frame& f, const UOp* a, const UOp* next) {
    const UOp* known = memo_.get(next);
    if (known == kBusy) cycle_reentered(next);
    if (known != nullptr) {
      memo_.set(f.n, known);
      if (a != f.n) memo_.set(a, known);
      return;
    }
    if (f.chain + 1 > kMaxSuccessiveRewrites) cycle_too_long(next);
    push(f.n, a, next, 2, f.chain);
    push(next, nullptr, nullptr, 0, f.chain + 1);
  }

  // Stage 2: the replacement f.b is final; it is the result of f.n and f.a too.
  void finish(const Frame& f) {
    const UOp* fin = memo_.get(f.b);
    memo_.set(f.n, fin);
    if (f.a != f.n) memo_.set(f.a, fin);
  }

  void push_sources(const UOp* u) {
    auto src = u->src();
    for (size_t i = src.size(); i-- > 0;) {
      const UOp* m = memo_.get(src[i]);
      if (m == nullptr || m == kBusy) push(src[i], nullptr, nullptr, 0, 0);
    }
  }
  // u with every source replaced by its final node (u itself when none changed).
  const UOp* rebuild(const UOp* u) {
    auto src = u->src();
    size_t i = 0;
    for (; i < src.size(); ++i)
      if (memo_.get(src[i]) != src[i]) break;
    if (i == src.size()) return u;
    srcbuf_.assign(src.begin(), src.end());
    for (; i < src.size(); ++i) srcbuf_[i] = memo_.get(src[i]);
    return g_.replace_src(u, srcbuf_);
  }
  const UOp* apply(const UOp* u) {
    if (stats_) ++stats_->visited;
    const UOp* r = pm_.rewrite(g_, u, ctx_);
    if (r == nullptr) return nullptr;
    // The memo is indexed by node id, which is only unique within one graph.
    if (r->graph() != &g_)
      fail(Code::InvalidArg, "graph_rewrite: a rule on ", op_name(u->op), " returned a node of another graph");
    if (stats_) ++stats_->rewrites;
    return r;
  }

  Graph& g_;
  const PatternMatcher& pm_;
  void* ctx_;
  RewriteStats* stats_;
  NodeMap<const UOp*> memo_;  // node -> its final rewrite (kBusy while in progress)
  std::vector<Frame> stack_;
  std::vector<const UOp*> srcbuf_;
};

// Stages: 0 = enter (push own sources), 1 = sources done: rebuild and apply rules,
// 2 = the replacement b of (n, rebuilt a) is final: record it for n and a.
const UOp* Rewriter::children_first(const UOp* root) {
  push(root, nullptr, nullptr, 0, 0);
  while (!stack_.empty()) {
    Frame f = stack_.back();
    stack_.pop_back();
    if (f.stage == 0) {
      const UOp* m = memo_.get(f.n);
      if (m == kBusy) cycle_reentered(f.n);
      if (m != nullptr) continue;
      memo_.set(f.n, kBusy);
      push(f.n, nullptr, nullptr, 1, f.chain);
      push_sources(f.n);
    } else if (f.stage == 1) {
      const UOp* n2 = rebuild(f.n);
      if (n2 != f.n) {
        // The rebuilt node may already be known (the same expression reached another way).
        const UOp* known = memo_.get(n2);
        if (known == kBusy) cycle_reentered(n2);
        if (known != nullptr) {
          memo_.set(f.n, known);
          continue;
        }
      }
      const UOp* r = apply(n2);
      if (r == nullptr) {
        memo_.set(f.n, n2);
        if (n2 != f.n) memo_.set(n2, n2);
        continue;
      }
      continue_with(f, n2, r);
    } else {
      finish(f);
    }
  }
  return memo_.get(root);
}

// Stages: 0 = apply rules to n until none applies (result a), then push a's sources;
// 1 = sources done: rebuild a; an unchanged a is final, a rebuilt one is rewritten again;
// 2 = the rebuilt node b is final: record it for n and a.
const UOp* Rewriter::parent_first(const UOp* root) {
  push(root, nullptr, nullptr, 0, 0);
  while (!stack_.empty()) {
    Frame f = stack_.back();
    stack_.pop_back();
    if (f.stage == 0) {
      const UOp* m = memo_.get(f.n);
      if (m == kBusy) cycle_reentered(f.n);
      if (m != nullptr) continue;
      memo_.set(f.n, kBusy);
      const UOp* cur = f.n;
      uint32_t chain = f.chain;
      const UOp* known = nullptr;
      while (const UOp* r = apply(cur)) {
        if (++chain > kMaxSuccessiveRewrites) cycle_too_long(r);
        cur = r;
        known = memo_.get(cur);
        if (known == kBusy) cycle_reentered(cur);
        if (known != nullptr) break;
      }
      if (known != nullptr) {
        memo_.set(f.n, known);
        continue;
      }
      if (cur != f.n) memo_.set(cur, kBusy);
      push(f.n, cur, nullptr, 1, chain);
      push_sources(cur);
    } else if (f.stage == 1) {
      const UOp* rebuilt = rebuild(f.a);
      if (rebuilt == f.a) {
        memo_.set(f.n, f.a);
        if (f.a != f.n) memo_.set(f.a, f.a);
        continue;
      }
      // New sources can enable rules on the node again, so it goes through stage 0 anew.
      continue_with(f, f.a, rebuilt);
    } else {
      finish(f);
    }
  }
  return memo_.get(root);
}

// The memo is preloaded with the map, so mapped nodes are final as given and never entered.
const UOp* Rewriter::substitute(const UOp* root) {
  push(root, nullptr, nullptr, 0, 0);
  while (!stack_.empty()) {
    Frame f = stack_.back();
    stack_.pop_back();
    if (f.stage == 0) {
      if (memo_.get(f.n) != nullptr) continue;
      memo_.set(f.n, kBusy);
      push(f.n, nullptr, nullptr, 1, 0);
      push_sources(f.n);
    } else {
      memo_.set(f.n, rebuild(f.n));
    }
  }
  return memo_.get(root);
}

}  // namespace

const UOp* graph_rewrite(Graph& g, const UOp* root, const PatternMatcher& pm, void* ctx, RewriteOrder order,
                         RewriteStats* stats) {
  if (root == nullptr) fail(Code::InvalidArg, "graph_rewrite: root is null");
  if (root->graph() != &g) fail(Code::InvalidArg, "graph_rewrite: root belongs to another graph");
  Rewriter rw(g, pm, ctx, stats);
  return order == RewriteOrder::ChildrenFirst ? rw.children_first(root) : rw.parent_first(root);
}

const UOp* substitute(Graph& g, const UOp* root, const std::vector<std::pair<const UOp*, const UOp*>>& map) {
  if (root == nullptr) fail(Code::InvalidArg, "substitute: root is null");
  if (root->graph() != &g) fail(Code::InvalidArg, "substitute: root belongs to another graph");
  const PatternMatcher no_rules;
  Rewriter rw(g, no_rules, nullptr, nullptr);
  for (const auto& [from, to] : map) {
    if (from == nullptr || to == nullptr) fail(Code::InvalidArg, "substitute: null node in the map");
    if (from->graph() != &g || to->graph() != &g) fail(Code::InvalidArg, "substitute: map node of another graph");
    rw.memo().set(from, to);
  }
  return rw.substitute(root);
}

}  // namespace sn
