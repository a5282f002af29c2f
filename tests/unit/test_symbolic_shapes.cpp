// Symbolic shapes from the tensor builders: a model built on input_sym compiles once and runs at
// any value of its variables, checked against the oracle on the static graph of each size.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/compose.h"
#include "core/tensor/gradient.h"
#include "tests/unit/test_pipeline_util.h"

namespace sn {
namespace {

using namespace testrt;

// Weights of the test MLP: w1 (32,64), b1 (64,), w2 (64,10).
struct MlpWeights {
  Array w1, b1, w2;
};

// x @ w1 + b1, relu, @ w2, softmax over the classes; the weights become inputs of g (appended to
// `inputs`, their data in `data`).
const UOp* mlp(Graph& g, const UOp* x, const MlpWeights& w, oracle::BufferData& data, std::vector<const UOp*>& inputs) {
  auto weight = [&](const Array& a) {
    const UOp* t = input(g, a.dtype, a.shape);
    data[buffer_of(t)] = a;
    inputs.push_back(t);
    return t;
  };
  const UOp *w1 = weight(w.w1), *b1 = weight(w.b1), *w2 = weight(w.w2);
  const UOp* h = relu(g, binary(g, Op::Add, matmul(g, x, w1), b1));
  return softmax(g, matmul(g, h, w2), 1);
}

// The MLP's output for x of shape (rows, 32), evaluated by the oracle on a static graph.
Array mlp_oracle(const Array& x, const MlpWeights& w) {
  Graph g;
  oracle::BufferData data;
  std::vector<const UOp*> inputs;
  const UOp* xt = input(g, x.dtype, x.shape);
  data[buffer_of(xt)] = x;
  const UOp* out = mlp(g, xt, w, data, inputs);
  return oracle::evaluate(out, data);
}

std::string error_of(const std::function<void()>& f, Code* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

class SymbolicShapes : public ::testing::Test {
 protected:
  Rng rng{11};
  std::shared_ptr<ComputeDevice> dev = runtime().device("CPU");

  using Build = std::function<std::vector<const UOp*>(Graph&, const std::vector<const UOp*>&)>;

  // Compiles build() on `inputs` (made with input_sym or input) once.
  std::shared_ptr<const Program> compile(Graph& g, const Build& build, const std::vector<const UOp*>& inputs) {
    CompileOptions opts;
    opts.inputs = inputs;
    return compile_program(runtime(), g, build(g, inputs), dev, opts);
  }

  // Runs p at `vars` on `arrays` (its inputs, in order) and expects every output to match the oracle's
  // value of build() on a static graph with inputs of the arrays' shapes.
  void expect_oracle(const Program& p, const Build& build, const std::vector<Array>& arrays,
                     const std::vector<std::pair<std::string, int64_t>>& vars, double rtol, double atol) {
    std::vector<std::shared_ptr<Buffer>> ins, outs;
    for (const Array& a : arrays) ins.push_back(to_buffer(dev, a));
    for (size_t i = 0; i < p.outputs.size(); i++) outs.push_back(p.allocate_output(i, vars));
    p.run(ins, outs, vars);
    Graph sg;
    oracle::BufferData data;
    std::vector<const UOp*> static_inputs;
    for (const Array& a : arrays) {
      static_inputs.push_back(input(sg, a.dtype, a.shape));
      data[buffer_of(static_inputs.back())] = a;
    }
    std::vector<const UOp*> want = build(sg, static_inputs);
    std::string at;
    for (const auto& [name, value] : vars) at += cat(name, " = ", value, " ");
    for (size_t i = 0; i < want.size(); i++)
      EXPECT_EQ(mismatch(from_buffer(*outs[i]), oracle::evaluate(want[i], data), rtol, atol), "")
          << "output " << i << " at " << at;
  }
};

TEST_F(SymbolicShapes, MlpCompilesOnceAndRunsAtAnyBatch) {
  MlpWeights w{random_array(rng, dtypes::float32, {32, 64}, -0.5, 0.5),
               random_array(rng, dtypes::float32, {64}, -0.5, 0.5),
               random_array(rng, dtypes::float32, {64, 10}, -0.5, 0.5)};
  Graph g;
  const UOp* b = g.var("b", 1, 64);
  const UOp* x = input_sym(g, dtypes::float32, Shape{Dim{0, b}, Dim::of(32)});
  oracle::BufferData data;
  std::vector<const UOp*> inputs{x};
  const UOp* out = mlp(g, x, w, data, inputs);
  CompileOptions opts;
  opts.inputs = inputs;
  auto p = compile_program(runtime(), g, std::vector<const UOp*>{out}, dev, opts);
  EXPECT_EQ(p->inputs[0].shape, (std::vector<int64_t>{-1, 32}));
  EXPECT_EQ(p->inputs[1].shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(p->outputs[0].shape, (std::vector<int64_t>{-1, 10}));
  ASSERT_EQ(p->vars.size(), 1u);
  EXPECT_EQ(p->vars[0].name, "b");
  const uint64_t compiled = dev->stats().compiled;

  for (int64_t rows : {1, 7, 64}) {
    Array xa = random_array(rng, dtypes::float32, {rows, 32});
    std::vector<std::shared_ptr<Buffer>> ins{to_buffer(dev, xa), to_buffer(dev, w.w1), to_buffer(dev, w.b1),
                                             to_buffer(dev, w.w2)};
    std::vector<std::pair<std::string, int64_t>> vars{{"b", rows}};
    auto o = p->allocate_output(0, vars);
    EXPECT_EQ(o->shape(), (std::vector<int64_t>{rows, 10}));
    p->run(ins, std::vector<std::shared_ptr<Buffer>>{o}, vars);
    EXPECT_EQ(mismatch(from_buffer(*o), mlp_oracle(xa, w), 2e-5, 1e-6), "") << "b = " << rows;
  }
  EXPECT_EQ(dev->stats().compiled, compiled) << "a run at another batch size compiled a kernel";
}

// Weights of the test CNN: conv (8,3,3,3) + (8,), linear (512,10) + (10,).
struct CnnWeights {
  Array cw, cb, lw, lb;
};

// conv2d 3->8 3x3 pad 1 on (N,3,16,16), relu, 2x2 max pool, flattened per sample, linear to 10.
const UOp* cnn(Graph& g, const UOp* x, const CnnWeights& w, oracle::BufferData& data, std::vector<const UOp*>& inputs) {
  auto weight = [&](const Array& a) {
    const UOp* t = input(g, a.dtype, a.shape);
    data[buffer_of(t)] = a;
    inputs.push_back(t);
    return t;
  };
  const UOp *cw = weight(w.cw), *cb = weight(w.cb), *lw = weight(w.lw), *lb = weight(w.lb);
  const UOp* h = relu(g, conv2d(g, x, cw, cb, {1, 1}, {1, 1}));
  h = max_pool2d(g, h, {2, 2}, {2, 2});
  Shape flat{h->shape()->front(), Dim::of(8 * 8 * 8)};  // the batch stays its own axis
  return binary(g, Op::Add, matmul(g, reshape_sym(g, h, flat), lw), lb);
}

Array cnn_oracle(const Array& x, const CnnWeights& w) {
  Graph g;
  oracle::BufferData data;
  std::vector<const UOp*> inputs;
  const UOp* xt = input(g, x.dtype, x.shape);
  data[buffer_of(xt)] = x;
  return oracle::evaluate(cnn(g, xt, w, data, inputs), data);
}

TEST_F(SymbolicShapes, CnnCompilesOnceAndRunsAtAnyBatch) {
  CnnWeights w{
      random_array(rng, dtypes::float32, {8, 3, 3, 3}, -0.5, 0.5), random_array(rng, dtypes::float32, {8}, -0.5, 0.5),
      random_array(rng, dtypes::float32, {512, 10}, -0.1, 0.1), random_array(rng, dtypes::float32, {10}, -0.5, 0.5)};
  Graph g;
  const UOp* b = g.var("b", 1, 8);
  const UOp* x = input_sym(g, dtypes::float32, Shape{Dim{0, b}, Dim::of(3), Dim::of(16), Dim::of(16)});
  oracle::BufferData data;
  std::vector<const UOp*> inputs{x};
  const UOp* out = cnn(g, x, w, data, inputs);
  CompileOptions opts;
  opts.inputs = inputs;
  auto p = compile_program(runtime(), g, std::vector<const UOp*>{out}, dev, opts);
  EXPECT_EQ(p->outputs[0].shape, (std::vector<int64_t>{-1, 10}));
  const uint64_t compiled = dev->stats().compiled;
  for (int64_t rows : {1, 3, 8}) {
    Array xa = random_array(rng, dtypes::float32, {rows, 3, 16, 16});
    std::vector<std::shared_ptr<Buffer>> ins{to_buffer(dev, xa), to_buffer(dev, w.cw), to_buffer(dev, w.cb),
                                             to_buffer(dev, w.lw), to_buffer(dev, w.lb)};
    std::vector<std::pair<std::string, int64_t>> vars{{"b", rows}};
    auto o = p->allocate_output(0, vars);
    p->run(ins, std::vector<std::shared_ptr<Buffer>>{o}, vars);
    EXPECT_EQ(mismatch(from_buffer(*o), cnn_oracle(xa, w), 1e-4, 1e-5), "") << "b = " << rows;
  }
  EXPECT_EQ(dev->stats().compiled, compiled) << "a run at another batch size compiled a kernel";
}

// A matmul large enough for a register tile: the heuristic pads the symbolic rows to the tile's
// row count (PADTO, then UPCAST) and the scheduler packs the weight as for a static batch. Batch
// sizes that are not multiples of the tile exercise the padding rows, which must store nothing.
TEST_F(SymbolicShapes, MatmulTilesPadTheSymbolicRows) {
  Array w = random_array(rng, dtypes::float32, {64, 256}, -0.5, 0.5);
  Graph g;
  const UOp* b = g.var("b", 1, 96);
  const UOp* x = input_sym(g, dtypes::float32, Shape{Dim{0, b}, Dim::of(64)});
  const UOp* wt = input(g, dtypes::float32, {64, 256});
  const UOp* out = matmul(g, x, wt);
  CompileOptions opts;
  opts.inputs = {x, wt};
  auto p = compile_program(runtime(), g, std::vector<const UOp*>{out}, dev, opts);
  bool padded = false;
  for (const auto& l : p->launches)
    for (const Opt& o : l.kernel->opts) padded = padded || o.op == OptOp::Padto;
  EXPECT_TRUE(padded) << "the matmul's symbolic rows were not tiled";
  for (int64_t rows : {1, 3, 5, 66, 96}) {
    Array xa = random_array(rng, dtypes::float32, {rows, 64});
    std::vector<std::pair<std::string, int64_t>> vars{{"b", rows}};
    // The output buffer is 8 rows larger than the shape (a tile is at most 8) and poisoned: nothing may be stored past
    // row b.
    auto storage = dev->allocate(size_t((rows + 8) * 256) * sizeof(float));
    std::vector<float> poison(size_t((rows + 8) * 256), 12345.0f);
    dev->copy_in(*storage, 0, poison.data(), poison.size() * sizeof(float));
    auto o = std::make_shared<Buffer>(storage, 0, dtypes::float32, std::vector<int64_t>{rows, 256});
    p->run(std::vector<std::shared_ptr<Buffer>>{to_buffer(dev, xa), to_buffer(dev, w)},
           std::vector<std::shared_ptr<Buffer>>{o}, vars);
    Graph sg;
    oracle::BufferData data;
    const UOp* sx = input(sg, dtypes::float32, {rows, 64});
    const UOp* sw = input(sg, dtypes::float32, {64, 256});
    data[buffer_of(sx)] = xa;
    data[buffer_of(sw)] = w;
    EXPECT_EQ(mismatch(from_buffer(*o), oracle::evaluate(matmul(sg, sx, sw), data), 2e-5, 1e-5), "") << "b = " << rows;
    std::vector<float> all(poison.size());
    dev->copy_out(*storage, 0, all.data(), all.size() * sizeof(float));
    for (size_t i = size_t(rows * 256); i < all.size(); i++)
      ASSERT_EQ(all[i], 12345.0f) << "b = " << rows << ": a padding row stored element " << i;
  }
}

// argmax over a constant axis, one_hot of a batch of labels and concat along a constant axis, with
// a symbolic batch: one compile, checked against the oracle on static graphs at each batch size.
TEST_F(SymbolicShapes, ArgmaxOneHotAndConcatTakeABatch) {
  Build build = [](Graph& g, const std::vector<const UOp*>& in) {
    const UOp* best = argmax(g, in[0], 1, false);                                  // (b,)
    const UOp* hot = one_hot(g, best, 5, dtypes::float32);                         // (b, 5)
    const UOp* joined = concat(g, std::vector<const UOp*>{in[0], in[1], hot}, 1);  // (b, 13)
    return std::vector<const UOp*>{best, joined};
  };
  Graph g;
  const UOp* b = g.var("b", 1, 8);
  const UOp* x = input_sym(g, dtypes::float32, Shape{Dim{0, b}, Dim::of(5)});
  const UOp* y = input_sym(g, dtypes::float32, Shape{Dim{0, b}, Dim::of(3)});
  auto p = compile(g, build, {x, y});
  EXPECT_EQ(p->outputs[1].shape, (std::vector<int64_t>{-1, 13}));
  for (int64_t rows : {1, 3, 8})
    expect_oracle(*p, build,
                  {random_array(rng, dtypes::float32, {rows, 5}), random_array(rng, dtypes::float32, {rows, 3})},
                  {{"b", rows}}, 0, 0);
  // the reduced or joined axis itself must be constant
  Code code = Code::Ok;
  std::string e = error_of([&] { argmax(g, x, 0, false); }, &code);
  EXPECT_EQ(code, Code::Unsupported) << e;
  EXPECT_NE(e.find("argmax: axis 0"), std::string::npos) << e;
  e = error_of([&] { concat(g, std::vector<const UOp*>{x, x}, 0); }, &code);
  EXPECT_EQ(code, Code::Unsupported) << e;
  e = error_of([&] { concat(g, std::vector<const UOp*>{x, input(g, dtypes::float32, {2, 3})}, 1); }, &code);
  EXPECT_EQ(code, Code::InvalidArg) << e;
}

// Training at any batch size: the gradients of a symbolic-batch MLP's loss (cross-entropy summed over
// the batch) match the oracle's gradients of the static graph at each size.
TEST_F(SymbolicShapes, GradientsOfASymbolicBatch) {
  Array w1 = random_array(rng, dtypes::float32, {6, 8}, -0.5, 0.5), w2 = random_array(rng, dtypes::float32, {8, 4});
  Build build = [](Graph& g, const std::vector<const UOp*>& in) {  // x, t, w1, w2
    const UOp* h = relu(g, matmul(g, in[0], in[2]));
    const UOp* lp = log_softmax(g, matmul(g, h, in[3]), 1);
    const UOp* loss = reduce(g, mul(g, lp, in[1]), Op::Add, {0, 1});
    return gradient(g, loss, std::vector<const UOp*>{in[2], in[3]});
  };
  Graph g;
  const UOp* n = g.var("n", 1, 16);
  auto p = compile(g, build,
                   {input_sym(g, dtypes::float32, Shape{Dim{0, n}, Dim::of(6)}),
                    input_sym(g, dtypes::float32, Shape{Dim{0, n}, Dim::of(4)}), input(g, dtypes::float32, {6, 8}),
                    input(g, dtypes::float32, {8, 4})});
  const uint64_t compiled = dev->stats().compiled;
  for (int64_t rows : {1, 5, 16})
    expect_oracle(
        *p, build,
        {random_array(rng, dtypes::float32, {rows, 6}), random_array(rng, dtypes::float32, {rows, 4}, 0, 1), w1, w2},
        {{"n", rows}}, 1e-4, 1e-5);
  EXPECT_EQ(dev->stats().compiled, compiled) << "a run at another batch size compiled a kernel";
}

// The same through a convolution and a max pool with a symbolic N (their Pad and Shrink keep the
// batch axis whole): d loss / d weights and d loss / d x at two batch sizes against the oracle.
TEST_F(SymbolicShapes, GradientsThroughAConvolution) {
  Array cw = random_array(rng, dtypes::float32, {4, 2, 3, 3}, -0.5, 0.5);
  Build build = [](Graph& g, const std::vector<const UOp*>& in) {  // x, w
    const UOp* h = max_pool2d(g, relu(g, conv2d(g, in[0], in[1], nullptr, {1, 1}, {1, 1})), {2, 2}, {2, 2});
    const UOp* loss = reduce(g, mul(g, h, h), Op::Add, {0, 1, 2, 3});
    return gradient(g, loss, std::vector<const UOp*>{in[1], in[0]});
  };
  Graph g;
  const UOp* n = g.var("n", 1, 4);
  auto p = compile(g, build,
                   {input_sym(g, dtypes::float32, Shape{Dim{0, n}, Dim::of(2), Dim::of(6), Dim::of(6)}),
                    input(g, dtypes::float32, {4, 2, 3, 3})});
  for (int64_t rows : {1, 3})
    expect_oracle(*p, build, {random_array(rng, dtypes::float32, {rows, 2, 6, 6}), cw}, {{"n", rows}}, 1e-4, 1e-5);
}

// Symbolic dims after the first: the user's buffer is contiguous at the values, so a (b, t) input's
// rows are t apart. Elementwise, a sum over the symbolic axis and a softmax along it, at three sizes.
TEST_F(SymbolicShapes, EveryDimMayBeSymbolic) {
  Build build = [](Graph& g, const std::vector<const UOp*>& in) {
    return std::vector<const UOp*>{mul(g, in[0], constant(g, dtypes::float32, 2)), reduce(g, in[0], Op::Add, {1}),
                                   softmax(g, in[0], 1)};
  };
  Graph g;
  const UOp* b = g.var("b", 1, 4);
  const UOp* t = g.var("t", 1, 6);
  auto p = compile(g, build, {input_sym(g, dtypes::float32, Shape{Dim{0, b}, Dim{0, t}})});
  EXPECT_EQ(p->inputs[0].shape, (std::vector<int64_t>{-1, -1}));
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{2, 3}, {4, 6}, {3, 1}})
    expect_oracle(*p, build, {random_array(rng, dtypes::float32, {rows, cols})}, {{"b", rows}, {"t", cols}}, 1e-5,
                  1e-6);
}

// cumsum along a constant axis of a symbolic batch: the direct window form (5 long) and the blocked
// scan (40 long), one compile, checked against the oracle; scanning the symbolic axis is refused.
TEST_F(SymbolicShapes, CumsumOverAConstantAxisOfABatch) {
  Build build = [](Graph& g, const std::vector<const UOp*>& in) {
    return std::vector<const UOp*>{cumsum(g, in[0], 1), cumsum(g, in[1], -1)};
  };
  Graph g;
  const UOp* b = g.var("b", 1, 6);
  const UOp* x = input_sym(g, dtypes::float32, Shape{Dim{0, b}, Dim::of(5)});
  auto p = compile(g, build, {x, input_sym(g, dtypes::float32, Shape{Dim{0, b}, Dim::of(40)})});
  for (int64_t rows : {1, 4, 6})
    expect_oracle(*p, build,
                  {random_array(rng, dtypes::float32, {rows, 5}), random_array(rng, dtypes::float32, {rows, 40})},
                  {{"b", rows}}, 1e-5, 1e-5);
  Code code = Code::Ok;
  std::string e = error_of([&] { cumsum(g, x, 0); }, &code);
  EXPECT_EQ(code, Code::Unsupported) << e;
  EXPECT_NE(e.find("cumsum"), std::string::npos) << e;
}

// An embedding lookup of a variable number of token ids: take along axis 0 and along axis 1 with a
// symbolic idx, one compile, checked against the oracle (an id outside the table reads zeros).
TEST_F(SymbolicShapes, TakeWithASymbolicIndex) {
  Array table = random_array(rng, dtypes::float32, {10, 4});
  Build build = [](Graph& g, const std::vector<const UOp*>& in) {  // (2,t,4) and (10,2,t)
    return std::vector<const UOp*>{take(g, in[0], in[1], 0), take(g, in[0], in[1], 1)};
  };
  Graph g;
  const UOp* t = g.var("t", 1, 9);
  auto p = compile(g, build,
                   {input(g, dtypes::float32, {10, 4}), input_sym(g, dtypes::int32, Shape{Dim::of(2), Dim{0, t}})});
  EXPECT_EQ(p->outputs[0].shape, (std::vector<int64_t>{2, -1, 4}));
  for (int64_t len : {1, 4, 9})
    expect_oracle(*p, build, {table, random_array(rng, dtypes::int32, {2, len}, -1, 11)}, {{"t", len}}, 0, 0);
}

// stack, gather, scatter_add, flip, pad/shrink of the constant axes, a same-size bitcast and threefry
// with a symbolic batch: one compile, checked against the oracle on static graphs at three sizes.
TEST_F(SymbolicShapes, StackGatherScatterFlipPadAndRandomTakeABatch) {
  Build build = [](Graph& g, const std::vector<const UOp*>& in) {  // x (b,4) f32, idx (b,3) i32, v (b,3) f32
    const UOp *x = in[0], *idx = in[1], *v = in[2];
    const Dim& b = (*x->shape())[0];
    int64_t keep = b.is_const() ? b.value : -1;  // pad and shrink keep a symbolic axis whole as -1
    const UOp* bits = cast(g, bitcast(g, x, dtypes::uint32), dtypes::uint64);
    return std::vector<const UOp*>{
        stack(g, std::vector<const UOp*>{x, mul(g, x, constant(g, dtypes::float32, 2))}, 1),  // (b,2,4)
        stack(g, std::vector<const UOp*>{x, x, x}, 0),                                        // (3,b,4)
        gather(g, x, 1, idx),                                                                 // (b,3)
        scatter_add(g, x, 1, idx, v),                                                         // (b,4)
        flip(g, x, {1, 1}),                                                                   // the batch too
        pad(g, x, {0, 1}, {keep, 7}),                                                         // (b,7)
        shrink(g, x, {0, 1}, {keep, 2}),                                                      // (b,2)
        threefry(g, bits, constant_int(g, dtypes::uint64, 42)),                               // (b,4)
    };
  };
  Graph g;
  const UOp* b = g.var("b", 1, 6);
  auto batch = [&](DType dt, int64_t cols) { return input_sym(g, dt, Shape{Dim{0, b}, Dim::of(cols)}); };
  const UOp *x = batch(dtypes::float32, 4), *idx = batch(dtypes::int32, 3);
  auto p = compile(g, build, {x, idx, batch(dtypes::float32, 3)});
  EXPECT_EQ(p->outputs[1].shape, (std::vector<int64_t>{3, -1, 4}));
  EXPECT_EQ(p->outputs[5].shape, (std::vector<int64_t>{-1, 7}));
  const uint64_t compiled = dev->stats().compiled;
  for (int64_t rows : {1, 4, 6})
    expect_oracle(*p, build,
                  {random_array(rng, dtypes::float32, {rows, 4}), random_array(rng, dtypes::int32, {rows, 3}, 0, 3),
                   random_array(rng, dtypes::float32, {rows, 3})},
                  {{"b", rows}}, 1e-6, 1e-6);
  EXPECT_EQ(dev->stats().compiled, compiled) << "a run at another batch size compiled a kernel";
  // the gathered, scattered, padded or shrunk axis itself must be constant
  Code code = Code::Ok;
  std::string e = error_of([&] { gather(g, x, 0, idx); }, &code);
  EXPECT_EQ(code, Code::Unsupported) << e;
  EXPECT_NE(e.find("gather: axis 0"), std::string::npos) << e;
  e = error_of([&] { pad(g, x, {1, 0}, {-1, 4}); }, &code);
  EXPECT_EQ(code, Code::Unsupported) << e;
  EXPECT_NE(e.find("size -1"), std::string::npos) << e;
  e = error_of([&] { shrink(g, x, {0, 0}, {2, 4}); }, &code);
  EXPECT_EQ(code, Code::Unsupported) << e;
  // a symbolic idx dim must be x's own dim
  const UOp* other = input_sym(g, dtypes::int32, Shape{Dim{0, g.var("m", 1, 6)}, Dim::of(3)});
  e = error_of([&] { gather(g, x, 1, other); }, &code);
  EXPECT_EQ(code, Code::InvalidArg) << e;
  e = error_of([&] { stack(g, std::vector<const UOp*>{x, input(g, dtypes::float32, {2, 4})}, 0); }, &code);
  EXPECT_EQ(code, Code::InvalidArg) << e;
}

TEST_F(SymbolicShapes, RunChecksValuesAndBufferSizes) {
  Graph g;
  const UOp* n = g.var("n", 1, 16);
  const UOp* x = input_sym(g, dtypes::float32, Shape{Dim{0, n}, Dim::of(4)});
  const UOp* y = reduce(g, binary(g, Op::Mul, x, x), Op::Add, {1});  // (n,1): row sums of squares
  CompileOptions opts;
  opts.inputs = {x};
  auto p = compile_program(runtime(), g, std::vector<const UOp*>{y}, dev, opts);
  auto in = Buffer::allocate(dev, dtypes::float32, {3, 4});
  auto out = p->allocate_output(0, std::vector<std::pair<std::string, int64_t>>{{"n", 7}});
  std::vector<std::shared_ptr<Buffer>> ins{in}, outs{out};
  Code code = Code::Ok;
  // n = 17 is past the variable's bound
  std::string e = error_of([&] { p->run(ins, outs, std::vector<std::pair<std::string, int64_t>>{{"n", 17}}); }, &code);
  EXPECT_EQ(code, Code::InvalidArg) << e;
  EXPECT_NE(e.find("n = 17"), std::string::npos) << e;
  // a (3,4) input cannot hold the 28 elements n = 7 needs
  e = error_of([&] { p->run(ins, outs, std::vector<std::pair<std::string, int64_t>>{{"n", 7}}); }, &code);
  EXPECT_EQ(code, Code::InvalidArg) << e;
  EXPECT_NE(e.find("input 0"), std::string::npos) << e;
  EXPECT_NE(e.find("28"), std::string::npos) << e;
  EXPECT_NE(e.find("12"), std::string::npos) << e;
  // a static-shape allocation of a symbolic output is refused
  e = error_of([&] { p->allocate_output(0); }, &code);
  EXPECT_EQ(code, Code::InvalidArg) << e;
  // at n = 3 the same buffers fit
  p->run(ins, outs, std::vector<std::pair<std::string, int64_t>>{{"n", 3}});
}

TEST_F(SymbolicShapes, BuildersRefuseWhatTheMathDoesNotAllow) {
  Graph g;
  const UOp* n = g.var("n", 1, 8);
  const UOp* x = input_sym(g, dtypes::float32, Shape{Dim{0, n}, Dim::of(4)});
  Code code = Code::Ok;
  // merging the symbolic dim into a number
  std::string e = error_of([&] { reshape(g, x, {32}); }, &code);
  EXPECT_EQ(code, Code::Unsupported) << e;
  EXPECT_NE(e.find("reshape"), std::string::npos) << e;
  e = error_of([&] { reshape_sym(g, x, Shape{Dim{0, g.alu(Op::Mul, n, g.cint(4))}}); }, &code);
  EXPECT_EQ(code, Code::Unsupported) << e;
  EXPECT_NE(e.find("symbolic dim"), std::string::npos) << e;
  // a symbolic contraction dim
  e = error_of([&] { matmul(g, permute(g, x, {1, 0}), x); }, &code);
  EXPECT_EQ(code, Code::Unsupported) << e;
  EXPECT_NE(e.find("contraction"), std::string::npos) << e;
  // a symbolic dim broadcasts only with itself or 1
  const UOp* m = g.var("m", 1, 8);
  const UOp* z = input_sym(g, dtypes::float32, Shape{Dim{0, m}, Dim::of(4)});
  e = error_of([&] { binary(g, Op::Add, x, z); }, &code);
  EXPECT_EQ(code, Code::InvalidArg) << e;
  // what keeps the symbolic dim as its own axis works
  const UOp* r = reshape_sym(g, x, Shape{Dim{0, n}, Dim::of(2), Dim::of(2)});
  EXPECT_EQ(r->shape()->size(), 3u);
  EXPECT_EQ(permute(g, r, {1, 2, 0})->shape()->back(), (Dim{0, n}));
  EXPECT_EQ(expand_sym(g, input(g, dtypes::float32, {1, 4}), Shape{Dim{0, n}, Dim::of(4)})->shape()->front(),
            (Dim{0, n}));
}

}  // namespace
}  // namespace sn
