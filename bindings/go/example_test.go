package sinter_test

import (
	"fmt"
	"log"

	"sinter"
)

// Softmax of a 4x8 matrix, row by row: exp(x - max(x)) / sum(exp(x - max(x))). The reductions keep their
// axis as size 1, so the row statistics broadcast back over the columns.
func Example_softmax() {
	ctx, err := sinter.NewContext()
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	g, err := ctx.NewGraph()
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()

	buf, err := g.Buffer(sinter.Float32, 4*8, "CPU")
	if err != nil {
		log.Fatal(err)
	}
	x, err := buf.Reshape(4, 8)
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
	shape, _ := y.StaticShape()
	fmt.Println(y.Op(), y.DType(), shape)
	fmt.Println(y)

	// Mistakes are errors carrying the library's message.
	if _, err := y.Reshape(3, 3); err != nil {
		fmt.Println(err)
	}
	// Output:
	// Div float32 [4 8]
	// %4 = (reshape (buffer[#1 size=32 CPU global]) (stack 4 8))
	// %9 = (exp2 (mul (sub %4 (reduce[max (1)] %4)) 1.44269502))
	// (div %9 (reduce[add (1)] %9))
	// sinter: sn_uop_reshape: Reshape: element count changes: (4,8) to (3,3) (INVALID_ARG)
}
