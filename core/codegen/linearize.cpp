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
// If(gate) ... Endif blocks, with the work that only they use, and a loop whose whole body is such
// a block runs inside it.
#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "core/codegen/codegen.h"
#include "core/codegen/kernel_util.h"
#include "core/ir/node_map.h"

namespace sn {

namespace {

class Linearizer {
 public:
  Linearizer(Graph& g, const UOp* sink) : g_(g), topo_(needed_nodes(sink)), open_(topo_) {
    size_t n = topo_.size();
    depth_.assign(n, 0);
    level_.assign(n, 0);
    parent_slot_.assign(n + 1, 0);
    block_slot_.assign(n, 0);
    item_index_.assign(n, 0);
    children_.resize(n + 1);
    members_.resize(n + 1);
    deps_.resize(n + 1);
    for (size_t i = 0; i < n; i++) pos_.set(topo_[i], uint32_t(i + 1));
  }

  const UOp* run() {
    for (const UOp* u : topo_) {
      if (u->op == Op::Reduce) fail(Code::Internal, "linearize: Reduce left in the kernel (lower_reduces runs first)");
      if (u->op == Op::End && u->nsrc() != 2)
        fail(Code::Unsupported, "linearize: End closing ", u->nsrc() - 1, " ranges");
      if (u->op == Op::Range) {
        AxisType t = u->as<RangeArg>().type;
        if (t == AxisType::Upcast || t == AxisType::Unroll)
          fail(Code::InvalidArg, "linearize: ", axis_type_name(t), " range ", u->as<RangeArg>().id,
               " is not where expand can expand it (upcast: a loop axis of stores, unroll: a reduce axis)");
        ranges_.push_back(u);
      }
    }
    compute_depth();
    build_tree();
    place();
    emit_block(nullptr);
    check_order();
    return g_.make(Op::Linear, dtypes::void_, gate_stores());
  }

 private:
  // The toposort without the shape operands of Params (metadata, not instructions).
  static std::vector<const UOp*> needed_nodes(const UOp* sink) {
    std::vector<const UOp*> all = toposort(sink);
    uint32_t max_id = 0;
    for (const UOp* u : all) max_id = std::max(max_id, u->id);
    std::vector<bool> needed(size_t(max_id) + 1, false);
    needed[sink->id] = true;
    for (size_t i = all.size(); i-- > 0;) {
      const UOp* u = all[i];
      if (!needed[u->id] || u->op == Op::Param) continue;
      for (const UOp* s : u->src()) needed[s->id] = true;
    }
    std::vector<const UOp*> out;
    for (const UOp* u : all)
      if (needed[u->id]) out.push_back(u);
    return out;
  }

  // u's position in topo_, which indexes the per-node tables (node ids can be far apart: the
  // kernel lives in a graph that holds every stage's nodes).
  size_t at(const UOp* u) const { return pos_.get(u) - 1; }
  // The index of a block (a loop's Range, or nullptr for the kernel's top level) in the per-block
  // tables: its position + 1, 0 for the top level.
  size_t slot(const UOp* block) const { return block ? pos_.get(block) : 0; }

