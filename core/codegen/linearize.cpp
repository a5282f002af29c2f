// Linearize: place every node in a loop and emit Linear(...) in execution order.
//
// Loop tree. A node is inside the ranges it reads that no End on the way closes (its open set).
// Ranges are ordered by (nesting depth, id): an End(x, r) whose own open set holds q puts r
// deeper than q; loops at the same depth nest by id (the optimizer numbers them outer to inner).
// A range's parent is the latest range (in that order) that shares an open set with it; every
// other range sharing one must be an ancestor, else the kernel has no loop nest (an error).
//
// Placement. A node goes to the deepest loop of its open set, so loop-invariant work sits
// outside the loops it does not depend on. Inside a loop, nodes and child loops (as one item
// each) are emitted in dependency order, preferring the original toposort position; a child
// loop emits Range, its body, then its End. Finally, stores with a scalar gate go inside
// If(gate) ... Endif blocks.
#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "core/codegen/codegen.h"
#include "core/codegen/kernel_util.h"

namespace sn {

namespace {

class Linearizer {
 public:
  Linearizer(Graph& g, const UOp* sink) : g_(g), topo_(needed_nodes(sink)), open_(topo_) {
    uint32_t max_id = 0;
    for (const UOp* u : topo_) max_id = std::max(max_id, u->id);
    size_t n = size_t(max_id) + 1;
    pos_.assign(n, kNone);
    depth_.assign(n, 0);
    level_.assign(n, 0);
    parent_.assign(n, nullptr);
    block_.assign(n, nullptr);
    placed_.assign(n, false);
    for (size_t i = 0; i < topo_.size(); i++) pos_[topo_[i]->id] = uint32_t(i);
  }

  const UOp* run() {
    for (const UOp* u : topo_) {
      if (u->op == Op::Reduce) fail(Code::Internal, "linearize: Reduce left in the kernel (lower_reduces runs first)");
      if (u->op == Op::End && u->nsrc() != 2)
        fail(Code::Unsupported, "linearize: End closing ", u->nsrc() - 1, " ranges");
      if (u->op == Op::Range) ranges_.push_back(u);
    }
    compute_depth();
    build_tree();
    place();
    emit_block(nullptr);
    check_order();
    return g_.make(Op::Linear, dtypes::void_, gate_stores());
  }

 private:
  static constexpr uint32_t kNone = ~0u;

  // The toposort without the shape operands of Params (metadata, not instructions).
  static std::vector<const UOp*> needed_nodes(const UOp* sink) {
    std::vector<const UOp*> all = toposort(sink);
    std::unordered_set<const UOp*> needed{sink};
    for (size_t i = all.size(); i-- > 0;) {
      const UOp* u = all[i];
      if (!needed.count(u) || u->op == Op::Param) continue;
      for (const UOp* s : u->src()) needed.insert(s);
    }
    std::vector<const UOp*> out;
    for (const UOp* u : all)
      if (needed.count(u)) out.push_back(u);
    return out;
  }

  bool known(const UOp* u) const { return u->id < pos_.size() && pos_[u->id] != kNone; }

  bool before(const UOp* a, const UOp* b) const {  // range order: depth, then id
    int da = depth_[a->id], db = depth_[b->id];
    if (da != db) return da < db;
    int64_t ia = a->as<RangeArg>().id, ib = b->as<RangeArg>().id;
    if (ia != ib) return ia < ib;
    return a->id < b->id;
  }

  void compute_depth() {
    bool changed = true;
    for (size_t iter = 0; changed; iter++) {
      if (iter > ranges_.size() + 1) fail(Code::Internal, "linearize: loops nest in a cycle");
      changed = false;
      for (const UOp* u : topo_) {
        if (u->op != Op::End) continue;
        const UOp* r = u->src(1);
        for (const UOp* q : open_.of(u)) {
          if (depth_[q->id] + 1 > depth_[r->id]) {
            depth_[r->id] = depth_[q->id] + 1;
            changed = true;
          }
        }
      }
    }
  }

