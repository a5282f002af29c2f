// A user's program in its own module (check.sh builds it outside the repository): softmax of one row on the
// CPU, checked against the formula, and the result handed over as a DLPack tensor.
package main

import (
	"fmt"
	"log"
	"math"

	"sinter"
)

func main() {
	ctx, err := sinter.NewContext()
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	cpu, err := ctx.Device("CPU")
	if err != nil {
		log.Fatal(err)
	}
	defer cpu.Close()
	g, err := ctx.NewGraph()
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	x, err := g.Input(sinter.Float32, []int64{1, 4}, "")
	if err != nil {
		log.Fatal(err)
	}
	y, err := x.Softmax(1)
	if err != nil {
		log.Fatal(err)
	}
	program, err := g.Compile([]sinter.UOp{y}, cpu, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer program.Close()
	data := []float32{0, 1, 2, 3}
	in, err := sinter.NewBuffer(cpu, data, 1, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer in.Close()
	outs, err := program.RunAlloc(in)
	if err != nil {
		log.Fatal(err)
	}
	values, err := sinter.ToSlice[float32](outs[0])
	if err != nil {
		log.Fatal(err)
	}
	var sum float64
	for _, v := range data {
		sum += math.Exp(float64(v))
	}
	for i, v := range data {
		if want := math.Exp(float64(v)) / sum; math.Abs(float64(values[i])-want) > 1e-6 {
			log.Fatalf("softmax %v: element %d should be %f", values, i, want)
		}
	}
	t, err := outs[0].ToDLPack()
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()
	fmt.Printf("sinter %s softmax %.4f, as DLPack %v %+v\n", sinter.Version(), values, t.Shape(), t.DataType())
}
