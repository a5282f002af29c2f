// A plain interpreter of the kernel IR (core/schedule/schedule.h) over host arrays, to test the
// scheduler end to end without a compiler.
//
// Each Store is evaluated at every point of its loops (the Ranges it uses that no Reduce closes);
// a Reduce iterates its ranges; a gated Load whose gate is false gives its alt and touches no
// memory. Values follow the oracle's semantics (tests/oracle/interp.h): floats in double,
// rounded to the dtype after every op (a Reduce accumulates in double and rounds once); integers
// exact, wrapped to the dtype; index math exact with floor Idiv/Mod.
//
// It also checks the kernel-IR contract and throws sn::Error on a violation: an op outside the
// kernel IR, a Param whose dtype or size differs from its array, two Ranges with one id, a load
// or store out of bounds, an element stored twice by one kernel, or (run_schedule) an output or
// intermediate element that no kernel stored.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/schedule/schedule.h"
#include "tests/oracle/interp.h"

namespace sn::oracle {

// Values of the DefineVars a kernel uses, by name.
using VarValues = std::map<std::string, int64_t>;

// Runs one kernel (a Sink root) over the flat arrays its Param slots name. When `stored` is given,
// stored[slot][i] is set for every element the kernel writes (and must be 0 before).
void run_kernel(const UOp* ast, std::span<Array* const> slots, const VarValues& vars = {},
                std::vector<std::vector<uint8_t>>* stored = nullptr);

// Runs the schedule's kernels in launch order. inputs[k] holds the data of input number k (any
// shape with the Buffer's element count and dtype). Returns one array per output, shaped like its
// output node (flat, of the allocated size, when the shape is symbolic).
std::vector<Array> run_schedule(const Schedule& s, const std::vector<Array>& inputs, const VarValues& vars = {});

}  // namespace sn::oracle
