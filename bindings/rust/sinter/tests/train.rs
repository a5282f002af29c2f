//! Gradients, detach and in-place updates (API version 5) through the safe crate.
use sinter::{CompileOptions, Context, DType, Result};

#[test]
fn gradient_matches_hand_computed_values() -> Result<()> {
    let ctx = Context::new()?;
    let cpu = ctx.device("CPU")?;
    let g = ctx.graph()?;
    let x = g.input(DType::FLOAT64, &[4], None)?;
    let w = g.input(DType::FLOAT64, &[4], None)?;
    // loss = sum(x * x * w + x * detach(x)): d/dx = 2 x w + x, d/dw = x^2
    let loss = (((x * x)? * w)? + (x * x.detach()?)?)?.sum(&[0])?;
    let grads = g.gradient(loss, &[x, w])?;
    let p = g.compile(&grads, Some(&cpu), &CompileOptions::default())?;
    let (xv, wv) = ([1.0f64, -2.0, 0.5, 3.0], [0.25f64, 1.0, -1.0, 2.0]);
    let outs = p.run_alloc(&[&cpu.buffer_from(&[4], &xv)?, &cpu.buffer_from(&[4], &wv)?])?;
    let (dx, dw) = (outs[0].to_vec::<f64>()?, outs[1].to_vec::<f64>()?);
    for i in 0..4 {
        assert!((dx[i] - (2.0 * xv[i] * wv[i] + xv[i])).abs() < 1e-12, "dx[{i}] = {}", dx[i]);
        assert!((dw[i] - xv[i] * xv[i]).abs() < 1e-12, "dw[{i}] = {}", dw[i]);
    }
    Ok(())
}

#[test]
fn assign_updates_the_input_buffer_in_place() -> Result<()> {
    let ctx = Context::new()?;
    let cpu = ctx.device("CPU")?;
    let g = ctx.graph()?;
    let w = g.input(DType::FLOAT32, &[3], None)?;
    let doubled = (w + w)?;
    let update = g.assign(w, doubled)?;
    // the output reads the old value; the effect writes the new one
    let opts = CompileOptions { effects: Some(vec![update]), ..Default::default() };
    let p = g.compile(&[w.sum(&[0])?], Some(&cpu), &opts)?;
    let buf = cpu.buffer_from(&[3], &[1.0f32, 2.0, 3.0])?;
    let mut out = p.alloc_output(0)?;
    p.run(&[&buf], &mut [&mut out])?;
    assert_eq!(out.to_vec::<f32>()?, vec![6.0]);
    assert_eq!(buf.to_vec::<f32>()?, vec![2.0, 4.0, 6.0]);
    p.run(&[&buf], &mut [&mut out])?;
    assert_eq!(out.to_vec::<f32>()?, vec![12.0]);
    assert_eq!(buf.to_vec::<f32>()?, vec![4.0, 8.0, 12.0]);
    // an effects-only program
    let only = g.compile(&[], Some(&cpu), &opts)?;
    only.run(&[&buf], &mut [])?;
    assert_eq!(buf.to_vec::<f32>()?, vec![8.0, 16.0, 24.0]);
    Ok(())
}

#[test]
fn bad_gradients_and_updates_are_errors() -> Result<()> {
    let ctx = Context::new()?;
    let g = ctx.graph()?;
    let x = g.input(DType::FLOAT32, &[3], None)?;
    let err = g.gradient(x, &[x]).unwrap_err();
    assert!(err.message().contains("one element"), "{}", err.message());
    let err = g.assign((x + x)?, x).unwrap_err();
    assert!(err.message().contains("input tensor"), "{}", err.message());
    Ok(())
}
