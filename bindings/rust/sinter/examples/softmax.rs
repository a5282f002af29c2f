//! Softmax of a 4x8 matrix, row by row: y = exp(x - max(x)) / sum(exp(x - max(x))).
//!
//!   SINTER_LIB_DIR=/path/to/build cargo run --offline --example softmax
use sinter::{Context, DType, Graph, Result, UOp};

const ROWS: i64 = 4;
const COLS: i64 = 8;

/// Row-wise softmax of a (rows, cols) tensor; the reductions keep their axis as size 1, so the row
/// statistics broadcast back over the columns.
fn softmax<'g>(x: UOp<'g>) -> Result<UOp<'g>> {
    let shifted = (x - x.max(&[1])?)?; // subtracting the row maximum keeps exp() from overflowing
    let e = shifted.exp()?;
    e / e.sum(&[1])?
}

fn build(g: &Graph) -> Result<UOp<'_>> {
    let x = g.buffer(DType::FLOAT32, ROWS * COLS, Some("CPU"))?.reshape(&[ROWS, COLS])?;
    softmax(x)
}

fn main() -> Result<()> {
    println!("Sinter {}", sinter::version());
    let ctx = Context::new()?;
    let g = ctx.graph()?;
    let y = build(&g)?;
    assert_eq!(y.static_shape()?, vec![ROWS, COLS]);
    println!("softmax over a {ROWS}x{COLS} matrix, as a tree:\n{}", y.to_tree()?);
    println!("as an S-expression:\n{y}");
    let simple = y.simplify()?;
    println!("simplified ({} nodes in the graph):\n{simple}", g.node_count());

    // Mistakes come back as errors carrying the library's message.
    match y.reshape(&[3, 3]) {
        Err(e) => println!("\nreshaping {ROWS}x{COLS} to 3x3 fails cleanly: {}", e.message()),
        Ok(_) => panic!("a reshape that changes the element count must fail"),
    }
    Ok(())
}
