package sinter

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// Kernel opts as data, BEAM search and the disk-cache switch (API version 6).

var optsLine = regexp.MustCompile(`^[0-9a-f]{16}:`)

// rowSumOfSquares builds sum(x*x, axis 1) of an (8,64) f32 input and returns it with its input data and the
// hand-computed sums (exact in float32: the values are small integers).
func rowSumOfSquares(t *testing.T, g *Graph) (UOp, []float32, []float32) {
	t.Helper()
	must := musts(t)
	x := must(g.Input(Float32, []int64{8, 64}, ""))
	y := must(must(x.Mul(x)).Sum(1))
	data := make([]float32, 512)
	for i := range data {
		data[i] = float32((i*7)%13) - 6
	}
	want := make([]float32, 8)
	for r := 0; r < 8; r++ {
		for k := 0; k < 64; k++ {
			want[r] += data[r*64+k] * data[r*64+k]
		}
	}
	return y, data, want
}

func compileOpts(t *testing.T, g *Graph, y UOp, dev *Device, opts CompileOptions) *Program {
	t.Helper()
	p, err := g.Compile([]UOp{y}, dev, &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func runRows(t *testing.T, p *Program, dev *Device, data []float32) []float32 {
	t.Helper()
	outs, err := p.RunAlloc(buffer(t, dev, data, 8, 64))
	if err != nil {
		t.Fatal(err)
	}
	defer outs[0].Close()
	got, err := ToSlice[float32](outs[0])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func kernelOpts(t *testing.T, p *Program, i int) string {
	t.Helper()
	line, err := p.KernelOpts(i)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func TestKernelOptsRoundTrip(t *testing.T) {
	ctx, dev := cpu(t)
	g, _ := ctx.NewGraph()
	defer g.Close()
	y, data, want := rowSumOfSquares(t, g)

	heuristic := DefaultCompileOptions()
	heuristic.Beam = 0
	p := compileOpts(t, g, y, dev, heuristic)
	if n := len(p.KernelNames()); n != 1 {
		t.Fatalf("%d kernels", n)
	}
	line := kernelOpts(t, p, 0)
	if !optsLine.MatchString(line) || !strings.Contains(line[17:], "UNROLL(") {
		t.Fatalf("kernel opts %q: want '<16 hex digits>: ...UNROLL(...'", line)
	}
	if got := runRows(t, p, dev, data); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if _, err := p.KernelOpts(1); !errors.Is(err, &Error{Code: CodeInvalidArg}) {
		t.Fatalf("kernel 1 of 1: %v", err)
	}

	// Forced back (and not served from the program cache): the identical line, the same numbers.
	forced := heuristic
	forced.UseCache = false
	forced.KernelOpts = []string{line}
	q := compileOpts(t, g, y, dev, forced)
	if got := kernelOpts(t, q, 0); got != line {
		t.Fatalf("forced %q, got %q", line, got)
	}
	if got := runRows(t, q, dev, data); !reflect.DeepEqual(got, want) {
		t.Fatalf("forced: got %v want %v", got, want)
	}

	// Nothing after the colon: no opts at all for that kernel, still the right numbers.
	forced.KernelOpts = []string{line[:17]}
	r := compileOpts(t, g, y, dev, forced)
	if got := kernelOpts(t, r, 0); got != line[:17] {
		t.Fatalf("no opts: got %q", got)
	}
	if got := runRows(t, r, dev, data); !reflect.DeepEqual(got, want) {
		t.Fatalf("no opts: got %v want %v", got, want)
	}
}

func TestBeamSearch(t *testing.T) {
	ctx, dev := cpu(t)
	if err := ctx.SetDiskCache(false); err != nil { // search here, not a result another test kept on disk
		t.Fatal(err)
	}
	g, _ := ctx.NewGraph()
	defer g.Close()
	y, data, want := rowSumOfSquares(t, g)
	opts := DefaultCompileOptions()
	opts.Beam = 2
	p := compileOpts(t, g, y, dev, opts)
	if line := kernelOpts(t, p, 0); !optsLine.MatchString(line) {
		t.Fatalf("kernel opts %q", line)
	}
	if got := runRows(t, p, dev, data); !reflect.DeepEqual(got, want) {
		t.Fatalf("beam 2: got %v want %v", got, want)
	}

	for _, beam := range []int{65, -2, 1 << 40} {
		opts.Beam = beam
		_, err := g.Compile([]UOp{y}, dev, &opts)
		var se *Error
		if !errors.As(err, &se) || se.Code != CodeInvalidArg || !strings.Contains(se.Message, "eam") {
			t.Fatalf("beam %d: %v", beam, err)
		}
	}
}

func TestKernelOptsErrors(t *testing.T) {
	ctx, dev := cpu(t)
	g, _ := ctx.NewGraph()
	defer g.Close()
	y, _, _ := rowSumOfSquares(t, g)
	for _, c := range []struct{ line, msg string }{
		{"not a line", "<kernel id>: <opts>"},
		{"00000000000000ab: UPCAST(0,4)", "does not have"},
		{"00000000000000ab: UPCAST(0,4) WIDEN(1)", "'WIDEN(1)' is not an opt"},
		{"00000000000000ab:\x00 UPCAST(0,4)", "NUL byte"}, // C would cut it short
	} {
		opts := DefaultCompileOptions()
		opts.KernelOpts = []string{c.line}
		_, err := g.Compile([]UOp{y}, dev, &opts)
		var se *Error
		if !errors.As(err, &se) || se.Code != CodeInvalidArg || !strings.Contains(se.Message, c.msg) {
			t.Fatalf("%q: %v, want INVALID_ARG containing %q", c.line, err, c.msg)
		}
	}
}

func TestSetDiskCache(t *testing.T) {
	ctx, dev := cpu(t)
	if err := ctx.SetDiskCache(false); err != nil {
		t.Fatal(err)
	}
	g, _ := ctx.NewGraph()
	defer g.Close()
	y, data, want := rowSumOfSquares(t, g)
	opts := DefaultCompileOptions()
	opts.UseCache = false
	if got := runRows(t, compileOpts(t, g, y, dev, opts), dev, data); !reflect.DeepEqual(got, want) {
		t.Fatalf("disk cache off: got %v want %v", got, want)
	}
	if err := ctx.SetDiskCache(true); err != nil {
		t.Fatal(err)
	}
	if got := runRows(t, compileOpts(t, g, y, dev, opts), dev, data); !reflect.DeepEqual(got, want) {
		t.Fatalf("disk cache on: got %v want %v", got, want)
	}
	ctx.Close()
	if err := ctx.SetDiskCache(true); err != ErrClosed {
		t.Fatalf("after Close: %v", err)
	}
}
