// ../shared/conformance/ops.jsonl through the scheduler: every program is scheduled into kernels,
// the kernels are run by the kernel-IR interpreter, and the result must match numpy's output.
#include <gtest/gtest.h>

#include <vector>

#include "core/ir/graph.h"
#include "core/schedule/schedule.h"
#include "tests/oracle/interp.h"
#include "tests/oracle/kernel_interp.h"
#include "tests/util/ops_case.h"

namespace sn::oracle {
namespace {

TEST(ScheduleConformance, EveryCaseMatchesNumpyThroughKernels) {
  size_t kernels = 0;
  int passed = testutil::run_ops_cases([&](Graph& g, const testutil::OpsCase& c) {
    Schedule s = schedule_graph(g, std::vector<const UOp*>{c.program.root});
    kernels += s.kernels.size();
    std::vector<Array> inputs;
    for (const ScheduleBuffer& b : s.buffers) {
      if (b.kind != ScheduleBuffer::Kind::Input) continue;
      for (const auto& [input_name, buf] : c.program.buffers)
        if (buf == b.source) inputs.push_back(c.data.at(input_name));
    }
    return run_schedule(s, inputs).at(0);
  });
  EXPECT_EQ(passed, testutil::kOpsCases);
  EXPECT_GE(kernels, size_t(testutil::kOpsCases));  // every case stores at least its output
}

}  // namespace
}  // namespace sn::oracle
