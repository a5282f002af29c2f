// Package sinter is the Go binding of Sinter, a tinygrad-style tensor compiler behind a C ABI
// (libsinter.so). It is hand-written cgo over capi/include/sinter/sinter.h.
//
// Building: with the library built in the checkout's build/ directory (or installed under /usr/local or
// /usr), `go test` and `go run` need no environment at all, and the programs they build find libsinter
// without LD_LIBRARY_PATH (link.go). A program in another module adds two lines to its go.mod:
//
//	require sinter v0.0.0
//	replace sinter => /path/to/sinter/bindings/go
//
// This module has no dependencies, so nothing is downloaded. A library elsewhere (another build directory,
// a prefix such as /opt/sinter) takes CGO_LDFLAGS="-L$DIR -Wl,-rpath,$DIR".
//
// Ownership: a Context or Graph owns a reference to its C object. Call Close when done; a finalizer is only
// a safety net for a forgotten Close. A *UOp belongs to its Graph and keeps it reachable; it needs no
// Close. UOps are hash-consed: building the same node twice returns the same *UOp, so == compares
// structure.
//
// Errors are *Error values carrying the C API's code and message (use errors.As).
//
// Functions (API version 5): Graph.NewFunction begins a reusable sub-graph; build its body from Function.Param,
// End it with the outputs and Call it any number of times (SetFlags(FunctionPrecompile) compiles it once for
// every call). Like a UOp it belongs to its Graph and needs no Close. UOp.Index, UOp.Slice and Graph.Binary are
// the spec's Index (gather along the leading axes), Slice (reinterpret storage) and Binary (constant bytes).
//
// DLPack: Buffer.ToDLPack exports a CPU buffer without copying, Device.FromDLPack imports a DLPack 1.x
// tensor (zero-copy when it is compact and writable), and AdoptDLPack and DLPack.Release hand tensors to and
// from other libraries. A *DLPack owns its tensor and calls the tensor's deleter exactly once.
//
// Goroutines: a Context may be shared freely. A Graph serializes its calls with a mutex, because the C
// API allows one thread at a time per graph; share it if you like, but parallel building needs one Graph
// per goroutine to actually run in parallel.
package sinter
