package sinter

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"sinter/internal/dlpacktest"
)

func floats(p unsafe.Pointer, n int) []float32 { return unsafe.Slice((*float32)(p), n) }

func TestDLPackExportReadsTheBuffer(t *testing.T) {
	_, dev := cpu(t)
	values := []float32{1, 2, 3, 4, 5, 6}
	b := buffer(t, dev, values, 2, 3)
	x, err := b.ToDLPack()
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if major, minor := x.Version(); major != 1 || minor != 0 {
		t.Errorf("version %d.%d", major, minor)
	}
	if x.NDim() != 2 || !reflect.DeepEqual(x.Shape(), []int64{2, 3}) || x.Strides() != nil {
		t.Errorf("ndim %d shape %v strides %v", x.NDim(), x.Shape(), x.Strides())
	}
	if dt := x.DataType(); dt != (DLDataType{Code: DLFloat, Bits: 32, Lanes: 1}) {
		t.Errorf("dtype %+v", dt)
	}
	if typ, id := x.Device(); typ != DLDeviceCPU || id != 0 {
		t.Errorf("device %d:%d", typ, id)
	}
	if x.Flags() != 0 || x.ByteOffset() != 0 || x.Pointer() == nil || x.Data() == nil {
		t.Errorf("flags %d offset %d pointer %p data %p", x.Flags(), x.ByteOffset(), x.Pointer(), x.Data())
	}
	// Zero-copy: the tensor's data is the buffer's memory, in both directions.
	data := floats(x.Data(), 6)
	if !reflect.DeepEqual(data, values) {
		t.Fatalf("data %v", data)
	}
	data[0] = 42
	if got, _ := ToSlice[float32](b); got[0] != 42 {
		t.Fatalf("a write through the tensor is not in the buffer: %v", got)
	}
	// The export keeps the memory alive after the buffer is closed.
	b.Close()
	if data[5] != 6 {
		t.Fatalf("data after the buffer's Close: %v", data)
	}
}

func TestDLPackRoundTripIsZeroCopy(t *testing.T) {
	_, dev := cpu(t)
	for _, c := range []struct {
		name string
		make func() (*Buffer, error)
		want any
	}{
		{"float32", func() (*Buffer, error) { return NewBuffer(dev, []float32{0.5, -1, 2, 8}, 2, 2) },
			[]float32{0.5, -1, 2, 8}},
		{"int64", func() (*Buffer, error) { return NewBuffer(dev, []int64{-3, 1 << 40, 7}, 3) }, []int64{-3, 1 << 40, 7}},
		{"uint8", func() (*Buffer, error) { return NewBuffer(dev, []uint8{1, 255}, 1, 2) }, []uint8{1, 255}},
		{"scalar", func() (*Buffer, error) { return NewBuffer(dev, []float64{3.25}) }, []float64{3.25}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := c.make()
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			x, err := b.ToDLPack()
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close() // a no-op once FromDLPack took it
			data := x.Data()
			back, err := dev.FromDLPack(x)
			if err != nil {
				t.Fatal(err)
			}
			defer back.Close()
			if x.Pointer() != nil || x.Data() != nil || x.Shape() != nil {
				t.Fatal("the DLPack still holds the tensor after FromDLPack")
			}
			if back.DType() != b.DType() || !reflect.DeepEqual(back.Shape(), b.Shape()) {
				t.Fatalf("imported %s %v, exported %s %v", back.DType(), back.Shape(), b.DType(), b.Shape())
			}
			y, err := back.ToDLPack()
			if err != nil {
				t.Fatal(err)
			}
			if y.Data() != data {
				t.Fatalf("import copied: data %p, exported %p", y.Data(), data)
			}
			y.Close()
			y.Close() // idempotent
			var got any
			switch c.want.(type) {
			case []float32:
				got, err = ToSlice[float32](back)
			case []int64:
				got, err = ToSlice[int64](back)
			case []uint8:
				got, err = ToSlice[uint8](back)
			case []float64:
				got, err = ToSlice[float64](back)
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("values %v (%v), want %v", got, err, c.want)
			}
		})
	}
}

