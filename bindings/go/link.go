package sinter

// Where cgo finds Sinter, with nothing set in the environment:
//   - sinter.h from this checkout (capi/include), the header this package is written against;
//   - libsinter from the checkout's build tree, build/ (cmake -S . -B build), with an rpath to it so that
//     programs run without LD_LIBRARY_PATH; failing that, from the linker's default path (a Sinter
//     installed under /usr/local or /usr, found at run time once ldconfig has run).
// Flags from the environment come before these, so a library elsewhere (another build directory, a
// prefix such as /opt/sinter) takes one variable:
//   CGO_LDFLAGS="-L$DIR -Wl,-rpath,$DIR"

/*
#cgo CFLAGS: -I${SRCDIR}/../../capi/include
#cgo LDFLAGS: -L${SRCDIR}/../../build -Wl,-rpath,${SRCDIR}/../../build -lsinter
*/
import "C"