  void build_tree() {
    // For each range, the ranges that come before it in some open set.
    std::unordered_map<const UOp*, std::vector<const UOp*>> earlier;
    std::unordered_set<uint64_t> seen_pairs;
    std::vector<const UOp*> set;
    const std::vector<const UOp*>* last = nullptr;
    for (const UOp* u : topo_) {
      const auto& open = open_.of(u);
      if (open.size() < 2 || (last && *last == open)) continue;
      last = &open;
      set = open;
      std::sort(set.begin(), set.end(), [&](const UOp* a, const UOp* b) { return before(a, b); });
      for (size_t i = 1; i < set.size(); i++)
        for (size_t j = 0; j < i; j++)
          if (seen_pairs.insert((uint64_t(set[j]->id) << 32) | set[i]->id).second) earlier[set[i]].push_back(set[j]);
    }
    std::vector<const UOp*> order = ranges_;
    std::sort(order.begin(), order.end(), [&](const UOp* a, const UOp* b) { return before(a, b); });
    for (const UOp* r : order) {
      const UOp* parent = nullptr;
      auto it = earlier.find(r);
      if (it != earlier.end())
        for (const UOp* q : it->second)
          if (!parent || before(parent, q)) parent = q;
      parent_[r->id] = parent;
      children_[parent].push_back(r);
      level_[r->id] = parent ? level_[parent->id] + 1 : 1;
      if (it == earlier.end()) continue;
      for (const UOp* q : it->second)
        if (!is_ancestor_or_self(q, parent))
          fail(Code::Unsupported, "linearize: range ", r->as<RangeArg>().id, " is used with ranges ",
               q->as<RangeArg>().id, " and ", parent->as<RangeArg>().id, " that are not nested loops");
    }
  }

  bool is_ancestor_or_self(const UOp* a, const UOp* b) const {
    for (const UOp* x = b; x; x = parent_[x->id])
      if (x == a) return true;
    return false;
  }

  void place() {
    for (const UOp* u : topo_) {
      const UOp* b = nullptr;
      if (u->op == Op::End) {
        b = u->src(1);  // an End belongs to the loop it closes
      } else {
        const auto& open = open_.of(u);
        for (const UOp* r : open)
          if (!b || level_[r->id] > level_[b->id]) b = r;
        for (const UOp* r : open)
          if (!is_ancestor_or_self(r, b))
            fail(Code::Internal, "linearize: ", op_name(u->op), " reads ranges ", r->as<RangeArg>().id, " and ",
                 b->as<RangeArg>().id, " of sibling loops");
      }
      block_[u->id] = b;
      members_[b].push_back(u);
    }
    // Every block's members with those of its sub-blocks, deepest blocks first.
    std::vector<const UOp*> blocks = ranges_;
    std::sort(blocks.begin(), blocks.end(), [&](const UOp* a, const UOp* b) { return level_[a->id] > level_[b->id]; });
    for (const UOp* r : blocks) {
      auto& all = subtree_[r];
      if (auto it = members_.find(r); it != members_.end()) all = it->second;
      if (auto it = children_.find(r); it != children_.end())
        for (const UOp* c : it->second) all.insert(all.end(), subtree_[c].begin(), subtree_[c].end());
    }
  }

  // The item of block B that `s` belongs to, or nullptr if s lives outside B's subtree.
  const UOp* item_of(const UOp* s, const UOp* B, bool* is_loop) const {
    if (!known(s)) return nullptr;  // not an instruction (a Param's shape)
    const UOp* b = block_[s->id];
    if (b == B) {
      *is_loop = false;
      return s;
    }
    for (const UOp* x = b; x; x = parent_[x->id])
      if (parent_[x->id] == B) {
        *is_loop = true;
        return x;
      }
    return nullptr;
  }

  static bool emitted_kind(const UOp* u) { return u->op != Op::Group && u->op != Op::Sink && u->op != Op::Stack; }