func TestDLPackForeignTensorDeletedOnce(t *testing.T) {
	_, dev := cpu(t)
	values := []float32{1, 2, 3, 4, 5, 6}

	t.Run("zero-copy import: the buffer deletes it", func(t *testing.T) {
		f := dlpacktest.New(values, []int64{2, 3}, dlpacktest.Options{})
		defer f.Free()
		x := AdoptDLPack(f.Pointer())
		b, err := dev.FromDLPack(x)
		if err != nil {
			t.Fatal(err)
		}
		x.Close() // empty: must not call the deleter
		v, err := b.View(3, 3)
		if err != nil {
			t.Fatal(err)
		}
		e, err := b.ToDLPack()
		if err != nil {
			t.Fatal(err)
		}
		if e.Data() != f.Data() {
			t.Fatalf("import copied: buffer data %p, tensor data %p", e.Data(), f.Data())
		}
		e.Close()
		if got, _ := ToSlice[float32](v); !reflect.DeepEqual(got, values[3:]) {
			t.Fatalf("view %v", got)
		}
		b.Close()
		if f.Deleted() != 0 {
			t.Fatal("deleted while a view still uses the memory")
		}
		v.Close()
		if f.Deleted() != 1 {
			t.Fatalf("deleter ran %d times, want 1", f.Deleted())
		}
	})

	t.Run("strided or read-only: copied, deleted at once", func(t *testing.T) {
		for _, opts := range []dlpacktest.Options{{Strides: []int64{1, 3}}, {ReadOnly: true}} {
			shape := []int64{2, 3}
			if opts.Strides != nil {
				shape = []int64{3, 2} // the transpose of the (2, 3) data
			}
			f := dlpacktest.New(values, shape, opts)
			x := AdoptDLPack(f.Pointer())
			b, err := dev.FromDLPack(x)
			if err != nil {
				t.Fatal(err)
			}
			if f.Deleted() != 1 {
				t.Fatalf("%+v: deleter ran %d times after the copy, want 1", opts, f.Deleted())
			}
			got, _ := ToSlice[float32](b)
			want := values
			if opts.Strides != nil {
				want = []float32{1, 4, 2, 5, 3, 6}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%+v: values %v, want %v", opts, got, want)
			}
			x.Close()
			b.Close()
			if f.Deleted() != 1 {
				t.Fatalf("%+v: deleter ran %d times, want 1", opts, f.Deleted())
			}
			f.Free()
		}
	})

	t.Run("refused: the caller still owns it", func(t *testing.T) {
		for _, c := range []struct {
			opts dlpacktest.Options
			code Code
			text string
		}{
			{dlpacktest.Options{Code: DLFloat, Bits: 8}, CodeUnsupported, "DLPack dtype"},
			{dlpacktest.Options{Major: 2}, CodeVersion, "is not 1.x"},
		} {
			f := dlpacktest.New(values, []int64{6}, c.opts)
			x := AdoptDLPack(f.Pointer())
			_, err := dev.FromDLPack(x)
			var se *Error
			if !errors.As(err, &se) || se.Code != c.code || !strings.HasPrefix(se.Message, "sn_buffer_from_dlpack: ") ||
				!strings.Contains(se.Message, c.text) {
				t.Fatalf("%+v: %v", c.opts, err)
			}
			if f.Deleted() != 0 || x.Pointer() != f.Pointer() {
				t.Fatalf("%+v: a refused import took the tensor", c.opts)
			}
			x.Close()
			x.Close()
			if f.Deleted() != 1 {
				t.Fatalf("%+v: deleter ran %d times, want 1", c.opts, f.Deleted())
			}
			f.Free()
		}
	})

	t.Run("Release hands it on", func(t *testing.T) {
		f := dlpacktest.New(values, []int64{6}, dlpacktest.Options{})
		defer f.Free()
		x := AdoptDLPack(f.Pointer())
		p := x.Release()
		if p != f.Pointer() || x.Release() != nil || x.Pointer() != nil {
			t.Fatal("Release")
		}
		x.Close()
		if f.Deleted() != 0 {
			t.Fatal("Close after Release called the deleter")
		}
		AdoptDLPack(p).Close()
		if f.Deleted() != 1 {
			t.Fatalf("deleter ran %d times, want 1", f.Deleted())
		}
	})

	t.Run("a forgotten DLPack is deleted by its finalizer", func(t *testing.T) {
		f := dlpacktest.New(values, []int64{6}, dlpacktest.Options{})
		defer f.Free()
		AdoptDLPack(f.Pointer()) // dropped
		for try := 0; try < 100 && f.Deleted() == 0; try++ {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		if f.Deleted() != 1 {
			t.Fatalf("deleter ran %d times, want 1", f.Deleted())
		}
	})
}

func TestDLPackErrors(t *testing.T) {
	ctx, dev := cpu(t)
	var nilDL *DLPack
	if nilDL.Close() != nil || nilDL.Pointer() != nil || nilDL.NDim() != 0 || AdoptDLPack(nil) != nil {
		t.Fatal("nil DLPack")
	}
	if _, err := dev.FromDLPack(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("FromDLPack(nil): %v", err)
	}
	b := buffer(t, dev, []float32{1}, 1)
	x, err := b.ToDLPack()
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	if _, err := dev.FromDLPack(x); !errors.Is(err, ErrClosed) {
		t.Fatalf("FromDLPack of a closed DLPack: %v", err)
	}
	closed, _ := NewBuffer(dev, []float32{1}, 1)
	closed.Close()
	if _, err := closed.ToDLPack(); !errors.Is(err, ErrClosed) {
		t.Fatalf("ToDLPack of a closed buffer: %v", err)
	}
	// Only CPU and CUDA memory are exported: the compile-only C device has no buffers to export, so use whatever
	// non-CPU device this machine has, if any.
	if n, _ := ctx.DeviceCount("CL"); n > 0 {
		cl := openDevice(t, ctx, "CL")
		onCL, err := NewBuffer(cl, []float32{1, 2}, 2)
		if err != nil {
			t.Fatal(err)
		}
		defer onCL.Close()
		_, err = onCL.ToDLPack()
		var se *Error
		if !errors.As(err, &se) || se.Code != CodeUnsupported || !strings.Contains(se.Message, "CPU and CUDA memory only") {
			t.Fatalf("ToDLPack of a CL buffer: %v", err)
		}
	}
}
