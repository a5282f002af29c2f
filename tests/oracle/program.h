// The conformance program language (../shared/conformance/README.md, ops.jsonl) built into a
// tensor-level graph through the tensor front:
//   NAME                                an input tensor
//   (const DTYPE VALUE)                 a shape-() scalar
//   (reshape x d...) (permute x p...) (expand x d...) (flip x f...)
//   (pad x (o...) (s...)) (shrink x (o...) (s...))
//   (reduce add|max|mul x a...)  (cast DTYPE x)  (bitcast DTYPE x)
//   (OP x ...)                          elementwise: neg recip trunc exp2 log2 sin sqrt not add sub mul
//                                       div max pow idiv mod cmplt cmpne cmpeq cmpgt cmpge cmple and or
//                                       xor shl shr where mulacc
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir/graph.h"

namespace sn::oracle {

struct InputSpec {
  DType dtype;
  std::vector<int64_t> shape;
};

struct Program {
  const UOp* root = nullptr;
  // The Buffer node of each input the program uses (one per name, however often it appears).
  std::map<std::string, const UOp*> buffers;
};

// Parses `text` and builds it in `g`. Names must appear in `inputs`. Throws sn::Error(InvalidArg)
// on syntax errors (with the offset) and whatever the tensor front throws for bad programs.
// Inputs live on `device` (where the program will be compiled).
Program build_program(Graph& g, std::string_view text, const std::map<std::string, InputSpec>& inputs,
                      const std::string& device = "CPU");

}  // namespace sn::oracle