  void emit_block(const UOp* B) {
    // Items: this block's own nodes (minus its Range and the Ends closing it) and child loops.
    struct Item {
      const UOp* node;  // a node of this block, or the Range of a child loop
      bool loop;
    };
    std::vector<Item> items;
    std::unordered_map<const UOp*, size_t> index;  // node or child Range -> item
    if (auto it = members_.find(B); it != members_.end())
      for (const UOp* u : it->second) {
        if (u == B || (u->op == Op::End && u->src(1) == B)) continue;
        index[u] = items.size();
        items.push_back({u, false});
      }
    if (auto it = children_.find(B); it != children_.end())
      for (const UOp* c : it->second) {
        index[c] = items.size();
        items.push_back({c, true});
      }
    // Dependencies between items.
    std::vector<std::vector<size_t>> users(items.size());
    std::vector<size_t> pending(items.size(), 0);
    std::vector<size_t> deps;
    for (size_t i = 0; i < items.size(); i++) {
      deps.clear();
      auto add_deps = [&](const UOp* u) {
        for (const UOp* s : u->src()) {
          bool loop = false;
          const UOp* it = item_of(s, B, &loop);
          if (!it) continue;
          if (!loop && (it == B || (it->op == Op::End && it->src(1) == B))) continue;
          size_t j = index.at(it);
          if (j != i) deps.push_back(j);
        }
      };
      if (items[i].loop)
        for (const UOp* u : subtree_[items[i].node]) add_deps(u);
      else
        add_deps(items[i].node);
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      for (size_t j : deps) users[j].push_back(i);
      pending[i] = deps.size();
    }
    using Entry = std::pair<uint32_t, size_t>;  // (toposort position, item)
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
    for (size_t i = 0; i < items.size(); i++)
      if (pending[i] == 0) ready.push({pos_[items[i].node->id], i});
    size_t done = 0;
    while (!ready.empty()) {
      size_t i = ready.top().second;
      ready.pop();
      done++;
      const Item& it = items[i];
      if (it.loop) {
        out_.push_back(it.node);
        emit_block(it.node);
        out_.push_back(end_of(it.node));
      } else if (emitted_kind(it.node)) {
        out_.push_back(it.node);
      }
      for (size_t j : users[i])
        if (--pending[j] == 0) ready.push({pos_[items[j].node->id], j});
    }
    if (done != items.size()) fail(Code::Internal, "linearize: dependency cycle between the items of a loop");
  }

  // The End that closes loop r: the kernel's own (from lower_reduces) or a new one over the
  // stores of the loop body.
  const UOp* end_of(const UOp* r) {
    for (const UOp* u : members_[r])
      if (u->op == Op::End && u->src(1) == r) return u;
    std::vector<const UOp*> stores;
    for (const UOp* u : subtree_[r])
      if (u->op == Op::Store) stores.push_back(u);
    std::sort(stores.begin(), stores.end(), [&](const UOp* a, const UOp* b) { return pos_[a->id] < pos_[b->id]; });
    const UOp* body = stores.empty() ? r : stores.size() == 1 ? stores[0] : g_.make(Op::Group, dtypes::void_, stores);
    return g_.make(Op::End, dtypes::void_, {body, r});
  }

  // A store with a scalar gate runs inside If(gate) ... Endif; consecutive stores under the same
  // gate share one block. (A gate with lanes masks a vector store; it stays on the store.)
  std::vector<const UOp*> gate_stores() {
    std::vector<const UOp*> out;
    const UOp* open_if = nullptr;
    auto close = [&] {
      if (open_if) out.push_back(g_.make(Op::Endif, dtypes::void_, {open_if}));
      open_if = nullptr;
    };
    for (const UOp* u : out_) {
      bool gated = u->op == Op::Store && u->nsrc() == 3 && u->src(2)->dtype.lanes == 1;
      if (!gated) {
        close();
        out.push_back(u);
        continue;
      }
      if (!open_if || open_if->src(0) != u->src(2)) {
        close();
        open_if = g_.make(Op::If, dtypes::void_, {u->src(2)});
        out.push_back(open_if);
      }
      out.push_back(g_.make(Op::Store, dtypes::void_, {u->src(0), u->src(1)}, u->arg, u->tag));
    }
    close();
    return out;
  }

  void check_order() const {
    std::unordered_set<const UOp*> seen;
    for (const UOp* u : out_) {
      if (u->op != Op::End)
        for (const UOp* s : u->src())
          if (emitted_kind(s) && u->op != Op::Param && !seen.count(s))
            fail(Code::Internal, "linearize: ", op_name(u->op), " is emitted before its source ", op_name(s->op));
      if (!seen.insert(u).second) fail(Code::Internal, "linearize: ", op_name(u->op), " emitted twice");
    }
  }

  Graph& g_;
  std::vector<const UOp*> topo_;
  OpenRanges open_;
  // by node id
  std::vector<uint32_t> pos_;
  std::vector<int> depth_, level_;
  std::vector<const UOp*> parent_, block_;
  std::vector<bool> placed_;
  std::vector<const UOp*> ranges_;
  std::unordered_map<const UOp*, std::vector<const UOp*>> children_, members_, subtree_;
  std::vector<const UOp*> out_;
};

}  // namespace

const UOp* linearize(Graph& g, const UOp* sink) { return Linearizer(g, sink).run(); }

}  // namespace sn
