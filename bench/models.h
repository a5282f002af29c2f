// Whole models as tensor graphs, for the benchmarks that time compiling and running them. Every
// weight is an input (created in order after the data input), so a program takes the data first;
// or, with const_weights, a constant of the program.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor/compose.h"
#include "core/tensor/tensor.h"

namespace sn::bench {

struct Model {
  std::vector<const UOp*> inputs;  // the data input, then every weight that is an input, in creation order
  std::vector<const UOp*> outputs;
  // Weights and biases as constants of the program (Binary data, fixed values in [-0.1, 0.1)), not
  // inputs: their packing then runs once, at compile time.
  bool const_weights = false;
  uint32_t seed = 1;

  const UOp* weight(Graph& g, const std::vector<int64_t>& shape) {
    if (!const_weights) {
      const UOp* w = input(g, dtypes::float32, shape);
      inputs.push_back(w);
      return w;
    }
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    uint32_t x = seed++ * 2654435761u;
    for (float& f : v) {
      x = x * 1664525u + 1013904223u;
      f = float(x >> 8) / float(1u << 24) * 0.2f - 0.1f;
    }
    std::string bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    return reshape(g, slice(g, binary_data(g, std::move(bytes)), 0, n, dtypes::float32), shape);
  }
};

// A conv layer with bias (batch norm folded into it) and an optional relu.
inline const UOp* conv_layer(Graph& g, Model& m, const UOp* x, int64_t ci, int64_t co, int64_t k, int64_t stride,
                             int64_t pad, bool with_relu) {
  const UOp* w = m.weight(g, {co, ci, k, k});
  const UOp* b = m.weight(g, {co});
  const UOp* y = conv2d(g, x, w, b, {stride, stride}, {pad, pad});
  return with_relu ? relu(g, y) : y;
}

// x (n, k) @ w (k, o) + b (o)
inline const UOp* linear_layer(Graph& g, Model& m, const UOp* x, int64_t k, int64_t o) {
  const UOp* w = m.weight(g, {k, o});
  const UOp* b = m.weight(g, {o});
  const int64_t n = (*x->shape())[0].value;
  return add(g, gemm(g, x, w), expand(g, reshape(g, b, {1, o}), {n, o}));
}

// The small CNN of issues 12 and 13: batch n of 3x32x32; conv 3->16 + relu + 2x2 max pool, conv
// 16->32 + relu + 2x2 max pool, flatten 2048 -> linear 10, softmax.
inline Model small_cnn(Graph& g, int64_t n, bool const_weights = false) {
  Model m;
  m.const_weights = const_weights;
  const UOp* x = input(g, dtypes::float32, {n, 3, 32, 32});
  m.inputs.push_back(x);
  const UOp* h = max_pool2d(g, conv_layer(g, m, x, 3, 16, 3, 1, 1, true), {2, 2}, {2, 2});
  h = max_pool2d(g, conv_layer(g, m, h, 16, 32, 3, 1, 1, true), {2, 2}, {2, 2});
  h = reshape(g, h, {n, 32 * 8 * 8});
  m.outputs = {softmax(g, linear_layer(g, m, h, 2048, 10), 1)};
  return m;
}

// ResNet-18 forward at batch n, 3x224x224, batch norm folded into the convolutions' biases.
inline Model resnet18(Graph& g, int64_t n, bool const_weights = false) {
  Model m;
  m.const_weights = const_weights;
  const UOp* x = input(g, dtypes::float32, {n, 3, 224, 224});
  m.inputs.push_back(x);
  const UOp* h = conv_layer(g, m, x, 3, 64, 7, 2, 3, true);  // 112x112
  h = max_pool2d(g, h, {3, 3}, {2, 2}, {1, 1});              // 56x56
  int64_t c = 64;
  for (int64_t stage = 0; stage < 4; stage++) {
    int64_t co = 64 << stage;
    for (int block = 0; block < 2; block++) {
      int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      const UOp* y = conv_layer(g, m, h, c, co, 3, stride, 1, true);
      y = conv_layer(g, m, y, co, co, 3, 1, 1, false);
      const UOp* skip = (stride != 1 || c != co) ? conv_layer(g, m, h, c, co, 1, stride, 0, false) : h;
      h = relu(g, add(g, y, skip));
      c = co;
    }
  }
  // global average pool over 7x7, then the classifier
  const UOp* pooled = mul(g, reshape(g, reduce(g, h, Op::Add, {2, 3}), {n, 512}),
                          expand(g, reshape(g, constant(g, dtypes::float32, 1.0 / 49.0), {1, 1}), {n, 512}));
  m.outputs = {linear_layer(g, m, pooled, 512, 1000)};
  return m;
}

}  // namespace sn::bench
