package sinter

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestMultiDevice(t *testing.T) {
	must := musts(t)
	ctx, dev := cpu(t)
	g, _ := ctx.NewGraph()
	defer g.Close()
	// each of two devices holds 4 values: (1,2,3,4) and (10,20,30,40); AllReduce sums them
	x := must(g.Input(Float32, []int64{8}, ""))
	s := must(x.Shard("CPU:0,CPU:1", 0))
	if a, err := s.Axis(); a != 0 || err != nil {
		t.Fatalf("axis %d, %v", a, err)
	}
	sum := must(s.AllReduce())
	twice := must(must(s.MulScalar(2)).To("CPU"))
	p, err := g.Compile([]UOp{sum, twice}, dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	outs, err := p.RunAlloc(buffer(t, dev, []float32{1, 2, 3, 4, 10, 20, 30, 40}, 8))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ToSlice[float32](outs[0]); err != nil || !reflect.DeepEqual(got, []float32{11, 22, 33, 44}) {
		t.Fatalf("allreduce %v, %v", got, err)
	}
	if got, err := ToSlice[float32](outs[1]); err != nil ||
		!reflect.DeepEqual(got, []float32{2, 4, 6, 8, 20, 40, 60, 80}) {
		t.Fatalf("to %v, %v", got, err)
	}
	_, err = x.Shard("CPU:0,CPU:1,CPU:2", 0)
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeInvalidArg || !strings.Contains(se.Message, "do not divide") {
		t.Fatalf("shard error %v", err)
	}
}
