// A Graph owns its UOps: an arena plus an intern table, so structurally equal nodes are the
// same pointer (keyed by op, dtype, arg, tag and the child pointers). Nodes live until the
// graph is destroyed. One thread at a time per graph: building nodes, and also the first read
// of a lazily derived property (minmax, device, axis, content_hash), write to the graph.
// Structure (op, dtype, src, arg, shape) of built nodes may be read concurrently, and so may
// properties already derived (UOp::derive_for_readers), while the owning thread builds more.
#pragma once
#include <algorithm>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ir/block_pool.h"
#include "core/ir/uop.h"
#include "core/util/error.h"

namespace sn {

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Build (or find) a node. Verifies it against the spec and derives its shape; a node that
  // breaks a rule throws sn::Error(InvalidArg) naming the op, the rule and the values.
  const UOp* make(Op op, DType dtype, std::span<const UOp* const> src, Arg arg = {}, int64_t tag = 0);
  const UOp* make(Op op, DType dtype, std::initializer_list<const UOp*> src, Arg arg = {}, int64_t tag = 0) {
    return make(op, dtype, std::span<const UOp* const>(src.begin(), src.size()), std::move(arg), tag);
  }
  // Same node with other sources / arg / tag (returns u itself when nothing changes).
  const UOp* replace_src(const UOp* u, std::span<const UOp* const> src);
  const UOp* with_tag(const UOp* u, int64_t tag);

  // ---- convenience builders --------------------------------------------------------------
  const UOp* cint(int64_t v, DType dt = dtypes::index);  // integer/bool constant
  const UOp* cfloat(double v, DType dt = dtypes::float32);
  const UOp* cbool(bool v) { return cint(v ? 1 : 0, dtypes::bool_); }
  const UOp* const_like(const UOp* like, double v);                   // Const of like's scalar dtype
  const UOp* var(const std::string& name, int64_t min, int64_t max);  // DefineVar (index)
  // Elementwise op; dtype derived (comparisons give bool, Where takes src[1]'s, Cast needs dt).
  const UOp* alu(Op op, std::span<const UOp* const> src);
  const UOp* alu(Op op, const UOp* a) { return alu(op, {&a, 1}); }
  const UOp* alu(Op op, const UOp* a, const UOp* b) {
    const UOp* s[2] = {a, b};
    return alu(op, s);
  }
  const UOp* alu(Op op, const UOp* a, const UOp* b, const UOp* c) {
    const UOp* s[3] = {a, b, c};
    return alu(op, s);
  }
  const UOp* cast(const UOp* a, DType dt) { return make(Op::Cast, dt, {a}, dt); }
  // A shape operand for Reshape/Expand/Pad/Shrink: a Stack of index scalars.
  const UOp* shape_uop(const Shape& s);
  const UOp* shape_uop(std::span<const int64_t> dims);
  const UOp* sink(std::span<const UOp* const> src) { return make(Op::Sink, dtypes::void_, src); }

  size_t size() const { return node_count_; }
  // Room for `nodes` nodes in all before the node table grows again. A caller that knows it will
  // build many (compile_program: about 13 per kernel AST node it lowers) sizes the table once
  // instead of doubling it step by step, each step rehashing every node into fresh pages.
  void reserve(size_t nodes);

  // The node core/symbolic's simplify made of u, or nullptr. simplify is a function of the node
  // alone and nodes never change, so each graph keeps its results: the schedule simplifies the
  // same index expressions in every round, and the symbolic rules simplify their own subterms.
  const UOp* simplified(const UOp* u) const { return u->id < simplified_.size() ? simplified_[u->id] : nullptr; }
  void set_simplified(const UOp* u, const UOp* s) {
    if (u->id >= simplified_.size()) simplified_.resize(std::max<size_t>(size_t(u->id) + 1, 2 * simplified_.size()));
    simplified_[u->id] = s;
  }
  uint64_t next_buffer_id() { return ++buffer_ids_; }

