package sinter

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func newGraph(t *testing.T) *Graph {
	t.Helper()
	ctx, err := NewContext()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close() // the graph keeps the C context alive
	g, err := ctx.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// musts returns a helper that unwraps (UOp, error) results, failing t on an error.
func musts(t *testing.T) func(UOp, error) UOp {
	return func(u UOp, err error) UOp {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
}

func matrix(t *testing.T, g *Graph, rows, cols int64) UOp {
	must := musts(t)
	t.Helper()
	b := must(g.Buffer(Float32, rows*cols, "CPU"))
	return must(b.Reshape(rows, cols))
}

func TestVersion(t *testing.T) {
	if VersionNumber() != HeaderVersion {
		t.Fatalf("library %d, header %d", VersionNumber(), HeaderVersion)
	}
	if !strings.HasPrefix(Version(), "0.") {
		t.Fatalf("version %q", Version())
	}
}

func TestBuildAndQuery(t *testing.T) {
	must := musts(t)
	g := newGraph(t)
	a, b := matrix(t, g, 2, 3), matrix(t, g, 2, 3)
	sum := must(a.Add(b))
	y := must(sum.MulScalar(2))
	if y.Op() != OpMul || y.DType() != Float32 {
		t.Fatalf("got %v %v", y.Op(), y.DType())
	}
	r := must(y.Sum(1))
	shape, err := r.StaticShape()
	if err != nil || !reflect.DeepEqual(shape, []int64{2, 1}) {
		t.Fatalf("shape %v, %v", shape, err)
	}
	arg, err := r.Arg()
	if err != nil || arg.Kind != ArgReduce || arg.ReduceOp != OpAdd || !reflect.DeepEqual(arg.Ints, []int64{1}) {
		t.Fatalf("arg %+v, %v", arg, err)
	}
	if dev, err := r.Device(); err != nil || dev != "CPU" {
		t.Fatalf("device %q, %v", dev, err)
	}
	if srcs := r.Srcs(); len(srcs) != 1 || srcs[0] != y {
		t.Fatalf("srcs %v", srcs)
	}
	m := must(a.Lt(b))
	if m.DType() != Bool {
		t.Fatalf("comparison dtype %v", m.DType())
	}
	if w := must(m.Where(a, b)); w.DType() != Float32 {
		t.Fatalf("where dtype %v", w.DType())
	}
	if s := y.String(); !strings.Contains(s, "(mul ") {
		t.Fatalf("sexpr %q", s)
	}
	if tree, err := y.Tree(); err != nil || !strings.Contains(tree, "float32") {
		t.Fatalf("tree %q, %v", tree, err)
	}
	if dot, err := y.Dot(); err != nil || !strings.Contains(dot, "digraph") {
		t.Fatalf("dot %q, %v", dot, err)
	}
	if OpAdd.String() != "Add" || Float32.String() != "float32" || Op(9999).String() != "Op(9999)" {
		t.Fatalf("names %v %v %v", OpAdd, Float32, Op(9999))
	}
}

func TestHashConsingMakesEqualNodesEqualValues(t *testing.T) {
	must := musts(t)
	g := newGraph(t)
	x := must(g.ConstFloat(Float32, 1.5))
	n := g.NodeCount()
	if y := must(g.ConstFloat(Float32, 1.5)); x != y {
		t.Fatal("equal nodes must be == UOps")
	}
	if g.NodeCount() != n {
		t.Fatal("rebuilding a node must not grow the graph")
	}
	if z := must(g.ConstFloat(Float32, 2.5)); x == z {
		t.Fatal("different constants must differ")
	}
}

func TestGenericBuilderAndSymbolic(t *testing.T) {
	must := musts(t)
	g := newGraph(t)
	x := must(g.Param(0, Float32, []int64{2, 3, 4}, "CPU"))
	p := must(g.Node(OpPermute, Float32, []UOp{x}, Arg{Kind: ArgInts, Ints: []int64{2, 0, 1}}))
	if q := must(x.Permute(2, 0, 1)); p != q {
		t.Fatal("generic and typed builders must give the same node")
	}
	v := must(g.Var("n", 1, 16))
	if a, err := v.Arg(); err != nil || a.Kind != ArgVar || string(a.Str) != "n" || a.Min != 1 || a.Max != 16 {
		t.Fatalf("var arg %+v, %v", a, err)
	}
	// ((i*4)+3)//4 simplifies to i for i in [0, 9].
	i := must(g.Var("i", 0, 9))
	four := must(g.ConstInt(Index, 4))
	e := must(must(must(i.Mul(four)).AddScalar(3)).IDiv(four))
	if s := must(e.Simplify()); s != i {
		t.Fatalf("simplified to %v", s)
	}
	if lo, hi, clamped, err := e.MinMaxInt(); err != nil || lo != 0 || hi != 9 || clamped {
		t.Fatalf("bounds [%d,%d] %v %v", lo, hi, clamped, err)
	}
	// A shrink to a symbolic length reports the dimension as its uop.
	buf := must(g.Buffer(Float32, 8, ""))
	stack := func(u UOp) UOp { return must(g.Node(OpStack, Index, []UOp{u}, Arg{})) }
	zero := must(g.ConstInt(Index, 0))
	part := must(g.Node(OpShrink, Float32, []UOp{buf, stack(zero), stack(v)}, Arg{}))
	dims, err := part.Shape()
	if err != nil || len(dims) != 1 || dims[0].Sym != v {
		t.Fatalf("dims %v, %v", dims, err)
	}
	sink := must(g.Sink(buf))
	if dims, err := sink.Shape(); err != nil || dims != nil {
		t.Fatalf("void node shape %v, %v", dims, err)
	}
}

// ---- error paths ----

func TestShapeErrorCarriesTheCMessage(t *testing.T) {
	g := newGraph(t)
	a := matrix(t, g, 2, 3)
	_, err := a.Reshape(4, 2)
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("want *Error, got %T %v", err, err)
	}
	if se.Code != CodeInvalidArg || !strings.Contains(se.Message, "sn_uop_reshape") ||
		!strings.Contains(se.Message, "(2,3)") || !strings.Contains(se.Message, "(4,2)") {
		t.Fatalf("got %v", se)
	}
	if !errors.Is(err, &Error{Code: CodeInvalidArg}) {
		t.Fatal("errors.Is must match by code")
	}
	if _, err := a.Add(matrix(t, g, 3, 5)); err == nil {
		t.Fatal("shapes that do not broadcast must fail")
	}
}

func TestOtherErrors(t *testing.T) {
	must := musts(t)
	g := newGraph(t)
	a := matrix(t, g, 2, 2)
	cases := map[string]func() error{
		"float const of int dtype": func() error { _, err := g.ConstFloat(Int32, 1.5); return err },
		"reduce with Sub":          func() error { _, err := a.Reduce(OpSub, 0); return err },
		"bad permutation":          func() error { _, err := a.Permute(0, 0); return err },
		"pad length mismatch":      func() error { _, err := a.Pad([]int64{0}, []int64{1, 2}); return err },
		"unknown op":               func() error { _, err := g.Node(Op(9999), Float32, nil, Arg{}); return err },
		"int bounds of a float":    func() error { _, _, _, err := a.MinMaxInt(); return err },
		"non-integral int scalar": func() error {
			i := must(g.Buffer(Int32, 4, ""))
			_, err := i.MulScalar(2.5)
			return err
		},
	}
	for name, f := range cases {
		if err := f(); err == nil {
			t.Errorf("%s: want an error", name)
		} else if e := (*Error)(nil); !errors.As(err, &e) || e.Message == "" {
			t.Errorf("%s: want *Error with a message, got %v", name, err)
		}
	}
}

func TestOtherGraphAndClosed(t *testing.T) {
	must := musts(t)
	ctx, err := NewContext()
	if err != nil {
		t.Fatal(err)
	}
	g1, _ := ctx.NewGraph()
	g2, _ := ctx.NewGraph()
	a := must(g1.ConstInt(Int32, 1))
	b := must(g2.ConstInt(Int32, 1))
	if _, err := a.Add(b); err == nil || !strings.Contains(err.Error(), "another graph") {
		t.Fatalf("cross-graph add: %v", err)
	}
	ctx.Close()
	ctx.Close() // idempotent
	if _, err := ctx.NewGraph(); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed context: %v", err)
	}
	// g1 still works: it holds its own reference to the C context.
	must(g1.ConstInt(Int32, 2))
	g1.Close()
	if _, err := a.Add(a); !errors.Is(err, ErrClosed) {
		t.Fatalf("uop of a closed graph: %v", err)
	}
	if a.Op() != OpInvalid || a.String() == "" {
		t.Fatal("queries on a closed graph's uop give zero values")
	}
	g2.Close()
	var zero UOp
	if _, err := zero.Add(zero); !errors.Is(err, &Error{Code: CodeInvalidArg}) {
		t.Fatalf("zero UOp: %v", err)
	}
	if !zero.IsZero() || zero.Op() != OpInvalid {
		t.Fatal("zero UOp queries give zero values")
	}
}

