//! A user's program: softmax of one row on the CPU, checked against the formula.
use sinter::{CompileOptions, Context, DType};

fn main() -> sinter::Result<()> {
    let ctx = Context::new()?;
    let cpu = ctx.device("CPU")?;
    let g = ctx.graph()?;
    let x = g.input(DType::FLOAT32, &[1, 4], None)?;
    let program = g.compile(&[x.softmax(1)?], Some(&cpu), &CompileOptions::default())?;
    let data = [0f32, 1., 2., 3.];
    let out = program.run_alloc(&[&cpu.buffer_from(&[1, 4], &data)?])?[0].to_vec::<f32>()?;
    let sum: f32 = data.iter().map(|v| v.exp()).sum();
    for (got, v) in out.iter().zip(data) {
        assert!((got - v.exp() / sum).abs() < 1e-6, "{out:?}");
    }
    println!("sinter {} softmax {out:.4?}", sinter::version());
    Ok(())
}
