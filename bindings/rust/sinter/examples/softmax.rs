//! Softmax of a 4x8 matrix, row by row: build the graph, compile it for the CPU, run it, check the numbers.
//!
//!   SINTER_LIB_DIR=/path/to/build cargo run --offline --example softmax
use sinter::{CompileOptions, Context, DType, Result, UOp};

const ROWS: usize = 4;
const COLS: usize = 8;

/// Row-wise softmax from primitives: exp(x - max) / sum(exp(x - max)). The reductions keep their axis as
/// size 1, so the row statistics broadcast back over the columns. (`x.softmax(1)` is the library's builder.)
fn softmax<'g>(x: UOp<'g>) -> Result<UOp<'g>> {
    let e = (x - x.max(&[1])?)?.exp()?; // subtracting the row maximum keeps exp() from overflowing
    e / e.sum(&[1])?
}

fn main() -> Result<()> {
    println!("Sinter {}", sinter::version());
    let ctx = Context::new()?;
    let cpu = ctx.device("CPU")?;
    let g = ctx.graph()?;
    let x = g.input(DType::FLOAT32, &[ROWS as i64, COLS as i64], None)?;
    let y = softmax(x)?;
    let builtin = x.softmax(1)?;
    println!("softmax as built from primitives:\n{y}\n");

    let program = g.compile(&[y, builtin], Some(&cpu), &CompileOptions::default())?;
    println!("compiled to {} kernel(s): {:?}", program.kernel_names().len(), program.kernel_names());

    let data: Vec<f32> = (0..ROWS * COLS).map(|i| ((i * 7) % 13) as f32 * 0.5 - 2.0).collect();
    let input = cpu.buffer_from(&[ROWS as i64, COLS as i64], &data)?;
    let outputs = program.run_alloc(&[&input])?;
    let (ours, lib) = (outputs[0].to_vec::<f32>()?, outputs[1].to_vec::<f32>()?);

    for r in 0..ROWS {
        let row = &data[r * COLS..(r + 1) * COLS];
        let m = row.iter().cloned().fold(f32::MIN, f32::max);
        let sum: f32 = row.iter().map(|v| (v - m).exp()).sum();
        for (c, v) in row.iter().enumerate() {
            let want = (v - m).exp() / sum;
            let i = r * COLS + c;
            assert!((ours[i] - want).abs() < 1e-5 && (lib[i] - want).abs() < 1e-5, "row {r} col {c}");
        }
        let total: f32 = ours[r * COLS..(r + 1) * COLS].iter().sum();
        println!("row {r}: {:?}  (sum {total:.6})", &ours[r * COLS..r * COLS + 4]);
    }
    println!("all {} values match a reference softmax", ROWS * COLS);

    // Mistakes come back as errors carrying the library's message.
    match y.reshape(&[3, 3]) {
        Err(e) => println!("\nreshaping {ROWS}x{COLS} to 3x3 fails cleanly: {}", e.message()),
        Ok(_) => panic!("a reshape that changes the element count must fail"),
    }
    Ok(())
}