func TestConcurrentUse(t *testing.T) {
	ctx, err := NewContext()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	shared, _ := ctx.NewGraph()
	defer shared.Close()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			own, err := ctx.NewGraph() // Context: shared freely
			if err != nil {
				t.Error(err)
				return
			}
			defer own.Close()
			for i := 0; i < 50; i++ {
				x, err := own.ConstInt(Int64, int64(i))
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := x.AddScalar(1); err != nil {
					t.Error(err)
				}
				// Graph: calls serialize on its mutex.
				y, err := shared.ConstInt(Int64, int64(i%7))
				if err != nil {
					t.Error(err)
					return
				}
				_ = y.String()
			}
		}(w)
	}
	wg.Wait()
	if n := shared.NodeCount(); n != 7 {
		t.Fatalf("shared graph has %d nodes, want 7 distinct constants", n)
	}
}

func TestFinalizerReleasesForgottenGraphs(t *testing.T) {
	ctx, err := NewContext()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	before := liveGraphs.Load()
	for i := 0; i < 100; i++ {
		g, err := ctx.NewGraph()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.ConstInt(Int32, int64(i)); err != nil {
			t.Fatal(err)
		}
		// no Close: the finalizer is the safety net
	}
	for try := 0; try < 100 && liveGraphs.Load() > before; try++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := liveGraphs.Load() - before; n > 0 {
		t.Fatalf("%d forgotten graphs were not released by their finalizers", n)
	}
}
