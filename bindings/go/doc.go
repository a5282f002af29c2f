// Package sinter is the Go binding of Sinter, a tinygrad-style tensor compiler behind a C ABI
// (libsinter.so). It is hand-written cgo over capi/include/sinter/sinter.h.
//
// Building: the package finds the library through pkg-config (`#cgo pkg-config: sinter`), so an installed
// Sinter needs nothing else; for a build tree, point PKG_CONFIG_PATH at the directory with the
// sinter.pc that CMake generates for it (build/bindings/go/pkgconfig).
//
// Ownership: a Context or Graph owns a reference to its C object. Call Close when done; a finalizer is only
// a safety net for a forgotten Close. A *UOp belongs to its Graph and keeps it reachable; it needs no
// Close. UOps are hash-consed: building the same node twice returns the same *UOp, so == compares
// structure.
//
// Errors are *Error values carrying the C API's code and message (use errors.As).
//
// Goroutines: a Context may be shared freely. A Graph serializes its calls with a mutex, because the C
// API allows one thread at a time per graph; share it if you like, but parallel building needs one Graph
// per goroutine to actually run in parallel.
package sinter
