// ../shared/conformance/ops.jsonl compiled and run: every tensor program of the conformance set is
// built through the tensor front, compiled by the pipeline for the CPU device, run on buffers
// holding the case's inputs, and compared with numpy's output. Each failure is reported by name.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/test_pipeline_util.h"
#include "tests/util/ops_case.h"

namespace sn {
namespace {

// How many kernels used each part of the GPU model.
struct FeatureCounts {
  int kernels = 0, local_axes = 0, group_reduce = 0, local_memory = 0, barriers = 0, gated = 0;
  void add(const KernelFeatures& f) {
    kernels++;
    local_axes += f.local_axes;
    group_reduce += f.group_reduce;
    local_memory += f.local_bytes > 0;
    barriers += f.barriers > 0;
    gated += f.gated_blocks > 0;
  }
};

// Every ops.jsonl case compiled for `device`, run, and compared with numpy.
FeatureCounts run_conformance(const std::string& device) {
  auto dev = testrt::runtime().device(device);
  FeatureCounts used;
  int passed = testutil::run_ops_cases(
      [&](Graph& g, const testutil::OpsCase& c) {
        // Inputs in the order the program names them (sorted by name), each with the case's shape.
        CompileOptions opts;
        std::vector<std::string> names;
        for (const auto& [input_name, buf] : c.program.buffers) {
          names.push_back(input_name);
          opts.inputs.push_back(buf);
        }
        auto p = compile_program(testrt::runtime(), g, std::vector<const UOp*>{c.program.root}, dev, opts);
        for (const Launch& l : p->launches) used.add(l.kernel->features);
        std::vector<std::shared_ptr<Buffer>> ins, outs;
        for (size_t i = 0; i < names.size(); i++) {
          oracle::Array a = c.data.at(names[i]);
          a.shape = p->inputs[i].shape;  // the program views the flat Buffer with the case's shape
          ins.push_back(testrt::to_buffer(dev, a));
        }
        outs.push_back(p->allocate_output(0));
        p->run(ins, outs);
        return testrt::from_buffer(*outs[0]);
      },
      device);
  EXPECT_EQ(passed, testutil::kOpsCases) << device;
  std::printf("conformance on %s: %d/%d cases pass; %d kernels\n", device.c_str(), passed, testutil::kOpsCases,
              used.kernels);
  return used;
}

TEST(CompiledOps, EveryConformanceCaseCompilesAndMatchesNumpy) { run_conformance("CPU"); }

// The same cases through OpenCL: GPU-style kernels (work-groups, local memory, barriers) run for real
// on pocl. CI requires the device (SN_REQUIRE_CL=1); elsewhere the test says why it skipped.
TEST(CompiledOps, EveryConformanceCaseRunsOnOpenCL) {
  SN_SKIP_WITHOUT_DEVICE("CL", testrt::cl_required());
  FeatureCounts used = run_conformance("CL");
  std::printf(
      "CL kernels: %d with LOCAL axes, %d with GROUP_REDUCE, %d with local memory, %d with barriers, "
      "%d with gated stores (If)\n",
      used.local_axes, used.group_reduce, used.local_memory, used.barriers, used.gated);
  EXPECT_GT(used.local_axes, 0);
  EXPECT_GT(used.group_reduce, 0);
  EXPECT_GT(used.barriers, 0);
}

// The same cases on an NVIDIA GPU through the CUDA Driver API (PTX from LLVM's NVPTX target). Skips,
// saying why, where there is no driver or GPU (SN_REQUIRE_CUDA=1 makes that a failure).
TEST(CompiledOps, EveryConformanceCaseRunsOnCuda) {
  SN_SKIP_WITHOUT_DEVICE("CUDA", testrt::cuda_required());
  FeatureCounts used = run_conformance("CUDA");
  EXPECT_GT(used.local_axes, 0);
}

TEST(CompiledOps, EveryConformanceCaseRunsOnAmd) {
  SN_SKIP_WITHOUT_DEVICE("AMD", testrt::amd_required());
  FeatureCounts used = run_conformance("AMD");
  EXPECT_GT(used.local_axes, 0);
}

}  // namespace
}  // namespace sn
#endif
