// The tensor front: shapes and dtypes of every builder, broadcasting, and the errors it reports.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/tensor/tensor.h"
#include "tests/util/test_helpers.h"

namespace sn {
namespace {

using testutil::expect_invalid;

using Dims = std::vector<int64_t>;

Dims dims(const UOp* t) { return static_shape(t); }

class TensorFront : public ::testing::Test {
 protected:
  Graph g;
  const UOp* f32(const Dims& shape) { return input(g, dtypes::float32, shape); }
};

TEST_F(TensorFront, InputIsABufferViewedWithItsShape) {
  const UOp* x = f32({2, 3, 4});
  EXPECT_EQ(x->op, Op::Reshape);
  EXPECT_EQ(x->dtype, dtypes::float32);
  EXPECT_EQ(dims(x), (Dims{2, 3, 4}));
  const UOp* b = buffer_of(x);
  EXPECT_EQ(b->op, Op::Buffer);
  EXPECT_EQ(b->as<BufferArg>().size, 24);
  EXPECT_EQ(b->as<BufferArg>().device.str(), "CPU");
  EXPECT_EQ(dims(b), (Dims{24}));

  // a 1-D input is the Buffer itself; every input gets its own Buffer
  const UOp* v = f32({5});
  EXPECT_EQ(v->op, Op::Buffer);
  EXPECT_EQ(buffer_of(v), v);
  EXPECT_NE(buffer_of(f32({2, 3, 4})), b);

  const UOp* s = input(g, dtypes::int8, {}, "CUDA");
  EXPECT_EQ(dims(s), Dims{});
  EXPECT_EQ(buffer_of(s)->as<BufferArg>().size, 1);
  EXPECT_EQ(buffer_of(s)->as<BufferArg>().device.str(), "CUDA");
  EXPECT_EQ(buffer_of(input(g, dtypes::int8, {3, 0}))->as<BufferArg>().size, 0);
}

TEST_F(TensorFront, InputErrors) {
  expect_invalid([&] { f32({2, -1}); }, {"input", "dims", "(2,-1)"});
  expect_invalid([&] { input(g, dtypes::float32.vec(4), {2}); }, {"input", "float32x4"});
  expect_invalid([&] { input(g, dtypes::index, {2}); }, {"input", "index"});
  expect_invalid([&] { input(g, dtypes::float32, {int64_t(1) << 40, int64_t(1) << 40}); }, {"too many elements"});
  expect_invalid([&] { buffer_of(g.cint(1, dtypes::int32)); }, {"buffer_of", "Const"});
}

TEST_F(TensorFront, Constants) {
  const UOp* c = constant(g, dtypes::float32, 2.5);
  EXPECT_EQ(c->op, Op::Const);
  EXPECT_EQ(dims(c), Dims{});
  EXPECT_EQ(c->as<double>(), 2.5);
  // float values are rounded to what the dtype holds
  EXPECT_EQ(constant(g, dtypes::float16, 0.1)->as<double>(), round_float(dtypes::float16, 0.1));
  EXPECT_NE(constant(g, dtypes::float16, 0.1)->as<double>(), 0.1);
  EXPECT_EQ(constant(g, dtypes::int8, -128)->as<int64_t>(), -128);
  EXPECT_EQ(constant(g, dtypes::bool_, 1)->as<int64_t>(), 1);
  // uint64 keeps its bit pattern in the int64 arg
  i128 max_u64 = (i128(1) << 64) - 1;
  EXPECT_EQ(constant_int(g, dtypes::uint64, max_u64)->as<int64_t>(), -1);
  EXPECT_EQ(constant(g, dtypes::int32, 7.0), constant_int(g, dtypes::int32, 7));  // interned: one node

  expect_invalid([&] { constant(g, dtypes::int8, 128); }, {"constant", "int8"});
  expect_invalid([&] { constant(g, dtypes::int32, 1.5); }, {"constant", "integer"});
  expect_invalid([&] { constant(g, dtypes::uint8, -1); }, {"constant", "uint8"});
  expect_invalid([&] { constant(g, dtypes::bool_, 2); }, {"constant", "bool"});
  expect_invalid([&] { constant_int(g, dtypes::uint64, max_u64 + 1); }, {"constant", "uint64"});
  expect_invalid([&] { constant(g, dtypes::int64, 1e30); }, {"constant", "int64"});
}

TEST_F(TensorFront, Reshape) {
  const UOp* x = f32({2, 3, 4});
  const UOp* r = reshape(g, x, {6, 4});
  EXPECT_EQ(r->op, Op::Reshape);
  EXPECT_EQ(dims(r), (Dims{6, 4}));
  EXPECT_EQ(reshape(g, x, {2, 3, 4}), x);  // no change, no node
  EXPECT_EQ(dims(reshape(g, constant(g, dtypes::int32, 1), {1, 1})), (Dims{1, 1}));
  EXPECT_EQ(dims(reshape(g, reshape(g, x, {24, 1}), {1, 24})), (Dims{1, 24}));
  expect_invalid([&] { reshape(g, x, {5, 5}); }, {"reshape", "(2,3,4)", "24", "(5,5)", "25"});
  expect_invalid([&] { reshape(g, x, {-2, -12}); }, {"reshape", ">= 0"});
  expect_invalid([&] { reshape(g, nullptr, {1}); }, {"reshape", "null"});
}

TEST_F(TensorFront, Permute) {
  const UOp* x = f32({2, 3, 4});
  const UOp* p = permute(g, x, {2, 0, 1});
  EXPECT_EQ(p->op, Op::Permute);
  EXPECT_EQ(dims(p), (Dims{4, 2, 3}));
  EXPECT_EQ(permute(g, x, {0, 1, 2}), x);
  expect_invalid([&] { permute(g, x, {0, 1}); }, {"permute", "order", "got 2", "(2,3,4)"});
  expect_invalid([&] { permute(g, x, {0, 1, 1}); }, {"permute", "(0,1,1)", "not a permutation"});
  expect_invalid([&] { permute(g, x, {0, 1, 3}); }, {"permute", "(0,1,3)"});
  expect_invalid([&] { permute(g, x, {0, 1, -1}); }, {"permute", "(0,1,-1)"});
}

// as_panel_copy gives back the arguments panel_copy made a view from, with its panels padded or not;
// any other view, and a copy of the same shape built otherwise, is none.
TEST_F(TensorFront, PanelCopiesAreRecognized) {
  const UOp* w = f32({2, 40, 3, 3});
  for (int64_t panel : {8, 16, 32}) {  // 40 = 5 x 8; 16 and 32 pad the last panel
    for (int64_t outer_at : {0, 1, 3}) {
      const UOp* view = panel_copy(g, w, 1, panel, outer_at);
      EXPECT_EQ(dims(view), (Dims{2, 40, 3, 3}));
      std::optional<PanelCopy> pc = as_panel_copy(g, view);
      ASSERT_TRUE(pc.has_value()) << panel << " " << outer_at;
      EXPECT_EQ(pc->x, w);
      EXPECT_EQ(pc->axis, 1);
      EXPECT_EQ(pc->panel, panel);
      EXPECT_EQ(pc->outer_at, outer_at);
    }
  }
  EXPECT_FALSE(as_panel_copy(g, w).has_value());
  EXPECT_FALSE(as_panel_copy(g, permute(g, w, {1, 0, 2, 3})).has_value());
  // the copy's parts without their view back: not a panel copy
  const UOp* split = reshape(g, w, {2, 5, 8, 3, 3});
  const UOp* copy = g.make(Op::Contiguous, dtypes::float32, {permute(g, split, {0, 1, 3, 4, 2})});
  EXPECT_FALSE(as_panel_copy(g, reshape(g, copy, {2, 5, 24, 3})).has_value());
}

TEST_F(TensorFront, Expand) {
  const UOp* x = f32({3, 1, 6});
  const UOp* e = expand(g, x, {3, 4, 6});
  EXPECT_EQ(e->op, Op::Expand);
  EXPECT_EQ(dims(e), (Dims{3, 4, 6}));
  EXPECT_EQ(expand(g, x, {3, 1, 6}), x);
  EXPECT_EQ(dims(expand(g, x, {3, 0, 6})), (Dims{3, 0, 6}));
  expect_invalid([&] { expand(g, x, {4, 6}); }, {"expand", "rank", "(3,1,6)", "(4,6)"});
  expect_invalid([&] { expand(g, x, {6, 4, 6}); }, {"expand", "size-1", "axis 0", "3 vs 6"});
}

TEST_F(TensorFront, Flip) {
  const UOp* x = f32({3, 4});
  const UOp* f = flip(g, x, {1, 0});
  EXPECT_EQ(f->op, Op::Flip);
  EXPECT_EQ(dims(f), (Dims{3, 4}));
  EXPECT_EQ(f->as<std::vector<int64_t>>(), (Dims{1, 0}));
  EXPECT_EQ(flip(g, x, {0, 0}), x);
  expect_invalid([&] { flip(g, x, {1}); }, {"flip", "flags", "got 1"});
  expect_invalid([&] { flip(g, x, {2, 0}); }, {"flip", "0 or 1"});
}

TEST_F(TensorFront, PadAndShrink) {
  const UOp* x = f32({3, 4});
  const UOp* p = pad(g, x, {1, 0}, {5, 6});
  EXPECT_EQ(p->op, Op::Pad);
  EXPECT_EQ(dims(p), (Dims{5, 6}));
  EXPECT_EQ(pad(g, x, {0, 0}, {3, 4}), x);
  const UOp* s = shrink(g, x, {1, 1}, {2, 3});
  EXPECT_EQ(s->op, Op::Shrink);
  EXPECT_EQ(dims(s), (Dims{2, 3}));
  EXPECT_EQ(shrink(g, x, {0, 0}, {3, 4}), x);
  EXPECT_EQ(dims(shrink(g, x, {3, 0}, {0, 4})), (Dims{0, 4}));

  expect_invalid([&] { pad(g, x, {2, 0}, {4, 4}); }, {"pad", "axis 0", "2+3 > 4"});
  expect_invalid([&] { pad(g, x, {-1, 0}, {5, 4}); }, {"pad", "offsets", ">= 0"});
  expect_invalid([&] { pad(g, x, {0}, {5, 4}); }, {"pad", "offsets", "got 1"});
  expect_invalid([&] { shrink(g, x, {1, 2}, {3, 2}); }, {"shrink", "axis 0", "1+3 > 3"});
  expect_invalid([&] { shrink(g, x, {0, 0}, {1, -1}); }, {"shrink", "sizes", ">= 0"});
  expect_invalid([&] { shrink(g, x, {0, 0}, {1, 1, 1}); }, {"shrink", "sizes", "got 3"});
}

TEST_F(TensorFront, ReduceKeepsAxesAsOne) {
  const UOp* x = f32({3, 4, 5});
  const UOp* r = reduce(g, x, Op::Add, {2, 0});
  EXPECT_EQ(r->op, Op::Reduce);
  EXPECT_EQ(dims(r), (Dims{1, 4, 1}));
  EXPECT_EQ(r->as<ReduceArg>().op, Op::Add);
  EXPECT_EQ(r->as<ReduceArg>().axes, (Dims{0, 2}));  // stored sorted
  EXPECT_EQ(r, reduce(g, x, Op::Add, {0, 2}));
  EXPECT_EQ(dims(reduce(g, x, Op::Max, {0, 1, 2})), (Dims{1, 1, 1}));
  EXPECT_EQ(reduce(g, x, Op::Mul, {}), x);
  expect_invalid([&] { reduce(g, x, Op::Add, {3}); }, {"reduce", "axis 3", "(3,4,5)"});
  expect_invalid([&] { reduce(g, x, Op::Add, {-1}); }, {"reduce", "axis -1"});
  expect_invalid([&] { reduce(g, x, Op::Add, {1, 1}); }, {"reduce", "axis 1", "twice"});
  expect_invalid([&] { reduce(g, x, Op::Sub, {1}); }, {"reduce", "Add, Max or Mul", "Sub"});
}

TEST_F(TensorFront, CastAndBitcast) {
  const UOp* x = f32({2, 4});
  const UOp* c = cast(g, x, dtypes::int32);
  EXPECT_EQ(c->op, Op::Cast);
  EXPECT_EQ(c->dtype, dtypes::int32);
  EXPECT_EQ(dims(c), (Dims{2, 4}));
  EXPECT_EQ(cast(g, x, dtypes::float32), x);
  const UOp* b = bitcast(g, x, dtypes::uint32);
  EXPECT_EQ(b->op, Op::Bitcast);
  EXPECT_EQ(b->dtype, dtypes::uint32);
  EXPECT_EQ(dims(b), (Dims{2, 4}));
  // different element sizes: the last axis rescales, the bytes stay
  EXPECT_EQ(dims(bitcast(g, x, dtypes::float16)), (Dims{2, 8}));
  EXPECT_EQ(dims(bitcast(g, x, dtypes::int64)), (Dims{2, 2}));
  expect_invalid([&] { bitcast(g, constant(g, dtypes::float32, 1), dtypes::float16); }, {"Bitcast", "scalar"});
  expect_invalid([&] { bitcast(g, f32({3}), dtypes::int64); }, {"Bitcast", "multiple"});
  expect_invalid([&] { cast(g, x, dtypes::void_); }, {"cast", "void"});
}

TEST_F(TensorFront, ElementwiseBroadcastsRightAligned) {
  const UOp* a = f32({45, 65});
  EXPECT_EQ(dims(add(g, a, f32({65}))), (Dims{45, 65}));
  EXPECT_EQ(dims(add(g, a, f32({45, 1}))), (Dims{45, 65}));
  EXPECT_EQ(dims(mul(g, f32({7, 1}), f32({1, 9}))), (Dims{7, 9}));
  EXPECT_EQ(dims(sub(g, f32({3, 1, 5}), f32({4, 1}))), (Dims{3, 4, 5}));
  EXPECT_EQ(dims(add(g, a, constant(g, dtypes::float32, 2.5))), (Dims{45, 65}));
  EXPECT_EQ(dims(add(g, constant(g, dtypes::float32, 2.5), a)), (Dims{45, 65}));
  EXPECT_EQ(
      dims(where(g, cmplt(g, f32({45, 1}), constant(g, dtypes::float32, 0.5)), a, constant(g, dtypes::float32, 4))),
      (Dims{45, 65}));
  EXPECT_EQ(dims(mulacc(g, f32({2, 1, 1}), f32({3, 1}), f32({4}))), (Dims{2, 3, 4}));
  EXPECT_EQ(dims(add(g, f32({0, 3}), f32({1, 3}))), (Dims{0, 3}));

  expect_invalid([&] { add(g, a, f32({45})); }, {"add", "(45,65)", "(45,)", "do not broadcast", "65 vs 45"});
  expect_invalid(
      [&] {
        where(g, cmplt(g, f32({3}), f32({3})), f32({2, 3}), f32({4, 1}));
      },
      {"where", "do not broadcast"});
}

TEST_F(TensorFront, ElementwiseDtypes) {
  const UOp* a = f32({4});
  const UOp* i = input(g, dtypes::int32, {4});
  const UOp* p = input(g, dtypes::bool_, {4});
  EXPECT_EQ(add(g, a, a)->dtype, dtypes::float32);
  for (Op cmp : {Op::CmpLt, Op::CmpNe, Op::CmpGt, Op::CmpGe, Op::CmpLe, Op::CmpEq}) {
    const UOp* c = binary(g, cmp, i, i);
    EXPECT_EQ(c->op, cmp);
    EXPECT_EQ(c->dtype, dtypes::bool_);
  }
  EXPECT_EQ(where(g, p, i, i)->dtype, dtypes::int32);
  EXPECT_EQ(bitwise_and(g, p, p)->dtype, dtypes::bool_);
  EXPECT_EQ(logical_not(g, p)->dtype, dtypes::bool_);
  EXPECT_EQ(idiv(g, i, i)->dtype, dtypes::int32);
  EXPECT_EQ(unary(g, Op::Trunc, i)->dtype, dtypes::int32);

  expect_invalid([&] { add(g, a, i); }, {"add", "float32", "int32", "one dtype"});
  expect_invalid([&] { where(g, i, a, a); }, {"where", "condition", "bool", "int32"});
  expect_invalid([&] { where(g, p, a, i); }, {"where", "float32", "int32"});
  expect_invalid([&] { unary(g, Op::Exp2, i); }, {"exp2", "float", "int32"});
  expect_invalid([&] { divide(g, i, i); }, {"div", "float", "int32"});
  expect_invalid([&] { binary(g, Op::Pow, i, i); }, {"pow", "float"});
  expect_invalid([&] { mod(g, a, a); }, {"mod", "integer", "float32"});
  expect_invalid([&] { shl(g, p, p); }, {"shl", "integer", "bool"});
  expect_invalid([&] { bitwise_xor(g, a, a); }, {"xor", "integer or bool", "float32"});
  expect_invalid([&] { logical_not(g, i); }, {"not", "bool", "int32"});
  expect_invalid([&] { neg(g, p); }, {"neg", "non-bool"});
  expect_invalid([&] { unary(g, Op::Cast, a); }, {"cast", "use cast"});
  expect_invalid([&] { unary(g, Op::Reshape, a); }, {"reshape", "not an elementwise op"});
  expect_invalid([&] { unary(g, Op::Add, a); }, {"add", "takes 2 operands", "got 1"});
}

// Decomposed ops stay their own nodes at tensor level; lowering decomposes them later.
TEST_F(TensorFront, DecomposedOpsStayWhole) {
  const UOp* a = f32({4});
  const UOp* b = f32({4});
  EXPECT_EQ(neg(g, a)->op, Op::Neg);
  EXPECT_EQ(sub(g, a, b)->op, Op::Sub);
  EXPECT_EQ(divide(g, a, b)->op, Op::Div);
  EXPECT_EQ(binary(g, Op::Pow, a, b)->op, Op::Pow);
  EXPECT_EQ(mulacc(g, a, b, a)->op, Op::Mulacc);
  for (Op op : {Op::Exp2, Op::Log2, Op::Sin, Op::Sqrt, Op::Recip, Op::Trunc}) {
    const UOp* u = unary(g, op, a);
    EXPECT_EQ(u->op, op);
    ASSERT_EQ(u->nsrc(), 1u);
    EXPECT_EQ(u->src(0), a);
  }
}

}  // namespace
}  // namespace sn
