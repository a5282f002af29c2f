package sinter

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// graphIn is a new graph of ctx, closed when the test ends.
func graphIn(t *testing.T, ctx *Context) *Graph {
	t.Helper()
	g, err := ctx.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// runF32 compiles outputs of g for dev, runs the program on inputs and returns the float32 outputs.
func runF32(t *testing.T, g *Graph, dev *Device, outputs []UOp, inputs ...*Buffer) [][]float32 {
	t.Helper()
	p, err := g.Compile(outputs, dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	outs, err := p.RunAlloc(inputs...)
	if err != nil {
		t.Fatal(err)
	}
	var res [][]float32
	for _, o := range outs {
		v, err := ToSlice[float32](o)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, v)
		o.Close()
	}
	return res
}

func relu32(v float32) float32 { return float32(math.Max(float64(v), 0)) }

// Functions (API version 5): relu(a + b) called twice on different arguments.
func TestFunctionCalledTwice(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	g := graphIn(t, ctx)
	f, err := g.NewFunction(FunctionParam{Float32, []int64{4}}, FunctionParam{Float32, []int64{4}})
	if err != nil {
		t.Fatal(err)
	}
	if f.NumParams() != 2 || f.NumOutputs() != 0 {
		t.Fatalf("params %d outputs %d", f.NumParams(), f.NumOutputs())
	}
	ps, err := f.Params()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.End(must(must(ps[0].Add(ps[1])).Relu())); err != nil {
		t.Fatal(err)
	}
	if f.NumOutputs() != 1 {
		t.Fatalf("outputs %d", f.NumOutputs())
	}
	a := must(g.Input(Float32, []int64{4}, ""))
	b := must(g.Input(Float32, []int64{4}, ""))
	c := must(g.Input(Float32, []int64{4}, ""))
	y1, err := f.Call(a, b)
	if err != nil {
		t.Fatal(err)
	}
	y2, err := f.Call(c, a)
	if err != nil {
		t.Fatal(err)
	}
	av, bv, cv := []float32{1, -2, 3, -4}, []float32{0.5, 1, -5, 2}, []float32{-1, 4, 1, 5}
	r := runF32(t, g, dev, []UOp{y1[0], y2[0]}, buffer(t, dev, av, 4), buffer(t, dev, bv, 4), buffer(t, dev, cv, 4))
	if !reflect.DeepEqual(r[0], []float32{1.5, 0, 0, 0}) || !reflect.DeepEqual(r[1], []float32{0, 2, 4, 1}) {
		t.Fatalf("got %v", r)
	}
	for i := range av {
		if r[0][i] != relu32(av[i]+bv[i]) || r[1][i] != relu32(cv[i]+av[i]) {
			t.Fatalf("element %d: %v %v", i, r[0][i], r[1][i])
		}
	}
}

// A precompiled function with two outputs, called three times (once on its own results).
func TestFunctionPrecompiledThreeCalls(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	g := graphIn(t, ctx)
	f, err := g.NewFunction(FunctionParam{Float32, []int64{2, 2}}, FunctionParam{Float32, []int64{2, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SetFlags(FunctionPrecompile); err != nil {
		t.Fatal(err)
	}
	x, y := must(f.Param(0)), must(f.Param(1))
	if err := f.End(must(must(x.Mul(y)).AddScalar(1)), must(x.Sub(y))); err != nil { // (x*y + 1, x - y)
		t.Fatal(err)
	}
	a := must(g.Input(Float32, []int64{2, 2}, ""))
	b := must(g.Input(Float32, []int64{2, 2}, ""))
	r1, err := f.Call(a, b)
	if err != nil || len(r1) != 2 {
		t.Fatal(r1, err)
	}
	r2, err := f.Call(r1[0], r1[1])
	if err != nil {
		t.Fatal(err)
	}
	r3, err := f.Call(b, a)
	if err != nil {
		t.Fatal(err)
	}
	av, bv := []float32{1, 2, -3, 0.5}, []float32{2, -1, 4, 4}
	r := runF32(t, g, dev, []UOp{r2[0], r2[1], r3[1]}, buffer(t, dev, av, 2, 2), buffer(t, dev, bv, 2, 2))
	for i := range av {
		s, d := av[i]*bv[i]+1, av[i]-bv[i]
		if r[0][i] != s*d+1 || r[1][i] != s-d || r[2][i] != bv[i]-av[i] {
			t.Fatalf("element %d: %v %v %v", i, r[0][i], r[1][i], r[2][i])
		}
	}
	// a=1, b=2 -> (3, -1) -> (-2, 4); b - a = 1
	if r[0][0] != -2 || r[1][0] != 4 || r[2][0] != 1 {
		t.Fatalf("first elements %v %v %v", r[0][0], r[1][0], r[2][0])
	}
}

// Function errors carry the C API's code and message.
func TestFunctionErrors(t *testing.T) {
	must := musts(t)
	ctx, _ := cpu(t)
	g := graphIn(t, ctx)
	f, err := g.NewFunction(FunctionParam{Float32, []int64{4}}, FunctionParam{Float32, []int64{4}})
	if err != nil {
		t.Fatal(err)
	}
	a := must(g.Input(Float32, []int64{4}, ""))
	wrong := must(g.Input(Float32, []int64{5}, ""))
	if _, err := f.Call(a, a); err == nil || !strings.Contains(err.Error(), "no body yet") {
		t.Fatalf("call before End: %v", err)
	}
	if err := f.End(must(must(f.Param(0)).Mul(must(f.Param(1))))); err != nil {
		t.Fatal(err)
	}
	_, err = f.Call(a, wrong)
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeInvalidArg || !strings.HasPrefix(se.Message, "sn_function_call: ") ||
		!strings.Contains(se.Message, "argument 1 is float32 (5,)") {
		t.Fatalf("wrong shape: %v", err)
	}
	if _, err := f.Call(a); err == nil || !strings.Contains(err.Error(), "takes 2 arguments") {
		t.Fatalf("one argument: %v", err)
	}
	if err := f.End(a); err == nil || !strings.Contains(err.Error(), "ended already") {
		t.Fatalf("second End: %v", err)
	}
	if _, err := f.Param(2); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("Param(2): %v", err)
	}
	err = f.SetFlags(8)
	if !errors.Is(err, &Error{Code: CodeInvalidArg}) || !strings.Contains(err.Error(), "unknown flags") {
		t.Fatalf("flags 8: %v", err)
	}
	other := graphIn(t, ctx)
	if _, err := f.Call(a, must(other.Input(Float32, []int64{4}, ""))); err == nil ||
		!strings.Contains(err.Error(), "another graph") {
		t.Fatalf("a node of another graph: %v", err)
	}
	g.Close()
	if _, err := f.Call(a, a); err != ErrClosed {
		t.Fatalf("after Close: %v", err)
	}
}

// Index gathers rows of a 2-D tensor by an int32 index tensor; an index outside the axis reads zeros.
func TestIndex(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	g := graphIn(t, ctx)
	table := must(g.Input(Float32, []int64{3, 2}, ""))
	idx := must(g.Input(Int32, []int64{4}, ""))
	rows := must(table.Index(idx))
	p, err := g.Compile([]UOp{rows}, dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tv, ids := []float32{10, 11, 20, 21, 30, 31}, []int32{2, 0, 5, 1}
	outs, err := p.RunAlloc(buffer(t, dev, tv, 3, 2), buffer(t, dev, ids, 4))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := ToSlice[float32](outs[0])
	if want := []float32{30, 31, 10, 11, 0, 0, 20, 21}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := table.Index(table); err == nil || !strings.Contains(err.Error(), "integer") {
		t.Fatalf("float indices: %v", err)
	}
}

// Slice reinterprets a tensor's storage: f32 values at an offset, and one value's bits as int32.
func TestSlice(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	g := graphIn(t, ctx)
	table := must(g.Input(Float32, []int64{3, 2}, ""))
	two := must(table.Slice(3, 2, Float32))
	bits := must(table.Slice(1, 1, Int32))
	p, err := g.Compile([]UOp{two, bits}, dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	outs, err := p.RunAlloc(buffer(t, dev, []float32{10, 11, 20, 21, 30, 31}, 3, 2))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := ToSlice[float32](outs[0])
	i, _ := ToSlice[int32](outs[1])
	if !reflect.DeepEqual(f, []float32{21, 30}) || !reflect.DeepEqual(i, []int32{0x41300000}) ||
		math.Float32bits(11) != 0x41300000 {
		t.Fatalf("got %v %x", f, i)
	}
	_, err = table.Slice(5, 2, Float32)
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeInvalidArg || !strings.HasPrefix(se.Message, "sn_tensor_slice: ") ||
		!strings.Contains(se.Message, "run past") {
		t.Fatalf("past the end: %v", err)
	}
}

// Binary: constant bytes viewed as f32 by Bitcast and by Slice.
func TestBinary(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	g := graphIn(t, ctx)
	var data []byte
	for _, v := range []float32{0.5, -4, 7.25} {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
	}
	bin := must(g.Binary(data))
	if shape, _ := bin.StaticShape(); bin.DType() != Uint8 || !reflect.DeepEqual(shape, []int64{12}) {
		t.Fatalf("%v %v", bin.DType(), shape)
	}
	x := must(g.Input(Float32, []int64{3}, ""))
	scaled := must(x.Mul(must(bin.Bitcast(Float32))))
	tail := must(bin.Slice(4, 2, Float32))
	r := runF32(t, g, dev, []UOp{scaled, tail}, buffer(t, dev, []float32{2, 3, -1}, 3))
	if !reflect.DeepEqual(r[0], []float32{1, -12, -7.25}) || !reflect.DeepEqual(r[1], []float32{-4, 7.25}) {
		t.Fatalf("got %v", r)
	}
	if _, err := bin.Slice(8, 2, Float32); err == nil || !strings.Contains(err.Error(), "run past") {
		t.Fatalf("past the end: %v", err)
	}
}

// Stack along a new first and last axis.
func TestStackValues(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	g := graphIn(t, ctx)
	a := must(g.Input(Float32, []int64{3}, ""))
	b := must(g.Input(Float32, []int64{3}, ""))
	s0, s1 := must(g.Stack(0, a, b)), must(g.Stack(-1, a, b))
	r := runF32(t, g, dev, []UOp{s0, s1}, buffer(t, dev, []float32{1, 2, 3}, 3), buffer(t, dev, []float32{4, 5, 6}, 3))
	if !reflect.DeepEqual(r[0], []float32{1, 2, 3, 4, 5, 6}) || !reflect.DeepEqual(r[1], []float32{1, 4, 2, 5, 3, 6}) {
		t.Fatalf("got %v", r)
	}
	if _, err := g.Stack(2, a, b); !errors.Is(err, &Error{Code: CodeInvalidArg}) {
		t.Fatalf("axis 2: %v", err)
	}
}
