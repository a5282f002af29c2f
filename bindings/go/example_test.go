package sinter_test

import (
	"fmt"
	"log"

	"sinter"
)

// Softmax of a 2x4 matrix, row by row, built from primitives (exp(x - max) / sum(exp(x - max))), compiled
// for the CPU and run. The reductions keep their axis as size 1, so the row statistics broadcast back over
// the columns. (x.Softmax(1) is the library's own builder.)
func Example_softmax() {
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

	x, err := g.Input(sinter.Float32, []int64{2, 4}, "")
	if err != nil {
		log.Fatal(err)
	}
	softmax := func(x sinter.UOp) (sinter.UOp, error) {
		m, err := x.Max(1)
		if err != nil {
			return sinter.UOp{}, err
		}
		d, err := x.Sub(m)
		if err != nil {
			return sinter.UOp{}, err
		}
		e, err := d.Exp()
		if err != nil {
			return sinter.UOp{}, err
		}
		s, err := e.Sum(1)
		if err != nil {
			return sinter.UOp{}, err
		}
		return e.Div(s)
	}
	y, err := softmax(x)
	if err != nil {
		log.Fatal(err)
	}
	program, err := g.Compile([]sinter.UOp{y}, cpu, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer program.Close()

	in, err := sinter.NewBuffer(cpu, []float32{0, 1, 2, 3, 5, 5, 5, 5}, 2, 4)
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
	fmt.Println(outs[0].Shape())
	fmt.Printf("%.4f\n%.4f\n", values[:4], values[4:])

	// Mistakes are errors carrying the library's message.
	if _, err := y.Reshape(3, 3); err != nil {
		fmt.Println(err)
	}
	// Output:
	// [2 4]
	// [0.0321 0.0871 0.2369 0.6439]
	// [0.2500 0.2500 0.2500 0.2500]
	// sinter: sn_uop_reshape: Reshape: element count changes: (2,4) to (3,3) (INVALID_ARG)
}
