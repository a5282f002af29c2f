package sinter

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func cpu(t *testing.T) (*Context, *Device) {
	t.Helper()
	ctx, err := NewContext()
	if err != nil {
		t.Fatal(err)
	}
	dev, err := ctx.Device("CPU")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close(); ctx.Close() })
	return ctx, dev
}

func buffer[T Element](t *testing.T, d *Device, data []T, shape ...int64) *Buffer {
	t.Helper()
	b, err := NewBuffer(d, data, shape...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestCompileAndRun(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	if dev.Name() != "CPU" {
		t.Fatalf("device %q", dev.Name())
	}
	g, _ := ctx.NewGraph()
	a := must(g.Input(Float32, []int64{2, 3}, ""))
	b := must(g.Input(Float32, []int64{2, 3}, ""))
	y := must(must(must(a.Add(b)).MulScalar(2)).Sum(1))
	p, err := g.Compile([]UOp{y}, dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	g.Close() // the program does not need the graph
	if p.NumInputs() != 2 || p.NumOutputs() != 1 || len(p.KernelNames()) == 0 {
		t.Fatalf("inputs %d outputs %d kernels %v", p.NumInputs(), p.NumOutputs(), p.KernelNames())
	}
	if dt, shape, err := p.OutputInfo(0); err != nil || dt != Float32 || !reflect.DeepEqual(shape, []int64{2, 1}) {
		t.Fatalf("output info %v %v %v", dt, shape, err)
	}
	xa := buffer(t, dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	xb := buffer(t, dev, []float32{10, 20, 30, 40, 50, 60}, 2, 3)
	outs, err := p.RunAlloc(xa, xb)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ToSlice[float32](outs[0])
	if err != nil || !reflect.DeepEqual(got, []float32{132, 330}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if !reflect.DeepEqual(outs[0].Shape(), []int64{2, 1}) || outs[0].NBytes() != 8 {
		t.Fatalf("output buffer %v %d", outs[0].Shape(), outs[0].NBytes())
	}
}

func TestTensorBuilders(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	g, _ := ctx.NewGraph()
	defer g.Close()
	x := must(g.Input(Float32, []int64{2, 3}, ""))
	w := must(g.Input(Float32, []int64{3, 2}, ""))
	sm := must(x.Softmax(-1))
	mm := must(x.Matmul(w))
	am := must(x.ArgMax(1, false))
	opts := DefaultCompileOptions()
	opts.KeepStages = true
	p, err := g.Compile([]UOp{sm, mm, am}, dev, &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	xv := []float32{1, 2, 3, 3, 1, 2}
	outs, err := p.RunAlloc(buffer(t, dev, xv, 2, 3), buffer(t, dev, []float32{1, 0, 0, 1, 1, 1}, 3, 2))
	if err != nil {
		t.Fatal(err)
	}
	soft, _ := ToSlice[float32](outs[0])
	for r := 0; r < 2; r++ {
		row := xv[r*3 : r*3+3]
		m := math.Max(float64(row[0]), math.Max(float64(row[1]), float64(row[2])))
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(float64(v) - m)
		}
		for c, v := range row {
			want := math.Exp(float64(v)-m) / sum
			if math.Abs(float64(soft[r*3+c])-want) > 1e-5 {
				t.Fatalf("softmax[%d][%d] = %v, want %v", r, c, soft[r*3+c], want)
			}
		}
	}
	if mmv, _ := ToSlice[float32](outs[1]); !reflect.DeepEqual(mmv, []float32{4, 5, 5, 3}) {
		t.Fatalf("matmul %v", mmv)
	}
	if amv, err := ToSlice[int32](outs[2]); err != nil || !reflect.DeepEqual(amv, []int32{2, 0}) {
		t.Fatalf("argmax %v %v", amv, err)
	}
	if s, err := p.Stage("schedule"); err != nil || !strings.Contains(s, "kernel") {
		t.Fatalf("stage: %v", err)
	}
	if src, err := p.KernelSource(0); err != nil || src == "" {
		t.Fatalf("kernel source: %v", err)
	}
}

func TestConcurrentRuns(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	g, _ := ctx.NewGraph()
	x := must(g.Input(Int32, []int64{8}, ""))
	p, err := g.Compile([]UOp{must(x.MulScalar(3))}, dev, nil)
	g.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int32) {
			defer wg.Done()
			data := make([]int32, 8)
			for i := range data {
				data[i] = int32(i) + w
			}
			in, err := NewBuffer(dev, data, 8)
			if err != nil {
				t.Error(err)
				return
			}
			defer in.Close()
			outs, err := p.RunAlloc(in)
			if err != nil {
				t.Error(err)
				return
			}
			got, _ := ToSlice[int32](outs[0])
			for i := range data {
				if got[i] != data[i]*3 {
					t.Errorf("worker %d: got %v", w, got)
					return
				}
			}
		}(int32(w))
	}
	wg.Wait()
}

func TestEveryTensorBuilder(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	g, _ := ctx.NewGraph()
	defer g.Close()
	shape := func(u UOp) []int64 {
		t.Helper()
		s, err := u.StaticShape()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	expect := func(what string, got []int64, want ...int64) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: shape %v, want %v", what, got, want)
		}
	}
	img := must(g.Input(Float32, []int64{1, 2, 5, 5}, ""))
	w := must(g.Input(Float32, []int64{3, 2, 3, 3}, ""))
	bias := must(g.Input(Float32, []int64{3}, ""))
	expect("conv2d padded", shape(must(img.Conv2d(w, bias, Conv2dOptions{Padding: &[2]int64{1, 1}}))), 1, 3, 5, 5)
	expect("conv2d strided", shape(must(img.Conv2d(w, UOp{}, Conv2dOptions{Stride: &[2]int64{2, 2}}))), 1, 3, 2, 2)
	expect("avg_pool2d", shape(must(img.AvgPool2d(PoolOptions{Kernel: [2]int64{2, 2}}))), 1, 2, 2, 2)
	pool := PoolOptions{Kernel: [2]int64{3, 3}, Stride: &[2]int64{1, 1}}
	expect("max_pool2d", shape(must(img.MaxPool2d(pool))), 1, 2, 3, 3)
	m := must(g.Input(Float32, []int64{2, 3}, ""))
	expect("gemm", shape(must(m.Gemm(must(g.Input(Float32, []int64{3, 4}, ""))))), 2, 4)
	expect("layernorm", shape(must(m.LayerNorm(1, UOp{}, UOp{}, 1e-5))), 2, 3)
	for name, f := range map[string]func() (UOp, error){"log_softmax": func() (UOp, error) { return m.LogSoftmax(1) },
		"gelu": m.Gelu, "sigmoid": m.Sigmoid, "tanh": m.Tanh, "log": m.Log, "relu": m.Relu} {
		expect(name, shape(must(f())), 2, 3)
	}
	expect("cat", shape(must(g.Cat(0, m, m))), 4, 3)
	expect("stack", shape(must(g.Stack(0, m, m))), 2, 2, 3)
	expect("rand", shape(must(g.Rand([]int64{4, 2}, 7, Float32))), 4, 2)
	expect("randn", shape(must(g.Randn([]int64{3}, 7, Float32))), 3)

	idx := must(g.Input(Int32, []int64{3}, ""))
	v := must(g.Input(Float32, []int64{4}, ""))
	expect("scatter_add", shape(must(v.ScatterAdd(0, idx, must(g.Input(Float32, []int64{3}, ""))))), 4)
	outs := []UOp{
		must(must(g.Arange(5, Int32)).CumSum(0)),
		must(idx.OneHot(3, Int32)),
		must(v.Gather(0, idx)),
	}
	opts := DefaultCompileOptions()
	opts.Inputs = []UOp{idx, v} // the scatter_add's extra input is not read by these outputs
	p, err := g.Compile(outs, dev, &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r, err := p.RunAlloc(buffer(t, dev, []int32{2, 0, 2}, 3), buffer(t, dev, []float32{10, 20, 30, 40}, 4))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ToSlice[int32](r[0]); !reflect.DeepEqual(got, []int32{0, 1, 3, 6, 10}) {
		t.Errorf("cumsum(arange(5)) = %v", got)
	}
	if got, _ := ToSlice[int32](r[1]); !reflect.DeepEqual(got, []int32{0, 0, 1, 1, 0, 0, 0, 0, 1}) {
		t.Errorf("one_hot = %v", got)
	}
	if got, _ := ToSlice[float32](r[2]); !reflect.DeepEqual(got, []float32{30, 10, 30}) {
		t.Errorf("gather = %v", got)
	}
	if err := ctx.SetDebug(0); err != nil {
		t.Error(err)
	}
}

func TestRunErrors(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	_, err := ctx.Device("NOPE:7")
	if !errors.Is(err, &Error{Code: CodeDevice}) || !strings.Contains(err.Error(), "NOPE") {
		t.Fatalf("unknown device: %v", err)
	}
	g, _ := ctx.NewGraph()
	defer g.Close()
	x := must(g.Input(Float32, []int64{4, 4}, ""))
	if _, err := x.Matmul(must(g.Input(Float32, []int64{3, 4}, ""))); !errors.Is(err, &Error{Code: CodeInvalidArg}) {
		t.Fatalf("bad matmul: %v", err)
	}
	p, err := g.Compile([]UOp{must(x.Add(x))}, dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	wrong := buffer(t, dev, make([]int32, 16), 4, 4)
	out, _ := p.AllocOutput(0)
	var se *Error
	if err := p.Run([]*Buffer{wrong}, []*Buffer{out}); !errors.As(err, &se) || !strings.Contains(se.Message, "input 0") {
		t.Fatalf("wrong input dtype: %v", err)
	}
	if err := p.Run(nil, []*Buffer{out}); err == nil {
		t.Fatal("missing input must fail")
	}
	if err := p.Run([]*Buffer{nil}, []*Buffer{out}); err == nil {
		t.Fatal("nil buffer must fail")
	}
	b := buffer(t, dev, []float32{1, 2, 3, 4}, 4)
	if err := CopyIn(b, []int32{1, 2, 3, 4}); err == nil || !strings.Contains(err.Error(), "float32") {
		t.Fatalf("dtype mismatch: %v", err)
	}
	if err := CopyIn(b, []float32{1, 2}); !errors.Is(err, &Error{Code: CodeInvalidArg}) {
		t.Fatalf("size mismatch: %v", err)
	}
	v, err := b.View(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ToSlice[float32](v); !reflect.DeepEqual(got, []float32{3, 4}) {
		t.Fatalf("view %v", got)
	}
	v.Close()
	if _, err := b.View(3, 2); err == nil {
		t.Fatal("a view past the end must fail")
	}
	if _, err := p.Stage("no-such-stage"); err == nil {
		t.Fatal("unknown stage must fail")
	}
	p.Close()
	if err := p.Run([]*Buffer{b}, []*Buffer{out}); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed program: %v", err)
	}
	out.Close()
	if _, err := ToSlice[float32](out); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed buffer: %v", err)
	}
}

func TestLaunchTimeVariables(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	g, _ := ctx.NewGraph()
	defer g.Close()
	x := must(g.Input(Float32, []int64{4}, ""))
	scale := must(must(g.Var("scale", 1, 100)).Cast(Float32))
	p, err := g.Compile([]UOp{must(x.Mul(scale))}, dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	vars, err := p.Vars()
	if err != nil || !reflect.DeepEqual(vars, []VarInfo{{Name: "scale", Min: 1, Max: 100}}) {
		t.Fatalf("vars %v %v", vars, err)
	}
	xb := buffer(t, dev, []float32{1, 2, 3, -4}, 4)
	out, err := p.AllocOutput(0)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	for _, s := range []int64{3, 10} {
		if err := p.RunVars([]*Buffer{xb}, []*Buffer{out}, map[string]int64{"scale": s}); err != nil {
			t.Fatal(err)
		}
		got, _ := ToSlice[float32](out)
		f := float32(s)
		if !reflect.DeepEqual(got, []float32{f, 2 * f, 3 * f, -4 * f}) {
			t.Fatalf("scale %d: got %v", s, got)
		}
	}
	err = p.RunVars([]*Buffer{xb}, []*Buffer{out}, map[string]int64{"scale": 0})
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeInvalidArg || !strings.Contains(se.Message, "outside its range [1, 100]") {
		t.Fatalf("out of range: %v", err)
	}
	if err := p.Run([]*Buffer{xb}, []*Buffer{out}); err == nil || !strings.Contains(err.Error(), "scale is not bound") {
		t.Fatalf("unbound: %v", err)
	}
}

// A symbolic batch: x (b,2,3) flattened to (b,6), times w (1,6) broadcast to (b,6), summed per row;
// compiled once and run at two batch sizes against hand-computed sums.
func TestSymbolicBatch(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	g, _ := ctx.NewGraph()
	defer g.Close()
	b := must(g.Var("b", 1, 4))
	two, three, six := must(g.ConstInt(Index, 2)), must(g.ConstInt(Index, 3)), must(g.ConstInt(Index, 6))
	x := must(g.InputSym(Float32, []UOp{b, two, three}, ""))
	w := must(g.Input(Float32, []int64{1, 6}, ""))
	y := must(must(must(x.ReshapeSym(b, six)).Mul(must(w.ExpandSym(b, six)))).Sum(1))
	p, err := g.Compile([]UOp{y}, dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	xd := make([]float32, 24)
	for i := range xd {
		xd[i] = float32(i%5) - 2
	}
	wd := []float32{1, -2, 0.5, 3, -1, 0.25}
	wb := buffer(t, dev, wd, 1, 6)
	for _, rows := range []int64{2, 4} {
		xb := buffer(t, dev, xd[:rows*6], rows, 2, 3)
		vars := map[string]int64{"b": rows}
		out, err := p.AllocOutputVars(0, vars)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.RunVars([]*Buffer{xb, wb}, []*Buffer{out}, vars); err != nil {
			t.Fatal(err)
		}
		got, _ := ToSlice[float32](out)
		if int64(len(got)) != rows {
			t.Fatalf("b=%d: %d outputs", rows, len(got))
		}
		for i := int64(0); i < rows; i++ {
			var want float32
			for j := int64(0); j < 6; j++ {
				want += xd[i*6+j] * wd[j]
			}
			if d := got[i] - want; d > 1e-5 || d < -1e-5 {
				t.Fatalf("b=%d row %d: got %v want %v", rows, i, got[i], want)
			}
		}
		out.Close()
		xb.Close()
	}
	if _, err := p.AllocOutputVars(0, map[string]int64{"b": 9}); err == nil || !strings.Contains(err.Error(), "outside its range") {
		t.Fatalf("b out of range: %v", err)
	}
	if _, err := x.ReshapeSym(must(b.Mul(two)), three); err == nil {
		t.Fatal("merging the symbolic dim was accepted")
	}
}
