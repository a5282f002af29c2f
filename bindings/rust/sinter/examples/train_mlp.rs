//! Training a 2-layer MLP with SGD, one compiled program per step (the Rust version of examples/train_mlp.c).
//!
//! 512 points in 8 dimensions (standard normal), labelled with the class (of 4) a random linear map scores
//! highest. `data` and `init` programs draw the points, labels and weights on the device; the `step` program
//! computes the mean cross-entropy, its gradient by every weight, and the in-place SGD updates (effects). It is
//! compiled once and run 200 times; the example fails unless the loss falls below a third of its start.
//!
//!   SINTER_LIB_DIR=/path/to/build cargo run --offline --example train_mlp
use sinter::{Buffer, CompileOptions, Context, DType, Result};

const N: i64 = 512;
const IN: i64 = 8;
const HIDDEN: i64 = 32;
const CLASSES: i64 = 4;
const STEPS: usize = 200;
const LEARNING_RATE: f64 = 0.5;

fn main() -> Result<()> {
    let ctx = Context::new()?;
    let cpu = ctx.device("CPU")?;
    let f32 = DType::FLOAT32;
    let shapes: [&[i64]; 4] = [&[IN, HIDDEN], &[HIDDEN], &[HIDDEN, CLASSES], &[CLASSES]];
    let fan_in = [IN, IN, HIDDEN, HIDDEN];

    // data: x and the one-hot labels of argmax(x @ m)
    let g = ctx.graph()?;
    let x = g.randn(&[N, IN], 42, f32)?;
    let m = g.randn(&[IN, CLASSES], 43, f32)?;
    let y = x.gemm(m)?.argmax(1, false)?.one_hot(CLASSES, f32)?;
    let data = g.compile(&[x, y], Some(&cpu), &CompileOptions::default())?;

    // init: uniform in +-1/sqrt(fan_in)
    let g = ctx.graph()?;
    let mut w = Vec::new();
    for k in 0..4 {
        let u = g.rand(shapes[k], (k + 1) as u64, f32)?;
        let scale = 2.0 / (fan_in[k] as f64).sqrt();
        w.push(((u - u.scalar_f64(0.5)?)? * u.scalar_f64(scale)?)?);
    }
    let init = g.compile(&w, Some(&cpu), &CompileOptions::default())?;

    // step: loss, gradients and the updates
    let g = ctx.graph()?;
    let x = g.input(f32, &[N, IN], None)?;
    let y = g.input(f32, &[N, CLASSES], None)?;
    let w = shapes.iter().map(|s| g.input(f32, s, None)).collect::<Result<Vec<_>>>()?;
    let h = (x.gemm(w[0])? + w[1])?.relu()?;
    let logits = (h.gemm(w[2])? + w[3])?;
    let ce = (logits.log_softmax(1)? * y)?.sum(&[0, 1])?;
    let loss = (ce * ce.scalar_f64(-1.0 / N as f64)?)?;
    let grads = g.gradient(loss, &w)?;
    let mut updates = Vec::new();
    for (wk, dk) in w.iter().zip(&grads) {
        let step = (*dk * dk.scalar_f64(LEARNING_RATE)?)?;
        updates.push(g.assign(*wk, (*wk - step)?)?);
    }
    let opts = CompileOptions { effects: Some(updates), ..Default::default() };
    let step = g.compile(&[loss], Some(&cpu), &opts)?;

    let mut bufs: Vec<Buffer> = Vec::new();
    for i in 0..2 {
        bufs.push(data.alloc_output(i)?);
    }
    for i in 0..4 {
        bufs.push(init.alloc_output(i)?);
    }
    {
        let (d, rest) = bufs.split_at_mut(2);
        data.run(&[], &mut d.iter_mut().collect::<Vec<_>>())?;
        init.run(&[], &mut rest.iter_mut().collect::<Vec<_>>())?;
    }
    let mut loss_buf = step.alloc_output(0)?;
    let ins: Vec<&Buffer> = bufs.iter().collect();
    let (mut first, mut last) = (0.0f32, 0.0f32);
    for i in 0..STEPS {
        step.run(&ins, &mut [&mut loss_buf])?;
        if i % 20 == 0 || i == STEPS - 1 {
            last = loss_buf.to_vec::<f32>()?[0];
            if i == 0 {
                first = last;
            }
            println!("step {i} loss {last:.4}");
        }
    }
    println!("{} kernels per step; loss {first:.4} -> {last:.4}", step.kernel_names().len());
    if !(last < first / 3.0) {
        eprintln!("train_mlp: the loss did not fall below a third of its start");
        std::process::exit(1);
    }
    Ok(())
}
