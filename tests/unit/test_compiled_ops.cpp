// ../shared/conformance/ops.jsonl compiled and run: every tensor program of the conformance set is
// built through the tensor front, compiled by the pipeline for the CPU device, run on buffers
// holding the case's inputs, and compared with numpy's output. Each failure is reported by name.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tests/oracle/program.h"
#include "tests/unit/test_pipeline_util.h"
#include "tests/util/json.h"
#include "tests/util/ops_case.h"

namespace sn {
namespace {

using oracle::Array;
using testutil::Json;

using testutil::json_tensor;
using testutil::mismatch;

TEST(CompiledOps, EveryConformanceCaseCompilesAndMatchesNumpy) {
  auto cases = testutil::read_jsonl(SN_SHARED_DIR "/conformance/ops.jsonl");
  ASSERT_EQ(cases.size(), 118u);
  auto dev = testrt::runtime().device("CPU");
  int passed = 0;
  for (const auto& [line, c] : cases) {
    std::string name = c.has("name") ? c["name"].as_string() : "line " + std::to_string(line);
    try {
      Graph g;
      std::map<std::string, oracle::InputSpec> specs;
      std::map<std::string, Array> data;
      for (const auto& [input_name, t] : c["inputs"].as_object()) {
        Array a = json_tensor(t);
        specs[input_name] = oracle::InputSpec{a.dtype, a.shape};
        data.emplace(input_name, std::move(a));
      }
      oracle::Program prog = oracle::build_program(g, c["program"].as_string(), specs);
      // Inputs in the order the program names them (sorted by name), each with the case's shape.
      CompileOptions opts;
      std::vector<std::string> names;
      for (const auto& [input_name, buf] : prog.buffers) {
        names.push_back(input_name);
        opts.inputs.push_back(buf);
      }
      auto p = compile_program(testrt::runtime(), g, std::vector<const UOp*>{prog.root}, dev, opts);
      std::vector<std::shared_ptr<Buffer>> ins, outs;
      for (size_t i = 0; i < names.size(); i++) {
        Array a = data.at(names[i]);
        a.shape = p->inputs[i].shape;  // the program views the flat Buffer with the case's shape
        ins.push_back(testrt::to_buffer(dev, a));
      }
      outs.push_back(p->allocate_output(0));
      p->run(ins, outs);
      Array got = testrt::from_buffer(*outs[0]);
      std::string why = mismatch(got, json_tensor(c["output"]), c["rtol"].as_double(), c["atol"].as_double());
      if (why.empty())
        passed++;
      else
        ADD_FAILURE() << name << ": " << why << "\n  program: " << c["program"].as_string();
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": threw: " << e.what() << "\n  program: " << c["program"].as_string();
    }
  }
  EXPECT_EQ(passed, int(cases.size()));
}

}  // namespace
}  // namespace sn
#endif