  // hash_arg(u->arg) of a node of this graph. A byte string of kLargeArgBytes or more (a program's
  // constant weights) is hashed once, when its node is built, and kept: the content hash and the
  // program hash read it instead of hashing the bytes again (ResNet-18's 45 MB: about 5 ms a pass).
  uint64_t arg_hash(const UOp* u) const;
  static constexpr size_t kLargeArgBytes = 4096;

 private:
  // The node, found or made; a new node takes `arg` from `owned` when given (moved), else copies it
  // (replace_src: most rebuilt nodes are found, and their argument is then never copied).
  // `checked_like`: a node of the same op, dtype and argument over sources of the same dtypes and
  // shapes, for an op whose check depends on nothing else (checked_by_source_types): a new node
  // takes its shape instead of being verified and derived again.
  const UOp* intern(Op op, DType dtype, std::span<const UOp* const> src, const Arg& arg, int64_t tag,
                    Arg* owned = nullptr, const UOp* checked_like = nullptr);
  void rehash(size_t slots);
  UOp* new_node();
  // Nodes live in blocks that double in size up to a limit: a pass builds thousands of nodes, and
  // a node costs no allocation of its own (a std::deque of UOps allocated a block every second one).
  // Node, source and table blocks come from the block pool (block_pool.h): the next graph reuses
  // them without faulting their pages in again.
  struct NodeBlock {
    UOp* nodes;
    size_t used, capacity;
  };
  std::vector<NodeBlock> node_blocks_;
  size_t node_count_ = 0;
  std::vector<const UOp*> simplified_;                         // by node id
  std::unordered_map<const UOp*, uint64_t> large_arg_hashes_;  // arg_hash of the nodes with large byte strings
  // cint's index constants in [kIndexConstMin, kIndexConstEnd), by value (allocated on first use)
  static constexpr int64_t kIndexConstMin = -256, kIndexConstEnd = 4096;
  std::vector<const UOp*> index_consts_;
  // Open addressing, power-of-two capacity, at most half full. A slot keeps its node's hash:
  // probing and rehashing read the table alone, not the nodes (a rehash of 16k slots that read each
  // node's hash took 0.22 ms, 0.08 ms from the slots).
  struct Slot {
    uint64_t hash;
    UOp* node;
  };
  std::vector<Slot, PoolAllocator<Slot>> table_;
  struct SrcBlock {
    const UOp** srcs;
    size_t capacity;
  };
  std::vector<SrcBlock> src_blocks_;
  const UOp** src_cur_ = nullptr;
  size_t src_left_ = 0;
  uint64_t buffer_ids_ = 0;
};

// The constant dims of a shape operand (a Stack of index scalars) as a Shape.
Shape as_shape(const UOp* shape_operand);

// Derives and verifies the shape of a node about to be built (throws on a spec violation).
// Returns false when the op has no shape (void ops).
bool derive_shape(Op op, DType dtype, std::span<const UOp* const> src, const Arg& arg, Shape* out);
// Verifies arity and dtype rules (throws on a violation).
void verify_node(Op op, DType dtype, std::span<const UOp* const> src, const Arg& arg);
// Whether verify_node and derive_shape see an op's sources only through their dtypes and shapes
// (not their ops or values): a node rebuilt over sources of the same dtypes and shapes is valid
// and has the shape of the one it replaces.
bool checked_by_source_types(Op op);

// ---- printing ------------------------------------------------------------------------------
// S-expression: "(add (mul a 2) 12)"; shared subterms print once as "%id = ..." bindings when
// `bindings` is set.
std::string to_sexpr(const UOp* root, bool bindings = true);
// Indented tree with derived properties (dtype, shape, device, min/max) per node.
std::string to_tree(const UOp* root);
// Graphviz DOT of the DAG under root.
std::string to_dot(const UOp* root);

// All nodes under the roots, children before parents (iterative).
std::vector<const UOp*> toposort(std::span<const UOp* const> roots);
inline std::vector<const UOp*> toposort(const UOp* root) { return toposort({&root, 1}); }

}  // namespace sn
