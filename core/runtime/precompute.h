// Input-independent launches run once, at compile time.
#pragma once
#include "core/runtime/program.h"

namespace sn {

// Runs, once and now, every launch of `p` whose results depend on neither the program's inputs nor its variables
// (the arange argmax compares against, a random tensor of a fixed seed, a table built from constants), and turns
// the intermediates they write into constants of the program, so no run repeats them. Nothing changes on a device
// that cannot run kernels (a compile-only device keeps every launch). A constant that only the removed launches
// read loses its storage. Returns the number of launches it removed.
size_t precompute_constants(Program& p);

}  // namespace sn