  bool before(const UOp* a, const UOp* b) const {  // range order: depth, then id
    int da = depth_[at(a)], db = depth_[at(b)];
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
          if (depth_[at(q)] + 1 > depth_[at(r)]) {
            depth_[at(r)] = depth_[at(q)] + 1;
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
    const UOp* const* last = nullptr;  // the set seen last (equal sets share their span)
    // Sets already taken, as masks over ranges_ (where it has at most 64): a kernel has a few
    // distinct open sets, but many nodes that merge their sources' sets hold copies of them.
    NodeMap<uint32_t> range_bit;  // range -> its index in ranges_ + 1
    for (size_t i = 0; i < ranges_.size() && ranges_.size() <= 64; i++) range_bit.set(ranges_[i], uint32_t(i + 1));
    std::vector<uint64_t> seen_masks;
    for (const UOp* u : topo_) {
      std::span<const UOp* const> open = open_.of(u);
      if (open.size() < 2 || open.data() == last) continue;
      last = open.data();
      if (ranges_.size() <= 64) {
        uint64_t mask = 0;
        for (const UOp* r : open) mask |= uint64_t(1) << (range_bit.get(r) - 1);
        if (std::find(seen_masks.begin(), seen_masks.end(), mask) != seen_masks.end()) continue;
        seen_masks.push_back(mask);
      }
      set.assign(open.begin(), open.end());
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
      parent_slot_[slot(r)] = uint32_t(slot(parent));
      children_[slot(parent)].push_back(r);
      level_[at(r)] = parent ? level_[at(parent)] + 1 : 1;
      if (it == earlier.end()) continue;
      for (const UOp* q : it->second)
        if (!is_ancestor_or_self(slot(q), slot(parent)))
          fail(Code::Unsupported, "linearize: range ", r->as<RangeArg>().id, " is used with ranges ",
               q->as<RangeArg>().id, " and ", parent->as<RangeArg>().id, " that are not nested loops");
    }
  }

  // Whether loop a is loop b or holds it (loops by slot(); 0, the top level, holds every loop).
  bool is_ancestor_or_self(size_t a, size_t b) const {
    for (size_t x = b; x; x = parent_slot_[x])
      if (x == a) return true;
    return a == 0;
  }

  void place() {
    const UOp* const* last_open = nullptr;  // the open set placed last, and its loop
    const UOp* last_block = nullptr;
    for (const UOp* u : topo_) {
      const UOp* b = nullptr;
      if (u->op == Op::End) {
        b = u->src(1);  // an End belongs to the loop it closes
      } else if (std::span<const UOp* const> open = open_.of(u); !open.empty() && open.data() == last_open) {
        b = last_block;  // the same set as the last one placed (checked then)
      } else {
        last_open = open.data();
        for (const UOp* r : open)
          if (!b || level_[at(r)] > level_[at(b)]) b = r;
        for (const UOp* r : open)
          if (!is_ancestor_or_self(slot(r), slot(b)))
            fail(Code::Internal, "linearize: ", op_name(u->op), " reads ranges ", r->as<RangeArg>().id, " and ",
                 b->as<RangeArg>().id, " of sibling loops");
        last_block = b;
      }
      block_slot_[at(u)] = uint32_t(slot(b));
      members_[slot(b)].push_back(u);
      if (u->op == Op::Store) stores_.push_back(u);
    }
    for (size_t i = 0; i < topo_.size(); i++)
      for (const UOp* src : topo_[i]->src())
        if (uint32_t p = pos_.get(src)) add_dependency(i, p - 1);  // (not a Param's shape)
  }

  int level_of(uint32_t block_slot) const { return block_slot ? level_[block_slot - 1] : 0; }

  // The edge u -> s orders two items of exactly one block: the deepest loop whose subtree holds
  // both, where each is either the node itself (in that block) or the child loop holding it. In
  // the blocks above, both are inside one item; in those below, s is outside the subtree.
  // (u, s and the items by position in topo_ + 1, blocks by slot(): the same numbers.)
  void add_dependency(size_t pu, size_t ps) {
    uint32_t a = block_slot_[pu], b = block_slot_[ps];
    uint32_t item_u = uint32_t(pu + 1), item_s = uint32_t(ps + 1);
    bool loop_u = false, loop_s = false;
    while (level_of(a) > level_of(b)) item_u = a, loop_u = true, a = parent_slot_[a];
    while (level_of(b) > level_of(a)) item_s = b, loop_s = true, b = parent_slot_[b];
    while (a != b) {
      item_u = a, loop_u = true, a = parent_slot_[a];
      item_s = b, loop_s = true, b = parent_slot_[b];
    }
    // The block's own Range and the End closing it (which belongs to the loop it closes) are no
    // items of it.
    auto outside = [&](uint32_t x, bool loop) {
      return !loop && (x == a || (topo_[x - 1]->op == Op::End && block_slot_[x - 1] == a));
    };
    if (item_u == item_s || outside(item_u, loop_u) || outside(item_s, loop_s)) return;
    deps_[a].push_back({item_u - 1, item_s - 1});
  }

  static bool emitted_kind(const UOp* u) { return u->op != Op::Group && u->op != Op::Sink && u->op != Op::Stack; }

  void emit_block(const UOp* B) {
    // Items: this block's own nodes (minus its Range and the Ends closing it) and child loops,
    // each by its position in topo_ (a loop by its Range's).
    std::vector<uint32_t> items;
    for (const UOp* u : members_[slot(B)]) {
      if (u == B || (u->op == Op::End && u->src(1) == B)) continue;
      size_t p = at(u);
      item_index_[p] = uint32_t(items.size());
      items.push_back(uint32_t(p));
    }
    const size_t nodes = items.size();  // items past this are child loops
    for (const UOp* c : children_[slot(B)]) {
      size_t p = at(c);
      item_index_[p] = uint32_t(items.size());
      items.push_back(uint32_t(p));
    }
    // Dependencies between items (add_dependency found them), grouped by dependency: the users of
    // item j are users[first[j] .. first[j + 1]). A pair found twice is two edges and counts twice
    // in its user's pending count: the user is still ready exactly when its last dependency is out.
    const auto& deps = deps_[slot(B)];
    std::vector<uint32_t> first(items.size() + 1, 0), pending(items.size(), 0), users(deps.size());
    for (const auto& [u, s] : deps) {
      first[item_index_[s] + 1]++;
      pending[item_index_[u]]++;
    }
    for (size_t j = 0; j < items.size(); j++) first[j + 1] += first[j];
    {
      std::vector<uint32_t> fill(first.begin(), first.end() - 1);
      for (const auto& [u, s] : deps) users[fill[item_index_[s]]++] = item_index_[u];
    }
    // Ready items, the earliest in toposort first.
    std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<uint32_t>> ready;
    for (size_t i = 0; i < items.size(); i++)
      if (pending[i] == 0) ready.push(items[i]);
    size_t done = 0;
    while (!ready.empty()) {
      const uint32_t p = ready.top();
      ready.pop();
      done++;
      const size_t i = item_index_[p];
      const UOp* node = topo_[p];
      if (i >= nodes) {
        out_.push_back(node);
        emit_block(node);
        out_.push_back(end_of(node));
      } else if (emitted_kind(node)) {
        out_.push_back(node);
      }
      for (uint32_t e = first[i]; e < first[i + 1]; e++)
        if (size_t j = users[e]; --pending[j] == 0) ready.push(items[j]);
    }
    if (done != items.size()) fail(Code::Internal, "linearize: dependency cycle between the items of a loop");
  }

  // The End that closes loop r: the kernel's own (from lower_reduces) or a new one over the
  // stores of the loop body.
  const UOp* end_of(const UOp* r) {
    for (const UOp* u : members_[slot(r)])
      if (u->op == Op::End && u->src(1) == r) return u;
    std::vector<const UOp*> stores;  // in toposort order, as stores_ is
    for (const UOp* u : stores_)
      if (is_ancestor_or_self(slot(r), block_slot_[at(u)])) stores.push_back(u);
    const UOp* body = stores.empty() ? r : stores.size() == 1 ? stores[0] : g_.make(Op::Group, dtypes::void_, stores);
    return g_.make(Op::End, dtypes::void_, {body, r});
  }

  // A store with a scalar gate runs inside If(gate) ... Endif. Where the stores between two loop
  // boundaries (a run) share one gate, they share one block, and the work that only they use moves
  // in with them: an accumulator update skipped at a padded step (lower_reduces) skips its loads and
  // multiply-adds too. Otherwise consecutive stores under the same gate share one block. (A gate
  // with lanes masks a vector store; it stays on the store.)
  std::vector<const UOp*> gate_stores() {
    if (std::none_of(out_.begin(), out_.end(), scalar_gated)) return out_;
    // How many users each node has (by position in topo_), and where each is emitted (+1; 0: not).
    const size_t n = topo_.size();
    nusers_.assign(n, 0);
    emitted_at_.assign(n, 0);
    for (const UOp* u : topo_)
      for (const UOp* x : u->src())
        if (uint32_t p = pos_.get(x)) nusers_[p - 1]++;
    for (size_t i = 0; i < out_.size(); i++)
      if (uint32_t p = pos_.get(out_[i])) emitted_at_[p - 1] = uint32_t(i + 1);

    std::vector<const UOp*> out;
    for (size_t a = 0; a < out_.size();) {
      size_t b = a;
      while (b < out_.size() && !bounds_run(out_[b])) b++;
      gate_run(a, b, out);
      if (b < out_.size()) out.push_back(out_[b]);
      a = b + 1;
    }
    hoist_ifs(out);
    return out;
  }

  // A loop whose whole body is one If block, its gate computed before the loop, runs inside the If
  // instead: Range r, If(g), ..., Endif, End(r) -> If(g), Range r, ..., End(r), Endif (then the same
  // for the loops around it). A convolution's padded filter row then skips its loop over the input
  // channels at once instead of testing the row in each of its steps: ResNet-18's 512x7x7 layers
  // nest their filter rows outside the channels, and in the model took 0.54-0.57 ms with no row
  // skipped, 0.63-0.65 ms testing in every step, 0.51-0.53 ms skipping the loop.
  void hoist_ifs(std::vector<const UOp*>& out) const {
    // (the gate comes before the Range in out where it does in out_: only a run's nodes were
    // reordered, and a gate stays before its If)
    auto before_loop = [&](const UOp* gate, const UOp* range) {
      uint32_t pg = pos_.get(gate), pr = pos_.get(range);
      return pg && pr && emitted_at_[pg - 1] && emitted_at_[pg - 1] < emitted_at_[pr - 1];
    };
    std::vector<size_t> endif_of(out.size(), 0), open;  // an If's Endif, by position
    for (bool changed = true; changed;) {
      changed = false;
      open.clear();
      for (size_t i = 0; i < out.size(); i++) {
        if (out[i]->op == Op::If) open.push_back(i);
        if (out[i]->op == Op::Endif && !open.empty()) {
          endif_of[open.back()] = i;
          open.pop_back();
        }
      }
      for (size_t i = 0; i + 1 < out.size(); i++) {
        if (out[i]->op != Op::Range || out[i + 1]->op != Op::If) continue;
        const size_t e = endif_of[i + 1];
        if (e == 0 || e + 1 >= out.size() || out[e + 1]->op != Op::End || out[e + 1]->src(1) != out[i]) continue;
        if (!before_loop(out[i + 1]->src(0), out[i])) continue;
        std::swap(out[i], out[i + 1]);  // If(g), Range
        std::swap(out[e], out[e + 1]);  // End, Endif
        changed = true;
      }
    }
  }

  static bool scalar_gated(const UOp* u) { return u->op == Op::Store && u->nsrc() == 3 && u->src(2)->dtype.lanes == 1; }
  static bool bounds_run(const UOp* u) {
    return u->op == Op::Range || u->op == Op::End || u->op == Op::Barrier || u->op == Op::If || u->op == Op::Endif;
  }
  // Work without effects, which may run later than placed (inside a block its users are in).
  static bool movable(const UOp* u) {
    return is_elementwise(u->op) || u->op == Op::Load || u->op == Op::Index || u->op == Op::After ||
           u->op == Op::Vectorize || u->op == Op::Gep || u->op == Op::Bitcast || u->op == Op::Wmma;
  }
  const UOp* ungated(const UOp* st) {
    return g_.make(Op::Store, dtypes::void_, {st->src(0), st->src(1)}, st->arg, st->tag);
  }

  // Emits out_[a, b), a run without loop boundaries, with its gated stores in If blocks.
  void gate_run(size_t a, size_t b, std::vector<const UOp*>& out) {
    const UOp* gate = nullptr;
    bool one_gate = true;
    for (size_t p = a; p < b; p++)
      if (scalar_gated(out_[p])) {
        one_gate = one_gate && (!gate || out_[p]->src(2) == gate);
        gate = gate ? gate : out_[p]->src(2);
      }
    if (!gate) {
      out.insert(out.end(), out_.begin() + a, out_.begin() + b);
      return;
    }
    if (one_gate && gate_with_work(a, b, gate, out)) return;
    const UOp* open_if = nullptr;
    auto close = [&] {
      if (open_if) out.push_back(g_.make(Op::Endif, dtypes::void_, {open_if}));
      open_if = nullptr;
    };
    for (size_t p = a; p < b; p++) {
      const UOp* u = out_[p];
      if (!scalar_gated(u)) {
        close();
        out.push_back(u);
        continue;
      }
      if (!open_if || open_if->src(0) != u->src(2)) {
        close();
        open_if = g_.make(Op::If, dtypes::void_, {u->src(2)});
        out.push_back(open_if);
      }
      out.push_back(ungated(u));
    }
    close();
  }

  // The run's stores, all gated by `gate`, and the work only they use, in one If block after the
  // rest of the run; false (nothing emitted) where that would reorder two accesses of one buffer.
  bool gate_with_work(size_t a, size_t b, const UOp* gate, std::vector<const UOp*>& out) {
    auto run_pos = [&](const UOp* u) -> size_t {  // u's position in the run, or b - a
      uint32_t p = pos_.get(u);
      uint32_t e = p ? emitted_at_[p - 1] : 0;
      return e > a && e <= b ? e - 1 - a : b - a;
    };
    std::vector<char> inside(b - a, 0), pinned(b - a, 0);
    // the gate, and what it is computed from, come before the If
    std::vector<const UOp*> todo{gate};
    while (!todo.empty()) {
      const UOp* x = todo.back();
      todo.pop_back();
      size_t q = run_pos(x);
      if (q == b - a || pinned[q]) continue;
      pinned[q] = 1;
      todo.insert(todo.end(), x->src().begin(), x->src().end());
    }
    // Backwards, so a node's users are decided before it: it moves when every one of them does.
    std::vector<uint32_t> users_inside(b - a, 0);
    for (size_t p = b; p-- > a;) {
      const UOp* u = out_[p];
      if (!scalar_gated(u)) {
        if (pinned[p - a] || !movable(u)) continue;
        const uint32_t all = nusers_[pos_.get(u) - 1];
        if (all == 0 || users_inside[p - a] != all) continue;
      }
      inside[p - a] = 1;
      for (const UOp* x : u->src())
        if (size_t q = run_pos(x); q < b - a) users_inside[q]++;
    }
    // Memory order: what stays runs before everything moved, so a load or store that stays must not
    // follow a moved store of its buffer, nor a store a moved load of it (an unknown buffer: any).
    std::vector<const UOp*> wrote, read;
    bool unknown = false;
    auto touches = [&](const std::vector<const UOp*>& bufs, const UOp* buf) {
      return unknown || !buf || std::find(bufs.begin(), bufs.end(), buf) != bufs.end();
    };
    for (size_t p = a; p < b; p++) {
      const UOp* u = out_[p];
      if (u->op != Op::Load && u->op != Op::Store) continue;
      const UOp* buf = address_buffer(u->src(0));
      bool store = u->op == Op::Store;
      if (inside[p - a]) {
        unknown = unknown || !buf;
        (store ? wrote : read).push_back(buf);
      } else if ((!wrote.empty() || !read.empty()) && (touches(wrote, buf) || (store && touches(read, buf)))) {
        return false;
      }
    }
    for (size_t p = a; p < b; p++)
      if (!inside[p - a]) out.push_back(out_[p]);
    const UOp* open_if = g_.make(Op::If, dtypes::void_, {gate});
    out.push_back(open_if);
    for (size_t p = a; p < b; p++)
      if (inside[p - a]) out.push_back(scalar_gated(out_[p]) ? ungated(out_[p]) : out_[p]);
    out.push_back(g_.make(Op::Endif, dtypes::void_, {open_if}));
    return true;
  }

  void check_order() const {
    uint32_t max_id = 0;
    for (const UOp* u : out_) max_id = std::max(max_id, u->id);
    std::vector<bool> seen(size_t(max_id) + 1, false);
    for (const UOp* u : out_) {
      if (u->op != Op::End)
        for (const UOp* s : u->src())
          if (emitted_kind(s) && u->op != Op::Param && (s->id > max_id || !seen[s->id]))
            fail(Code::Internal, "linearize: ", op_name(u->op), " is emitted before its source ", op_name(s->op));
      if (seen[u->id]) fail(Code::Internal, "linearize: ", op_name(u->op), " emitted twice");
      seen[u->id] = true;
    }
  }

  Graph& g_;
  std::vector<const UOp*> topo_;
  OpenRanges open_;
  NodeMap<uint32_t> pos_;  // node -> its position in topo_ + 1
  // by position in topo_

  std::vector<int> depth_, level_;
  std::vector<const UOp*> ranges_, stores_;
  std::vector<uint32_t> item_index_;   // a node's or child loop's index among its block's items
  std::vector<uint32_t> block_slot_;   // slot() of a node's block
  std::vector<uint32_t> parent_slot_;  // by slot: slot() of a loop's parent
  // by block slot (slot()): a loop's child loops, its nodes, and the (user, dependency) pairs of its items
  std::vector<std::vector<const UOp*>> children_, members_;
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> deps_;  // (user, dependency) by position
  std::vector<const UOp*> out_;
  // gate_stores: how many users each node has (by position in topo_) and where each is emitted in
  // out_ (+1; 0: not emitted)
  std::vector<uint32_t> nusers_, emitted_at_;
};

}  // namespace

const UOp* linearize(Graph& g, const UOp* sink) { return Linearizer(g, sink).run(); }

}  // namespace sn
