package sinter

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// Gradients (API version 5): d/dx and d/dw of sum(x*x*w + x*detach(x)) against hand-computed values.
func TestGradient(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	g, _ := ctx.NewGraph()
	defer g.Close()
	x := must(g.Input(Float64, []int64{4}, ""))
	w := must(g.Input(Float64, []int64{4}, ""))
	loss := must(must(must(must(x.Mul(x)).Mul(w)).Add(must(x.Mul(must(x.Detach()))))).Sum(0))
	grads, err := g.Gradient(loss, x, w)
	if err != nil || len(grads) != 2 {
		t.Fatal(grads, err)
	}
	p, err := g.Compile(grads, dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	xv, wv := []float64{1, -2, 0.5, 3}, []float64{0.25, 1, -1, 2}
	outs, err := p.RunAlloc(buffer(t, dev, xv, 4), buffer(t, dev, wv, 4))
	if err != nil {
		t.Fatal(err)
	}
	dx, dw := make([]float64, 4), make([]float64, 4)
	if err := CopyOut(outs[0], dx); err != nil {
		t.Fatal(err)
	}
	if err := CopyOut(outs[1], dw); err != nil {
		t.Fatal(err)
	}
	for i := range xv {
		if math.Abs(dx[i]-(2*xv[i]*wv[i]+xv[i])) > 1e-12 || math.Abs(dw[i]-xv[i]*xv[i]) > 1e-12 {
			t.Fatalf("element %d: dx %v dw %v", i, dx[i], dw[i])
		}
	}
	if _, err := g.Gradient(x, x); err == nil || !strings.Contains(err.Error(), "one element") {
		t.Fatalf("a loss of 4 elements: %v", err)
	}
}

// In-place updates: the output reads the old value, the buffer gets the new one; an effects-only program.
func TestAssign(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	g, _ := ctx.NewGraph()
	defer g.Close()
	w := must(g.Input(Float32, []int64{3}, ""))
	update := must(g.Assign(w, must(w.Add(w))))
	opts := DefaultCompileOptions()
	opts.Effects = []UOp{update}
	p, err := g.Compile([]UOp{must(w.Sum(0))}, dev, &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	buf := buffer(t, dev, []float32{1, 2, 3}, 3)
	outs, err := p.RunAlloc(buf)
	if err != nil {
		t.Fatal(err)
	}
	sum, got := make([]float32, 1), make([]float32, 3)
	if err := CopyOut(outs[0], sum); err != nil {
		t.Fatal(err)
	}
	if err := CopyOut(buf, got); err != nil {
		t.Fatal(err)
	}
	if sum[0] != 6 || !reflect.DeepEqual(got, []float32{2, 4, 6}) {
		t.Fatalf("sum %v, buffer %v", sum, got)
	}
	only, err := g.Compile(nil, dev, &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer only.Close()
	if err := only.Run([]*Buffer{buf}, nil); err != nil {
		t.Fatal(err)
	}
	if err := CopyOut(buf, got); err != nil || !reflect.DeepEqual(got, []float32{4, 8, 12}) {
		t.Fatalf("buffer %v (%v)", got, err)
	}
	if _, err := g.Assign(must(w.Add(w)), w); err == nil || !strings.Contains(err.Error(), "input tensor") {
		t.Fatalf("assign to a non-input: %v", err)
	}
}

// Error strings name the library once ("sinter: sinter: CopyIn ..." was a new user's report).
func TestErrorsNameTheLibraryOnce(t *testing.T) {
	_, dev := cpu(t)
	b := buffer(t, dev, []float32{1, 2, 3}, 3)
	for _, err := range []error{CopyIn(b, []float64{1, 2, 3}), b.CopyFrom(nil)} {
		if err == nil || strings.Count(err.Error(), "sinter:") != 1 {
			t.Fatalf("error %q", err)
		}
	}
}
