// ../shared/conformance/ops.jsonl compiled and run: every tensor program of the conformance set is
// built through the tensor front, compiled by the pipeline for the CPU device, run on buffers
// holding the case's inputs, and compared with numpy's output. Each failure is reported by name.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/test_pipeline_util.h"
#include "tests/util/ops_case.h"

namespace sn {
namespace {

TEST(CompiledOps, EveryConformanceCaseCompilesAndMatchesNumpy) {
  auto dev = testrt::runtime().device("CPU");
  int passed = testutil::run_ops_cases([&](Graph& g, const testutil::OpsCase& c) {
    // Inputs in the order the program names them (sorted by name), each with the case's shape.
    CompileOptions opts;
    std::vector<std::string> names;
    for (const auto& [input_name, buf] : c.program.buffers) {
      names.push_back(input_name);
      opts.inputs.push_back(buf);
    }
    auto p = compile_program(testrt::runtime(), g, std::vector<const UOp*>{c.program.root}, dev, opts);
    std::vector<std::shared_ptr<Buffer>> ins, outs;
    for (size_t i = 0; i < names.size(); i++) {
      oracle::Array a = c.data.at(names[i]);
      a.shape = p->inputs[i].shape;  // the program views the flat Buffer with the case's shape
      ins.push_back(testrt::to_buffer(dev, a));
    }
    outs.push_back(p->allocate_output(0));
    p->run(ins, outs);
    return testrt::from_buffer(*outs[0]);
  });
  EXPECT_EQ(passed, testutil::kOpsCases);
}

}  // namespace
}  // namespace sn
#endif
