// Input-independent launches run once, at compile time.
#pragma once
#include <span>
#include <string_view>

#include "core/runtime/program.h"

namespace sn {

// Runs, once and now, every launch of `p` whose results depend on neither the program's inputs nor its variables
// (the arange argmax compares against, a random tensor of a fixed seed, a table built from constants), and turns
// the intermediates they write into constants of the program, so no run repeats them. Nothing runs on a device
// that cannot run kernels (a compile-only device keeps every launch). Returns the number of launches it removed.
//
// `constants`: the bytes of each Constant buffer (by buffer index; empty for the others), alive for the call (the
// graph's Binary data). A constant gets device storage filled with them, except one that only the removed
// launches read, on a device whose kernels read host memory: they read it where it is (packing a program's
// weights, which no run reads as given, copied all of them first: ResNet-18's 45 MB, page faults and all).
size_t precompute_constants(Program& p, std::span<const std::string_view> constants);

}  // namespace sn
