// ../shared/conformance/ops.jsonl through the scheduler: every program is scheduled into kernels,
// the kernels are run by the kernel-IR interpreter, and the result must match numpy's output.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/schedule/schedule.h"
#include "tests/oracle/interp.h"
#include "tests/oracle/kernel_interp.h"
#include "tests/oracle/program.h"
#include "tests/util/json.h"
#include "tests/util/ops_case.h"

namespace sn::oracle {
namespace {

using testutil::Json;

using testutil::json_tensor;
using testutil::mismatch;

TEST(ScheduleConformance, EveryCaseMatchesNumpyThroughKernels) {
  auto cases = testutil::read_jsonl(SN_SHARED_DIR "/conformance/ops.jsonl");
  ASSERT_FALSE(cases.empty());
  int passed = 0;
  size_t kernels = 0;
  for (const auto& [line, c] : cases) {
    std::string name = c.has("name") ? c["name"].as_string() : "line " + std::to_string(line);
    try {
      Graph g;
      std::map<std::string, InputSpec> specs;
      std::map<std::string, Array> data;
      for (const auto& [input_name, t] : c["inputs"].as_object()) {
        Array a = json_tensor(t);
        specs[input_name] = InputSpec{a.dtype, a.shape};
        data.emplace(input_name, std::move(a));
      }
      Program p = build_program(g, c["program"].as_string(), specs);
      std::vector<const UOp*> outs{p.root};
      Schedule s = schedule_graph(g, outs);
      kernels += s.kernels.size();
      std::vector<Array> inputs;
      for (const ScheduleBuffer& b : s.buffers) {
        if (b.kind != ScheduleBuffer::Kind::Input) continue;
        for (const auto& [input_name, buf] : p.buffers)
          if (buf == b.source) inputs.push_back(data.at(input_name));
      }
      Array got = run_schedule(s, inputs).at(0);
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
  EXPECT_GE(kernels, cases.size());  // every case stores at least its output
}

}  // namespace
}  // namespace sn::oracle
