// Tests of the IR: dtypes, interning, the verifier, derived properties and printers.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "core/ir/graph.h"
#include "core/ir/node_map.h"
#include "tests/util/test_helpers.h"

namespace sn {
namespace {

using testutil::error_of;

const UOp* tensor(Graph& g, DType dt, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  const UOp* b = g.make(Op::Buffer, dt, {}, BufferArg{g.next_buffer_id(), n, Device{{"CPU"}}, AddrSpace::Global});
  return g.make(Op::Reshape, dt, {b, g.shape_uop(shape)});
}

// cat() appends text and integers itself and streams the rest: every part must read as one stream
// writing all of them reads (the oracle here).
TEST(Util, CatWritesEachPartAsAStreamDoes) {
  auto streamed = [](const auto&... parts) {
    std::ostringstream os;
    (os << ... << parts);
    return os.str();
  };
  enum Plain { kSeven = 7 };
  const std::string s = "str";
  const std::string_view sv = "view";
  const char* cs = "cstr";
  char buf[] = "buf";
  const signed char sc = 'x';
  const unsigned char uc = 'y';
  const int16_t i16 = -32768;
  const uint64_t u64 = ~uint64_t{0};
  const void* p = &s;
  EXPECT_EQ(cat("a=", 1, " b=", -2, 'c', sc, uc, true, false), streamed("a=", 1, " b=", -2, 'c', sc, uc, true, false));
  EXPECT_EQ(cat(s, sv, cs, buf, i16, u64, INT64_MIN, size_t{0}),
            streamed(s, sv, cs, buf, i16, u64, INT64_MIN, size_t{0}));
  EXPECT_EQ(cat(1.5, " ", 0.1, " ", 1e300, " ", -0.0f, " ", kSeven, " ", p),
            streamed(1.5, " ", 0.1, " ", 1e300, " ", -0.0f, " ", kSeven, " ", p));
  EXPECT_EQ(cat(dtypes::float32.name(), "|", uint8_t{65}), "float32|A");
  const char* none = nullptr;
  EXPECT_EQ(cat("[", none, "]"), "[]");  // (a stream would drop everything after a null C string)
}

TEST(DType, NamesSizesAndRanges) {
  EXPECT_EQ(dtypes::float32.name(), "float32");
  EXPECT_EQ(dtypes::float32.vec(4).name(), "float32x4");
  EXPECT_EQ(dtypes::float32.as_ptr(AddrSpace::Global).name(), "float32*[global]");
  EXPECT_EQ(dtypes::float16.itemsize(), 2);
  EXPECT_EQ(dtypes::float32.vec(4).itemsize(), 16);
  EXPECT_EQ(dtypes::fp8e4m3.itemsize(), 1);
  EXPECT_TRUE(dtypes::bfloat16.is_float());
  EXPECT_TRUE(dtypes::uint16.is_unsigned());
  EXPECT_TRUE(dtypes::index.is_int());
  EXPECT_FALSE(dtypes::bool_.is_int());
  EXPECT_EQ(int64_t(dtypes::int8.int_min()), -128);
  EXPECT_EQ(int64_t(dtypes::uint8.int_max()), 255);
  EXPECT_EQ(dtypes::uint64.int_max(), (i128(1) << 64) - 1);
  Scalar s;
  ASSERT_TRUE(scalar_from_name("bfloat16", &s));
  EXPECT_EQ(s, Scalar::BFloat16);
  EXPECT_FALSE(scalar_from_name("float128", &s));
}

TEST(DType, WrapAndRound) {
  EXPECT_EQ(int64_t(wrap_int(dtypes::int8, 200)), -56);
  EXPECT_EQ(int64_t(wrap_int(dtypes::uint8, -1)), 255);
  EXPECT_EQ(int64_t(wrap_int(dtypes::int32, i128(1) << 31)), -(int64_t(1) << 31));
  EXPECT_EQ(int64_t(wrap_int(dtypes::bool_, 5)), 1);
  EXPECT_EQ(wrap_int(dtypes::index, i128(1) << 70), i128(1) << 70);
  EXPECT_EQ(round_float(dtypes::float16, 1.0 + 1.0 / 4096), 1.0);  // below half an ulp
  EXPECT_EQ(round_float(dtypes::float16, 65519.0), 65504.0);
  EXPECT_TRUE(std::isinf(round_float(dtypes::float16, 65520.0)));
  EXPECT_EQ(round_float(dtypes::bfloat16, 1.00390625), 1.0);  // ties to even
  EXPECT_EQ(round_float(dtypes::fp8e4m3, 0.3), 0.3125);
  EXPECT_TRUE(std::isnan(round_float(dtypes::fp8e4m3, 1000.0)));  // e4m3 has no inf
  EXPECT_EQ(round_float(dtypes::float32, 0.1), double(0.1f));
}

TEST(Ops, NamesAndCategories) {
  Op op;
  ASSERT_TRUE(op_from_name("cmplt", &op));
  EXPECT_EQ(op, Op::CmpLt);
  EXPECT_EQ(op_name(Op::Threefry), "Threefry");
  EXPECT_TRUE(is_elementwise(Op::Where));
  EXPECT_TRUE(is_movement(Op::Shrink));
  EXPECT_TRUE(is_commutative(Op::Add));
  EXPECT_FALSE(is_commutative(Op::Sub));
  EXPECT_EQ(axis_type_letter(AxisType::Upcast), 'u');
}

TEST(Graph, InterningGivesPointerEquality) {
  Graph g;
  const UOp* a = g.var("a", 0, 8);
  const UOp* x = g.alu(Op::Add, a, g.cint(1));
  const UOp* y = g.alu(Op::Add, g.var("a", 0, 8), g.cint(1));
  EXPECT_EQ(x, y);
  EXPECT_NE(x, g.alu(Op::Add, g.cint(1), a));      // order matters
  EXPECT_NE(g.cint(1), g.cint(1, dtypes::int32));  // dtype matters
  EXPECT_NE(g.cfloat(0.0), g.cfloat(-0.0));        // -0.0 is its own constant
  EXPECT_EQ(g.cfloat(NAN), g.cfloat(NAN));         // NaN interns
  EXPECT_NE(g.with_tag(x, 3), x);
  size_t before = g.size();
  g.alu(Op::Add, a, g.cint(1));
  EXPECT_EQ(g.size(), before);
}

// cint keeps small index constants in a table of its own: the node it gives is the one make()
// interns, inside the table's range and at and past both of its ends, and for other dtypes.
TEST(Graph, IndexConstantsAreTheInternedNodes) {
  Graph g;
  for (int64_t v : {int64_t{-257}, int64_t{-256}, int64_t{-1}, int64_t{0}, int64_t{7}, int64_t{4095}, int64_t{4096},
                    int64_t{1} << 40, INT64_MIN}) {
    const UOp* made = g.make(Op::Const, dtypes::index, {}, v);
    EXPECT_EQ(g.cint(v), made) << v;
    EXPECT_EQ(g.cint(v)->as<int64_t>(), v);
    EXPECT_EQ(g.cint(v), made) << v;  // (found in the table the second time)
  }
  EXPECT_EQ(g.cint(3, dtypes::int32), g.make(Op::Const, dtypes::int32, {}, int64_t{3}));
  EXPECT_NE(g.cint(3, dtypes::int32), g.cint(3));
  EXPECT_THROW(g.cint(2, dtypes::index.vec(4)), Error);  // (a vector constant is still refused)
  // a table per graph
  Graph other;
  EXPECT_EQ(other.cint(5)->graph(), &other);
  EXPECT_EQ(g.cint(5)->graph(), &g);
}

// A node's fields are ordered to leave no padding (uop.h): lowering builds thousands of nodes, and a
// program's first compile pays a page fault for every fresh page of them.
TEST(Graph, NodesStayAtMost224Bytes) {
  if (sizeof(void*) != 8) GTEST_SKIP() << "the size is for 64-bit targets";
  EXPECT_LE(sizeof(UOp), 224u);
}

// Nodes live in blocks (64 nodes, doubling to 4096): across many blocks a node keeps its address,
// its id is its creation index, and building it again finds it.
TEST(Graph, NodesKeepTheirAddressAcrossBlocks) {
  Graph g;
  const size_t first = g.size();
  std::vector<const UOp*> made;
  for (int64_t v = 0; v < 20000; v++) made.push_back(g.cint(v * 7 + 3));
  EXPECT_EQ(g.size(), first + made.size());
  for (size_t k = 0; k < made.size(); k++) {
    EXPECT_EQ(made[k]->id, first + k);
    EXPECT_EQ(made[k]->const_int(), i128(int64_t(k) * 7 + 3));
    EXPECT_EQ(g.cint(int64_t(k) * 7 + 3), made[k]);
  }
  EXPECT_EQ(g.size(), first + made.size());
}

// reserve() sizes the node table for nodes to come, with the nodes already there found again in
// it; a reserve smaller than the graph changes nothing.
TEST(Graph, ReserveKeepsTheNodesFound) {
  Graph g;
  std::vector<const UOp*> made;
  for (int64_t v = 0; v < 3000; v++) made.push_back(g.alu(Op::Mul, g.var("n", 0, 9), g.cint(v * 5 + 1)));
  const size_t before = g.size();
  g.reserve(100000);
  g.reserve(10);
  for (int64_t v = 0; v < 3000; v++)
    EXPECT_EQ(g.alu(Op::Mul, g.var("n", 0, 9), g.cint(v * 5 + 1)), made[size_t(v)]) << v;
  EXPECT_EQ(g.size(), before);
  for (int64_t v = 3000; v < 60000; v++) made.push_back(g.alu(Op::Mul, g.var("n", 0, 9), g.cint(v * 5 + 1)));
  for (int64_t v = 0; v < 60000; v += 7)
    EXPECT_EQ(g.alu(Op::Mul, g.var("n", 0, 9), g.cint(v * 5 + 1)), made[size_t(v)]) << v;
}

// A graph's node, source and table blocks go to the block pool when it dies and the next graph
// builds in them (already mapped: no page faults); the pool keeps at most kBlockPoolBytes.
TEST(Graph, ASecondGraphBuildsInTheBlocksOfOneThatDied) {
  pool_trim();
  auto build = [](Graph& g) {
    std::vector<const UOp*> made;
    for (int64_t v = 0; v < 20000; v++) made.push_back(g.make(Op::Add, dtypes::index, {g.cint(v), g.var("n", 0, 9)}));
    return made;
  };
  {
    Graph g;
    build(g);
  }
  const size_t held = pool_held_bytes();
  EXPECT_GE(held, 20000 * sizeof(UOp));  // node blocks at least
  {
    Graph g;
    std::vector<const UOp*> made = build(g);
    EXPECT_LT(pool_held_bytes(), held / 4);  // it took the blocks back
    for (size_t k = 0; k < made.size(); k += 997) {
      EXPECT_EQ(made[k]->src(0)->const_int(), i128(k));
      EXPECT_EQ(made[k]->minmax().hi, i128(k) + 9);
    }
  }
  EXPECT_EQ(pool_held_bytes(), held);

  // Blocks are matched by size; past the limit they are freed.
  void* a = pool_allocate(kPooledBytes);
  pool_release(a, kPooledBytes);
  EXPECT_EQ(pool_allocate(kPooledBytes), a);
  pool_release(a, kPooledBytes);
  std::vector<void*> big;
  for (size_t b = 0; b <= kBlockPoolBytes / (1 << 20); b++) big.push_back(pool_allocate(1 << 20));
  for (void* p : big) pool_release(p, 1 << 20);
  EXPECT_LE(pool_held_bytes(), kBlockPoolBytes);
  pool_trim();
  EXPECT_EQ(pool_held_bytes(), 0u);
}

TEST(Graph, ContentHashIsStructural) {
  Graph g1, g2;
  auto build = [](Graph& g) { return g.alu(Op::Mul, g.alu(Op::Add, g.var("x", 0, 9), g.cint(2)), g.cint(3)); };
  const UOp* a = build(g1);
  g2.cint(77);  // different ids in the second graph
  const UOp* b = build(g2);
  EXPECT_EQ(a->content_hash(), b->content_hash());
  EXPECT_NE(a->content_hash(), a->src(0)->content_hash());
}

// Binary data (a program's constant weights) hashes by 32-byte blocks in four lanes: every byte
// and every bit counts, in the blocks and in the tail, and a pair of changes does not cancel. (A
// string of Graph::kLargeArgBytes or more takes the hash its node kept from being built.)
TEST(Graph, ContentHashSeesEveryBitOfBinaryData) {
  for (size_t n : {size_t(1000), Graph::kLargeArgBytes + 1000}) {
    SCOPED_TRACE(n);
    std::string base(n, '\0');
    for (size_t i = 0; i < base.size(); i++) base[i] = char(i * 37 + 11);
    auto hash_of = [](const std::string& bytes) {
      Graph g;
      return g.make(Op::Binary, dtypes::uint8, {}, bytes)->content_hash();
    };
    const uint64_t h0 = hash_of(base);
    EXPECT_EQ(hash_of(base), h0);  // another graph, the same bytes
    std::set<uint64_t> seen{h0};
    for (size_t byte : {size_t(0), size_t(7), size_t(8), size_t(31), size_t(32), size_t(500), n - 9, n - 1})
      for (int bit : {0, 5, 7}) {
        std::string v = base;
        v[byte] = char(v[byte] ^ (1 << bit));
        EXPECT_TRUE(seen.insert(hash_of(v)).second) << "byte " << byte << " bit " << bit;
      }
    // The top bit of one word and of the next word of the same lane, flipped together.
    std::string pair = base;
    pair[7] = char(pair[7] ^ 0x80);
    pair[39] = char(pair[39] ^ 0x80);
    EXPECT_TRUE(seen.insert(hash_of(pair)).second);
    // Lengths: one byte more or less.
    EXPECT_TRUE(seen.insert(hash_of(base.substr(0, n - 1))).second);
    EXPECT_TRUE(seen.insert(hash_of(base + '\0')).second);
    EXPECT_TRUE(seen.insert(hash_of(base.substr(0, n - 8))).second);
  }
}

// A program's constant weights are moved into their node, not copied (a conditional expression
// once made a const copy of every argument: ResNet-18's 45 MB took 20 ms more to build), and the
// hash taken as the node was built is the one a fresh hash of its argument gives.
TEST(Graph, BinaryDataIsMovedIntoItsNodeAndKeepsItsHash) {
  Graph g;
  std::string bytes(1 << 20, '\0');
  for (size_t i = 0; i < bytes.size(); i++) bytes[i] = char(i * 131 + 7);
  const std::string copy = bytes;
  const char* data = bytes.data();
  const UOp* u = g.make(Op::Binary, dtypes::uint8, {}, std::move(bytes));
  EXPECT_EQ(u->as<std::string>().data(), data) << "the bytes were copied";
  EXPECT_EQ(g.arg_hash(u), hash_arg(Arg{copy}));
  const UOp* again = g.make(Op::Binary, dtypes::uint8, {}, copy);  // found, not built again
  EXPECT_EQ(again, u);
  Graph other;
  EXPECT_EQ(other.make(Op::Binary, dtypes::uint8, {}, copy)->content_hash(), u->content_hash());
}

// NodeMap: the same answers as a plain map, below its linear-search size, across the switch to
// pages, and for ids thousands apart (pages appear only where ids fall); V{} means absent.
TEST(Graph, NodeMapAgreesWithAMapThroughItsSwitchToPages) {
  Graph g;
  std::vector<const UOp*> nodes;
  for (int64_t i = 0; i < 5000; i++) nodes.push_back(g.cint(i));
  NodeMap<const UOp*> m;
  NodeMap<uint32_t> count;
  std::map<const UOp*, const UOp*> want;
  // every 7th node from the end (ids far apart), then a few near the start again
  std::vector<const UOp*> keys;
  for (size_t i = nodes.size(); i-- > 0;)
    if (i % 7 == 0) keys.push_back(nodes[i]);
  keys.insert(keys.end(), nodes.begin(), nodes.begin() + 5);
  for (size_t k = 0; k < keys.size(); k++) {
    const UOp* v = nodes[(k * 13) % nodes.size()];
    m.set(keys[k], v);
    want[keys[k]] = v;
    count.set(keys[k], count.get(keys[k]) + 1);
    if (k == 20 || k == 40 || k + 1 == keys.size())  // before, just after and long after 32 entries
      for (const UOp* n : nodes) {
        auto it = want.find(n);
        ASSERT_EQ(m.get(n), it == want.end() ? nullptr : it->second) << "after " << k + 1 << " entries, id " << n->id;
      }
  }
  m.set(keys[3], nodes[1]);  // overwrite in the paged table
  EXPECT_EQ(m.get(keys[3]), nodes[1]);
  EXPECT_EQ(count.get(nodes[0]), 2u);  // node 0 is both a multiple of 7 and among the first five
  EXPECT_EQ(count.get(nodes[1]), 1u);
  EXPECT_EQ(count.get(nodes[2000]), 0u);
}

// A NodeMap told its size (reserve) holds a few dozen entries in a hashed table: the same answers as
// a plain map for ids in a stride pattern (which a table indexed by low bits would pile into one
// run), for overwrites, and after growing past its reservation, through a larger table and then
// into pages.
TEST(Graph, ReservedNodeMapAgreesWithAMapAsItGrows) {
  Graph g;
  std::vector<const UOp*> nodes;
  for (int64_t i = 0; i < 3000; i++) nodes.push_back(g.cint(i));
  for (size_t reserved : {size_t{0}, size_t{9}, size_t{40}, size_t{128}, size_t{129}}) {
    NodeMap<uint32_t> m;
    m.reserve(reserved);
    std::map<const UOp*, uint32_t> want;
    for (size_t k = 0; k < 300; k++) {
      const UOp* key = nodes[(k * 64 + k / 40) % nodes.size()];  // ids 64 apart, then shifted by one
      const uint32_t v = uint32_t(k + 1);
      m.set(key, v);
      want[key] = v;
      if (k == 8 || k == 39 || k == 64 || k == 128 || k == 129 || k == 299)
        for (const UOp* n : nodes) {
          auto it = want.find(n);
          ASSERT_EQ(m.get(n), it == want.end() ? 0u : it->second)
              << "reserved " << reserved << ", after " << k + 1 << " entries, id " << n->id;
        }
    }
    m.set(nodes[64], 7);  // overwrite
    EXPECT_EQ(m.get(nodes[64]), 7u) << "reserved " << reserved;
  }
}

TEST(Verify, ArityAndDtypes) {
  Graph g;
  const UOp* i = tensor(g, dtypes::int32, {4});
  const UOp* f = tensor(g, dtypes::float32, {4});
  EXPECT_NE(error_of([&] { g.alu(Op::Add, i, f); }).find("Add: dtype mismatch: int32 vs float32"), std::string::npos);
  EXPECT_NE(error_of([&] { g.make(Op::Add, dtypes::int32, {i}); }).find("Add: needs 2 sources, got 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { g.alu(Op::Exp2, i); }).find("needs a float source"), std::string::npos);
  EXPECT_NE(error_of([&] { g.alu(Op::Idiv, f, f); }).find("needs integer sources"), std::string::npos);
  EXPECT_NE(error_of([&] { g.alu(Op::Where, i, f, f); }).find("condition must be bool"), std::string::npos);
  EXPECT_NE(error_of([&] { g.make(Op::Cast, dtypes::float32, {i}, dtypes::int8); }).find("differs from the target"),
            std::string::npos);
  EXPECT_NE(error_of([&] { g.make(Op::Const, dtypes::float32, {}, int64_t(1)); }).find("arg must be a float"),
            std::string::npos);
  EXPECT_NE(error_of([&] { g.var("n", 5, 2); }).find("min 5 > max 2"), std::string::npos);
  EXPECT_EQ(g.alu(Op::CmpLt, i, i)->dtype, dtypes::bool_);
}

TEST(Verify, MovementShapes) {
  Graph g;
  const UOp* t = tensor(g, dtypes::float32, {2, 3});
  EXPECT_EQ(shape_str(*t->shape()), "(2,3)");
  EXPECT_NE(error_of([&] {
              g.make(Op::Reshape, dtypes::float32, {t, g.shape_uop(std::vector<int64_t>{4, 2})});
            }).find("Reshape: element count changes: (2,3) to (4,2)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              g.make(Op::Expand, dtypes::float32, {t, g.shape_uop(std::vector<int64_t>{4, 3})});
            }).find("Expand: axis 0 of (2,3) is not 1"),
            std::string::npos);
  const UOp* one = g.make(Op::Reshape, dtypes::float32, {t, g.shape_uop(std::vector<int64_t>{2, 1, 3})});
  const UOp* ex = g.make(Op::Expand, dtypes::float32, {one, g.shape_uop(std::vector<int64_t>{2, 5, 3})});
  EXPECT_EQ(shape_str(*ex->shape()), "(2,5,3)");
  auto pad = [&](std::vector<int64_t> o, std::vector<int64_t> s) {
    return g.make(Op::Pad, dtypes::float32, {t, g.shape_uop(o), g.shape_uop(s)});
  };
  EXPECT_EQ(shape_str(*pad({1, 0}, {4, 3})->shape()), "(4,3)");
  EXPECT_NE(error_of([&] {
              pad({3, 0}, {4, 3});
            }).find("Pad: axis 0: offset 3 + size 2 exceeds the padded size 4"),
            std::string::npos);
  auto shrink = [&](std::vector<int64_t> o, std::vector<int64_t> s) {
    return g.make(Op::Shrink, dtypes::float32, {t, g.shape_uop(o), g.shape_uop(s)});
  };
  EXPECT_EQ(shape_str(*shrink({1, 1}, {1, 2})->shape()), "(1,2)");
  EXPECT_NE(error_of([&] {
              shrink({0, 2}, {2, 2});
            }).find("Shrink: axis 1: offset 2 + size 2 exceeds the axis size 3"),
            std::string::npos);
  const UOp* p = g.make(Op::Permute, dtypes::float32, {t}, std::vector<int64_t>{1, 0});
  EXPECT_EQ(shape_str(*p->shape()), "(3,2)");
  EXPECT_NE(error_of([&] {
              g.make(Op::Permute, dtypes::float32, {t}, std::vector<int64_t>{0, 0});
            }).find("is not a permutation"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { g.make(Op::Flip, dtypes::float32, {t}, std::vector<int64_t>{1}); }).find("one flag per axis"),
      std::string::npos);
  const UOp* r = g.make(Op::Reduce, dtypes::float32, {t}, ReduceArg{Op::Add, {1}});
  EXPECT_EQ(shape_str(*r->shape()), "(2,1)");
  EXPECT_NE(error_of([&] {
              g.make(Op::Reduce, dtypes::float32, {t}, ReduceArg{Op::Add, {2}});
            }).find("Reduce: reduce axis 2 is out of range for rank 2"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              g.make(Op::Reduce, dtypes::float32, {t}, ReduceArg{Op::Sub, {0}});
            }).find("must be Add, Max or Mul"),
            std::string::npos);
  const UOp* st = g.make(Op::Stack, dtypes::float32, {t, t, t});
  EXPECT_EQ(shape_str(*st->shape()), "(3,2,3)");
  const UOp* bc = g.make(Op::Bitcast, dtypes::float16, {t}, dtypes::float16);
  EXPECT_EQ(shape_str(*bc->shape()), "(2,6)");
}

// replace_src keeps the checks of the node it rebuilds only where they could not change: for ops
// whose shape comes from the values of a source (Reshape, Expand, Pad, Shrink) or whose check
// looks at a source's op (a kernel Reduce's ranges), a rebuilt node is checked and derived again.
TEST(Verify, RebuiltNodesAreCheckedAgainWhereSourcesMatterBeyondTheirTypes) {
  Graph g;
  const UOp* t = tensor(g, dtypes::float32, {2, 3});
  const UOp* r23 = g.make(Op::Reshape, dtypes::float32, {t, g.shape_uop(std::vector<int64_t>{3, 2})});
  const UOp* r32 = g.replace_src(r23, std::vector<const UOp*>{t, g.shape_uop(std::vector<int64_t>{1, 6})});
  EXPECT_EQ(shape_str(*r32->shape()), "(1,6)");
  EXPECT_NE(error_of([&] {
              g.replace_src(r23, std::vector<const UOp*>{t, g.shape_uop(std::vector<int64_t>{4, 2})});
            }).find("Reshape: element count changes"),
            std::string::npos);
  auto dims = [&](std::vector<int64_t> v) { return g.shape_uop(v); };
  const UOp* padded = g.make(Op::Pad, dtypes::float32, {t, dims({0, 0}), dims({2, 3})});
  EXPECT_NE(error_of([&] {
              g.replace_src(padded, std::vector<const UOp*>{t, dims({1, 0}), dims({2, 3})});
            }).find("Pad: axis 0: offset 1 + size 2 exceeds the padded size 2"),
            std::string::npos);
  const UOp* bound = g.cint(4, dtypes::index);
  const UOp* range = g.make(Op::Range, dtypes::index, {bound}, RangeArg{0, AxisType::Reduce});
  const UOp* red = g.make(Op::Reduce, dtypes::float32, {g.cfloat(1), range}, ReduceArg{Op::Add, {}});
  EXPECT_NE(error_of([&] {
              g.replace_src(red, std::vector<const UOp*>{g.cfloat(1), g.cint(0, dtypes::index)});
            }).find("source 1 must be a Range"),
            std::string::npos);
  // An op checked by its sources' types alone keeps the shape of the node it replaces.
  const UOp* sum = g.alu(Op::Add, t, t);
  const UOp* other = tensor(g, dtypes::float32, {2, 3});
  EXPECT_EQ(shape_str(*g.replace_src(sum, std::vector<const UOp*>{t, other})->shape()), "(2,3)");
  EXPECT_NE(error_of([&] {
              g.replace_src(sum, std::vector<const UOp*>{t, tensor(g, dtypes::float32, {4, 3})});
            }).find("do not broadcast"),
            std::string::npos);
}

TEST(Verify, Broadcasting) {
  Graph g;
  const UOp* a = tensor(g, dtypes::float32, {4, 1, 3});
  const UOp* b = tensor(g, dtypes::float32, {5, 1});
  EXPECT_EQ(shape_str(*g.alu(Op::Add, a, b)->shape()), "(4,5,3)");
  EXPECT_EQ(shape_str(*g.alu(Op::Mul, a, g.cfloat(2))->shape()), "(4,1,3)");
  const UOp* c = tensor(g, dtypes::float32, {2, 3});
  EXPECT_NE(error_of([&] {
              g.alu(Op::Add, c, tensor(g, dtypes::float32, {4, 3}));
            }).find("Add: shapes (2,3) and (4,3) do not broadcast"),
            std::string::npos);
}

TEST(Verify, SymbolicShapes) {
  Graph g;
  const UOp* n = g.var("n", 1, 64);
  const UOp* b = g.make(Op::Buffer, dtypes::float32, {}, BufferArg{g.next_buffer_id(), 64 * 4, Device{{"CPU"}}});
  const UOp* pshape = g.shape_uop(Shape{Dim{0, n}, Dim::of(4)});
  const UOp* p = g.make(Op::Param, dtypes::float32, {pshape}, ParamArg{0, Device{{"CPU"}}});
  EXPECT_EQ(shape_str(*p->shape()), "(n,4)");
  const UOp* r = g.make(Op::Reshape, dtypes::float32, {p, g.shape_uop(Shape{Dim::of(4), Dim{0, n}})});
  EXPECT_EQ(shape_str(*r->shape()), "(4,n)");
  EXPECT_FALSE(error_of([&] {
                 g.make(Op::Reshape, dtypes::float32, {p, g.shape_uop(Shape{Dim::of(8), Dim{0, n}})});
               }).empty());
  (void)b;
}

TEST(Props, MinMax) {
  Graph g;
  const UOp* a = g.var("a", 0, 8);
  const UOp* b = g.var("b", -3, 5);
  auto mm = [](const UOp* u) { return std::pair<int64_t, int64_t>(int64_t(u->minmax().lo), int64_t(u->minmax().hi)); };
  EXPECT_EQ(mm(g.alu(Op::Add, a, b)), std::make_pair(int64_t(-3), int64_t(13)));
  EXPECT_EQ(mm(g.alu(Op::Mul, a, b)), std::make_pair(int64_t(-24), int64_t(40)));
  EXPECT_EQ(mm(g.alu(Op::Max, a, b)), std::make_pair(int64_t(0), int64_t(8)));
  EXPECT_EQ(mm(g.alu(Op::Idiv, b, g.cint(2))), std::make_pair(int64_t(-2), int64_t(2)));
  EXPECT_EQ(mm(g.alu(Op::Mod, b, g.cint(4))), std::make_pair(int64_t(0), int64_t(3)));
  EXPECT_EQ(mm(g.alu(Op::CDiv, b, g.cint(2))), std::make_pair(int64_t(-1), int64_t(2)));
  EXPECT_EQ(mm(g.alu(Op::CMod, b, g.cint(4))), std::make_pair(int64_t(-3), int64_t(3)));
  EXPECT_EQ(mm(g.alu(Op::CmpLt, a, g.cint(9))), std::make_pair(int64_t(1), int64_t(1)));
  EXPECT_EQ(mm(g.alu(Op::CmpLt, a, g.cint(4))), std::make_pair(int64_t(0), int64_t(1)));
  EXPECT_EQ(mm(g.alu(Op::Where, g.alu(Op::CmpLt, a, g.cint(4)), a, g.cint(20))),
            std::make_pair(int64_t(0), int64_t(20)));
  EXPECT_EQ(mm(g.cast(g.alu(Op::Add, a, g.cint(250)), dtypes::uint8)), std::make_pair(int64_t(0), int64_t(255)));
  EXPECT_EQ(mm(g.alu(Op::Shl, a, g.cint(2))), std::make_pair(int64_t(0), int64_t(32)));
  const UOp* r = g.make(Op::Range, dtypes::index, {g.cint(16)}, RangeArg{0, AxisType::Loop});
  EXPECT_EQ(mm(r), std::make_pair(int64_t(0), int64_t(15)));
  EXPECT_TRUE(g.cfloat(2.5)->minmax().is_float);
  EXPECT_EQ(g.cfloat(2.5)->minmax().fhi, 2.5);
  const UOp* t = tensor(g, dtypes::int8, {3});
  EXPECT_EQ(mm(t), std::make_pair(int64_t(-128), int64_t(127)));
}

TEST(Props, DeviceAndAxis) {
  Graph g;
  Device multi{{"CPU:0", "CPU:1"}, true};
  const UOp* b = g.make(Op::Buffer, dtypes::float32, {}, BufferArg{g.next_buffer_id(), 6, multi});
  EXPECT_EQ(shape_str(*b->shape()), "(12,)");
  EXPECT_EQ(b->device().str(), "(CPU:0,CPU:1)");
  EXPECT_EQ(b->axis(), 0);
  const UOp* r = g.make(Op::Reshape, dtypes::float32, {b, g.shape_uop(std::vector<int64_t>{12, 1})});
  EXPECT_EQ(r->axis(), 0);
  const UOp* p = g.make(Op::Permute, dtypes::float32, {r}, std::vector<int64_t>{1, 0});
  EXPECT_EQ(p->axis(), 1);
  const UOp* red = g.make(Op::Reduce, dtypes::float32, {p}, ReduceArg{Op::Add, {1}});
  EXPECT_EQ(red->axis(), -1);
  const UOp* sum = g.alu(Op::Add, p, g.cfloat(1));
  EXPECT_EQ(sum->axis(), 1);
  EXPECT_EQ(sum->device().str(), "(CPU:0,CPU:1)");
  EXPECT_TRUE(g.cfloat(1)->device().null());
  const UOp* cp = g.make(Op::Copy, dtypes::float32, {b}, MemArg{Device{{"CPU"}}});
  EXPECT_EQ(cp->device().str(), "CPU");
  EXPECT_EQ(cp->axis(), -1);
}

// A value of rank 0 copied to a device tuple is on every device whole (it has no axis 0 to shard),
// and what reshapes it asks no axis of an empty shape. (libFuzzer, through sn_uop_to_tree: a
// reshape of such a copy indexed its empty shape at the axis 0 it claimed.)
TEST(Props, AScalarOnADeviceTupleIsNotSharded) {
  Graph g;
  Device multi{{"CPU:0", "CPU:1"}, true};
  const UOp* x = g.make(Op::Reshape, dtypes::float32,
                        {g.make(Op::Buffer, dtypes::float32, {}, BufferArg{g.next_buffer_id(), 1, Device{{"CPU"}}}),
                         g.shape_uop(std::vector<int64_t>{})});
  const UOp* cp = g.make(Op::Copy, dtypes::float32, {x}, MemArg{multi});
  EXPECT_EQ(cp->device().str(), "(CPU:0,CPU:1)");
  EXPECT_EQ(cp->axis(), -1);
  const UOp* r = g.make(Op::Reshape, dtypes::float32, {cp, g.shape_uop(std::vector<int64_t>{1, 1})});
  EXPECT_EQ(r->axis(), -1);
  const UOp* v = g.make(Op::Copy, dtypes::float32, {r}, MemArg{multi});  // rank 2: sharded on axis 0
  EXPECT_EQ(v->axis(), 0);
}

TEST(Props, DeepChainDoesNotRecurse) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* one = g.cint(1);
  for (int i = 0; i < 1000000; i++) x = g.alu(Op::Add, x, one);
  EXPECT_EQ(int64_t(x->minmax().hi), 1000010);
  EXPECT_TRUE(x->device().null());
  EXPECT_EQ(x->axis(), -1);
  EXPECT_NE(x->content_hash(), 0u);
  EXPECT_EQ(toposort(x).size(), 1000002u);
  EXPECT_GT(to_sexpr(x).size(), 1000000u);
}

// Toposort's visit marks are shared by every graph a thread sorts (node ids start at 0 in each) and
// by other threads' sorts of the same graph: each sort sees every node under its roots exactly once,
// children first, whatever was sorted before or beside it.
TEST(Props, ToposortOfInterleavedGraphsAndThreads) {
  auto chain = [](Graph& g, int n, int64_t c) {
    const UOp* x = g.var("x", 0, 10);
    for (int i = 0; i < n; i++) x = g.alu(Op::Add, x, g.cint(c + i % 3));
    return x;
  };
  Graph a, b;
  const UOp* xa = chain(a, 50, 1);
  const UOp* xb = chain(b, 80, 7);  // the same ids as a's nodes, and more
  auto check = [](const UOp* root, size_t want) {
    std::vector<const UOp*> order = toposort(root);
    ASSERT_EQ(order.size(), want);
    std::map<const UOp*, size_t> at;
    for (size_t i = 0; i < order.size(); i++) at[order[i]] = i;
    ASSERT_EQ(at.size(), want);  // each node once
    for (const UOp* u : order)
      for (const UOp* s : u->src()) EXPECT_LT(at.at(s), at.at(u));
    EXPECT_EQ(order.back(), root);
  };
  // 50 adds, the var and the constants 1, 2, 3 (a); 80 adds, the var and 7, 8, 9 (b)
  for (int round = 0; round < 3; round++) {
    check(xa, 54);
    check(xb, 84);
    check(a.alu(Op::Mul, xa, xa), 55);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; t++)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 200; round++) check(t == 0 ? xa : xb, t == 0 ? 54 : 84);
    });
  for (auto& th : threads) th.join();
}

TEST(Print, SexprTreeDot) {
  Graph g;
  const UOp* a = g.var("a", 0, 8);
  const UOp* e = g.alu(Op::Add, g.alu(Op::Mul, a, g.cint(2)), g.cint(12));
  EXPECT_EQ(to_sexpr(e), "(add (mul a 2) 12)");
  const UOp* s = g.alu(Op::Add, a, g.cint(1));
  EXPECT_EQ(to_sexpr(g.alu(Op::Mul, s, s)), "%" + std::to_string(s->id) + " = (add a 1)\n(mul %" +
                                                std::to_string(s->id) + " %" + std::to_string(s->id) + ")");
  std::string tree = to_tree(e);
  EXPECT_NE(tree.find("range=[12,28]"), std::string::npos);
  std::string dot = to_dot(e);
  EXPECT_NE(dot.find("digraph"), std::string::npos);
  EXPECT_NE(dot.find("->"), std::string::npos);
}

}  // namespace
}  // namespace sn
