package sinter

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// squarePlusOne compiles x*x + 1 over a float32 (3, 5) input on dev.
func squarePlusOne(t *testing.T, ctx *Context, dev *Device) *Program {
	t.Helper()
	must := musts(t)
	g, err := ctx.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	x := must(g.Input(Float32, []int64{3, 5}, dev.Name()))
	p, err := g.Compile([]UOp{must(must(x.Mul(x)).AddScalar(1))}, dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func ramp(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	return v
}

func openDevice(t *testing.T, ctx *Context, name string) *Device {
	t.Helper()
	d, err := ctx.Device(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestDeviceCountAndDescription(t *testing.T) {
	ctx, _ := cpu(t)
	for backend, want := range map[string]int{"CPU": 8, "C": 1} { // CPU:0 .. CPU:7
		if n, err := ctx.DeviceCount(backend); n != want || err != nil {
			t.Errorf("DeviceCount(%q) = %d, %v", backend, n, err)
		}
	}
	if n, err := ctx.DeviceCount("CL"); n < 0 || err != nil {
		t.Errorf("DeviceCount(CL) = %d, %v", n, err)
	}
	_, err := ctx.DeviceCount("METAL")
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeNotFound || !strings.HasPrefix(se.Message, "sn_device_count: ") ||
		!strings.Contains(se.Message, "METAL") {
		t.Fatalf("unknown backend: %v", err)
	}
	for _, name := range []string{"CPU", "C"} {
		if s, err := openDevice(t, ctx, name).Description(); s == "" || err != nil {
			t.Errorf("%s: description %q, %v", name, s, err)
		}
	}
	d := openDevice(t, ctx, "CPU")
	d.Close()
	if _, err := d.Description(); !errors.Is(err, ErrClosed) {
		t.Errorf("closed device: %v", err)
	}
	closed, _ := NewContext()
	closed.Close()
	if _, err := closed.DeviceCount("CPU"); !errors.Is(err, ErrClosed) {
		t.Errorf("closed context: %v", err)
	}
}

func TestExportC(t *testing.T) {
	ctx, dev := cpu(t)
	c := openDevice(t, ctx, "C")
	p := squarePlusOne(t, ctx, c)
	src, err := p.ExportC("square_plus_one")
	if err != nil || !strings.Contains(src, "int square_plus_one(void *const *inputs, void *const *outputs)") {
		t.Fatalf("export: %v\n%s", err, src)
	}
	if _, err := p.ExportC("1st"); !errors.Is(err, &Error{Code: CodeInvalidArg}) ||
		!strings.Contains(err.Error(), "not a C identifier") {
		t.Fatalf("bad name: %v", err)
	}
	// Device "C" only compiles.
	x, err := c.Alloc(Float32, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if _, err := p.RunAlloc(x); !errors.Is(err, &Error{Code: CodeDevice}) ||
		!strings.Contains(err.Error(), "runs nothing") {
		t.Fatalf("run on C: %v", err)
	}

	_, err = squarePlusOne(t, ctx, dev).ExportC("square_plus_one")
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeUnsupported || !strings.HasPrefix(se.Message, "sn_program_export_c: ") {
		t.Fatalf("export of a CPU program: %v", err)
	}
	p.Close()
	if _, err := p.ExportC("f"); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed program: %v", err)
	}
}

func TestCopyBetweenBuffers(t *testing.T) {
	ctx, dev := cpu(t)
	p := squarePlusOne(t, ctx, dev)
	outs, err := p.RunAlloc(buffer(t, dev, ramp(15), 3, 5))
	if err != nil {
		t.Fatal(err)
	}
	defer outs[0].Close()
	// Same dtype and element count; the shapes may differ.
	flat := buffer(t, dev, make([]float32, 15), 15)
	if err := flat.CopyFrom(outs[0]); err != nil {
		t.Fatal(err)
	}
	want := ramp(15)
	for i, v := range want {
		want[i] = v*v + 1
	}
	if got, err := ToSlice[float32](flat); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("copy %v, %v", got, err)
	}

	if err := buffer(t, dev, make([]int32, 15), 3, 5).CopyFrom(outs[0]); !errors.Is(err, &Error{Code: CodeInvalidArg}) ||
		!strings.Contains(err.Error(), "does not fit") {
		t.Fatalf("dtype mismatch: %v", err)
	}
	if err := buffer(t, dev, make([]float32, 14), 14).CopyFrom(outs[0]); !errors.Is(err, &Error{Code: CodeInvalidArg}) {
		t.Fatalf("size mismatch: %v", err)
	}
	if err := flat.CopyFrom(nil); !errors.Is(err, &Error{Code: CodeInvalidArg}) {
		t.Fatalf("nil source: %v", err)
	}

	// Views of one buffer: disjoint ones copy, overlapping ones are refused.
	b := buffer(t, dev, []float32{1, 2, 3, 4}, 4)
	lo, _ := b.View(0, 2)
	hi, _ := b.View(2, 2)
	mid, _ := b.View(1, 2)
	defer func() { lo.Close(); hi.Close(); mid.Close() }()
	if err := lo.CopyFrom(hi); err != nil {
		t.Fatal(err)
	}
	if got, _ := ToSlice[float32](b); !reflect.DeepEqual(got, []float32{3, 4, 3, 4}) {
		t.Fatalf("views %v", got)
	}
	if err := lo.CopyFrom(mid); !errors.Is(err, &Error{Code: CodeInvalidArg}) ||
		!strings.Contains(err.Error(), "overlaps") {
		t.Fatalf("overlapping views: %v", err)
	}
	outs[0].Close()
	if err := outs[0].CopyFrom(flat); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed destination: %v", err)
	}
}

func TestCopyAcrossDevices(t *testing.T) {
	ctx, dev := cpu(t)
	if n, err := ctx.DeviceCount("CL"); err != nil {
		t.Fatal(err)
	} else if n == 0 {
		t.Skip("no OpenCL device")
	}
	cl := openDevice(t, ctx, "CL")
	if s, err := cl.Description(); s == "" || err != nil {
		t.Fatalf("CL description %q, %v", s, err)
	}
	onCL, err := cl.Alloc(Float32, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer onCL.Close()
	if onCL.DeviceName() != cl.Name() {
		t.Fatalf("buffer on %q", onCL.DeviceName())
	}
	if err := onCL.CopyFrom(buffer(t, dev, ramp(15), 3, 5)); err != nil {
		t.Fatal(err)
	}
	back := buffer(t, dev, make([]float32, 15), 3, 5)
	if err := back.CopyFrom(onCL); err != nil {
		t.Fatal(err)
	}
	if got, err := ToSlice[float32](back); err != nil || !reflect.DeepEqual(got, ramp(15)) {
		t.Fatalf("round trip %v, %v", got, err)
	}
}

func TestDeviceTarget(t *testing.T) {
	ctx, cpuDev := cpu(t)
	cuda, err := ctx.DeviceTarget("CUDA", "sm_90")
	if err != nil || cuda.Name() != "CUDA" {
		t.Fatalf("CUDA sm_90: %v", err)
	}
	p := squarePlusOne(t, ctx, cuda)
	ptx, err := p.KernelSource(0)
	if err != nil || !strings.Contains(ptx, ".target sm_90") {
		t.Fatalf("PTX: %v\n%s", err, ptx)
	}
	if bin, err := p.KernelBinary(0); err != nil || string(bin) != ptx {
		t.Errorf("the CUDA binary is the PTX: %v", err)
	}
	amd, err := ctx.DeviceTarget("AMD", "gfx90a")
	if err != nil {
		t.Fatalf("AMD gfx90a: %v", err)
	}
	if bin, err := squarePlusOne(t, ctx, amd).KernelBinary(0); err != nil || !strings.HasPrefix(string(bin), "\x7fELF") {
		t.Errorf("AMD code object: %v", err)
	}
	var se *Error
	if _, err := ctx.DeviceTarget("CUDA", "sm_1"); !errors.As(err, &se) || se.Code != CodeInvalidArg ||
		!strings.Contains(se.Message, "sm_1") {
		t.Errorf("unknown arch: %v", err)
	}
	if _, err := squarePlusOne(t, ctx, cpuDev).KernelBinary(0); !errors.Is(err, &Error{Code: CodeUnsupported}) {
		t.Errorf("CPU binary: %v", err)
	}
}
