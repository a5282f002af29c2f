//! Compile and run on the CPU through the safe API: numbers, program metadata, threads and error paths.
use sinter::{Code, CompileOptions, Context, Conv2d, DType, Device, Pool2d};

fn cpu(ctx: &Context) -> Device {
    ctx.device("CPU").expect("CPU device")
}

fn close(a: &[f32], b: &[f32], tol: f32) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol * (1.0 + y.abs()))
}

#[test]
fn elementwise_and_reduce_numbers() {
    let ctx = Context::new().unwrap();
    let dev = cpu(&ctx);
    assert_eq!(dev.name(), "CPU");
    let g = ctx.graph().unwrap();
    let a = g.input(DType::FLOAT32, &[2, 3], None).unwrap();
    let b = g.input(DType::FLOAT32, &[2, 3], None).unwrap();
    let y = ((a + b).unwrap() * 2.0).unwrap().sum(&[1]).unwrap();
    let p = g.compile(&[y], Some(&dev), &CompileOptions::default()).unwrap();
    drop(g); // the program does not need the graph
    assert_eq!((p.num_inputs(), p.num_outputs()), (2, 1));
    assert_eq!(p.input_info(1).unwrap().shape, vec![2, 3]);
    let out_info = p.output_info(0).unwrap();
    assert_eq!((out_info.dtype, out_info.shape), (DType::FLOAT32, vec![2, 1]));
    assert!(!p.kernel_names().is_empty());

    let xa = dev.buffer_from(&[2, 3], &[1f32, 2., 3., 4., 5., 6.]).unwrap();
    let xb = dev.buffer_from(&[2, 3], &[10f32, 20., 30., 40., 50., 60.]).unwrap();
    let mut out = p.alloc_output(0).unwrap();
    assert_eq!(out.shape(), vec![2, 1]);
    p.run(&[&xa, &xb], &mut [&mut out]).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![132.0, 330.0]);
    // Run again with other data: programs are reusable.
    let xb2 = dev.buffer_from(&[2, 3], &[0f32; 6]).unwrap();
    let outs = p.run_alloc(&[&xa, &xb2]).unwrap();
    assert_eq!(outs[0].to_vec::<f32>().unwrap(), vec![12.0, 30.0]);
}

#[test]
fn softmax_matmul_and_friends() {
    let ctx = Context::new().unwrap();
    let dev = cpu(&ctx);
    let g = ctx.graph().unwrap();
    let x = g.input(DType::FLOAT32, &[2, 3], None).unwrap();
    let w = g.input(DType::FLOAT32, &[3, 2], None).unwrap();
    let sm = x.softmax(-1).unwrap();
    let mm = x.matmul(w).unwrap();
    let r = (x - 2.0).unwrap().relu().unwrap();
    let am = x.argmax(1, false).unwrap();
    let opts = CompileOptions { keep_stages: true, ..Default::default() };
    let p = g.compile(&[sm, mm, r, am], None, &opts).unwrap();
    let xv = [1f32, 2., 3., 3., 1., 2.];
    let xb = dev.buffer_from(&[2, 3], &xv).unwrap();
    let wb = dev.buffer_from(&[3, 2], &[1f32, 0., 0., 1., 1., 1.]).unwrap();
    let outs = p.run_alloc(&[&xb, &wb]).unwrap();

    let mut want = Vec::new();
    for row in xv.chunks(3) {
        let m = row.iter().cloned().fold(f32::MIN, f32::max);
        let s: f32 = row.iter().map(|v| (v - m).exp()).sum();
        want.extend(row.iter().map(|v| (v - m).exp() / s));
    }
    let got = outs[0].to_vec::<f32>().unwrap();
    assert!(close(&got, &want, 1e-5), "softmax {got:?} want {want:?}");
    assert_eq!(outs[1].to_vec::<f32>().unwrap(), vec![4.0, 5.0, 5.0, 3.0]);
    assert_eq!(outs[2].to_vec::<f32>().unwrap(), vec![0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
    assert_eq!(outs[3].dtype(), DType::INT32);
    assert_eq!(outs[3].to_vec::<i32>().unwrap(), vec![2, 0]);
    assert!(p.stage("schedule").unwrap().contains("kernel"));
    assert!(!p.kernel_source(0).unwrap().is_empty());
}

#[test]
fn explicit_input_order_and_pooling() {
    let ctx = Context::new().unwrap();
    let dev = cpu(&ctx);
    let g = ctx.graph().unwrap();
    let a = g.input(DType::FLOAT32, &[1, 1, 4, 4], None).unwrap();
    let b = g.input(DType::FLOAT32, &[1, 1, 4, 4], None).unwrap();
    let y = (a - b).unwrap().max_pool2d(&Pool2d::new([2, 2])).unwrap();
    let opts = CompileOptions { inputs: Some(vec![b, a]), ..Default::default() };
    let p = g.compile(&[y], Some(&dev), &opts).unwrap();
    let av: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let zero = dev.buffer_from(&[1, 1, 4, 4], &[0f32; 16]).unwrap();
    let ab = dev.buffer_from(&[1, 1, 4, 4], &av).unwrap();
    let out = p.run_alloc(&[&zero, &ab]).unwrap(); // b first, as asked
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![5.0, 7.0, 13.0, 15.0]);
}

#[test]
fn programs_run_from_several_threads() {
    let ctx = Context::new().unwrap();
    let dev = cpu(&ctx);
    let g = ctx.graph().unwrap();
    let x = g.input(DType::INT32, &[8], None).unwrap();
    let p = g.compile(&[(x * 3i64).unwrap()], Some(&dev), &CompileOptions::default()).unwrap();
    std::thread::scope(|s| {
        for t in 0..3i32 {
            let (p, dev) = (&p, &dev);
            s.spawn(move || {
                let data: Vec<i32> = (0..8).map(|i| i + t).collect();
                let xb = dev.buffer_from(&[8], &data).unwrap();
                let out = p.run_alloc(&[&xb]).unwrap();
                assert_eq!(out[0].to_vec::<i32>().unwrap(), data.iter().map(|v| v * 3).collect::<Vec<_>>());
            });
        }
    });
}

#[test]
fn every_tensor_builder() {
    let ctx = Context::new().unwrap();
    let dev = cpu(&ctx);
    let g = ctx.graph().unwrap();
    let shape = |u: sinter::UOp<'_>| u.static_shape().unwrap();
    let img = g.input(DType::FLOAT32, &[1, 2, 5, 5], None).unwrap();
    let w = g.input(DType::FLOAT32, &[3, 2, 3, 3], None).unwrap();
    let bias = g.input(DType::FLOAT32, &[3], None).unwrap();
    let conv = Conv2d { padding: Some([1, 1]), ..Default::default() };
    assert_eq!(shape(img.conv2d(w, Some(bias), &conv).unwrap()), vec![1, 3, 5, 5]);
    let strided = Conv2d { stride: Some([2, 2]), ..Default::default() };
    assert_eq!(shape(img.conv2d(w, None, &strided).unwrap()), vec![1, 3, 2, 2]);
    assert_eq!(shape(img.avg_pool2d(&Pool2d::new([2, 2])).unwrap()), vec![1, 2, 2, 2]);
    let m = g.input(DType::FLOAT32, &[2, 3], None).unwrap();
    assert_eq!(shape(m.gemm(g.input(DType::FLOAT32, &[3, 4], None).unwrap()).unwrap()), vec![2, 4]);
    assert_eq!(shape(m.layernorm(1, None, None, 1e-5).unwrap()), vec![2, 3]);
    for u in [m.log_softmax(1), m.gelu(), m.sigmoid(), m.tanh(), m.ln()] {
        assert_eq!(shape(u.unwrap()), vec![2, 3]);
    }
    assert_eq!(shape(g.cat(&[m, m], 0).unwrap()), vec![4, 3]);
    assert_eq!(shape(g.stack(&[m, m], 0).unwrap()), vec![2, 2, 3]);
    assert_eq!(shape(g.rand(&[4, 2], 7, DType::FLOAT32).unwrap()), vec![4, 2]);
    assert_eq!(shape(g.randn(&[3], 7, DType::FLOAT32).unwrap()), vec![3]);

    // Values of the index-shaped ones.
    let idx = g.input(DType::INT32, &[3], None).unwrap();
    let v = g.input(DType::FLOAT32, &[4], None).unwrap();
    let outs = [
        g.arange(5, DType::INT32).unwrap().cumsum(0).unwrap(),
        idx.one_hot(3, DType::INT32).unwrap(),
        v.gather(0, idx).unwrap(),
        v.scatter_add(0, idx, g.input(DType::FLOAT32, &[3], None).unwrap()).unwrap(),
    ];
    let p = g.compile(&outs, Some(&dev), &CompileOptions::default()).unwrap();
    let ib = dev.buffer_from(&[3], &[2i32, 0, 2]).unwrap();
    let vb = dev.buffer_from(&[4], &[10f32, 20., 30., 40.]).unwrap();
    let sb = dev.buffer_from(&[3], &[1f32, 2., 3.]).unwrap();
    let r = p.run_alloc(&[&ib, &vb, &sb]).unwrap();
    assert_eq!(r[0].to_vec::<i32>().unwrap(), vec![0, 1, 3, 6, 10]);
    assert_eq!(r[1].to_vec::<i32>().unwrap(), vec![0, 0, 1, 1, 0, 0, 0, 0, 1]);
    assert_eq!(r[2].to_vec::<f32>().unwrap(), vec![30.0, 10.0, 30.0]);
    assert_eq!(r[3].to_vec::<f32>().unwrap(), vec![12.0, 20.0, 34.0, 40.0]);
    ctx.set_debug(0).unwrap();
    assert_eq!(ctx.debug().unwrap(), 0);
}

// ---- error paths ----

#[test]
fn run_and_buffer_errors() {
    let ctx = Context::new().unwrap();
    let dev = cpu(&ctx);
    let err = ctx.device("NOPE:7").unwrap_err();
    assert_eq!(err.code(), Code::DEVICE);
    assert!(err.message().contains("NOPE"), "{}", err.message());

    let g = ctx.graph().unwrap();
    let x = g.input(DType::FLOAT32, &[4, 4], None).unwrap();
    let p = g.compile(&[(x + x).unwrap()], Some(&dev), &CompileOptions::default()).unwrap();
    let wrong = dev.alloc(DType::INT32, &[4, 4]).unwrap();
    let mut out = p.alloc_output(0).unwrap();
    let err = p.run(&[&wrong], &mut [&mut out]).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("input 0"), "{}", err.message());
    assert!(p.run(&[], &mut [&mut out]).is_err(), "missing input");

    // Typed copies check the dtype on the Rust side and the size on the C side.
    let mut b = dev.alloc(DType::FLOAT32, &[4]).unwrap();
    assert!(b.copy_from(&[1i32, 2, 3, 4]).unwrap_err().message().contains("float32"));
    assert_eq!(b.copy_from(&[1f32, 2.0]).unwrap_err().code(), Code::INVALID_ARG);
    b.copy_from(&[1f32, 2.0, 3.0, 4.0]).unwrap();
    assert_eq!(b.nbytes(), 16);
    assert_eq!(b.numel(), 4);
    // A view shares memory.
    let v = unsafe { b.view(2, &[2]) }.unwrap();
    assert_eq!(v.to_vec::<f32>().unwrap(), vec![3.0, 4.0]);
    assert!(unsafe { b.view(3, &[2]) }.is_err(), "a view past the end");
    assert!(p.stage("no-such-stage").is_err());
    assert!(p.alloc_output(5).is_err());
}

#[test]
fn compile_errors() {
    let ctx = Context::new().unwrap();
    let g = ctx.graph().unwrap();
    let x = g.input(DType::FLOAT32, &[2, 3], None).unwrap();
    let err = x.matmul(x).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("matmul"), "{}", err.message());
    assert!(x.softmax(5).is_err(), "axis out of range");
    let other = ctx.graph().unwrap();
    let y = other.input(DType::FLOAT32, &[2], None).unwrap();
    assert!(g.compile(&[y], None, &CompileOptions::default()).unwrap_err().message().contains("another graph"));
}

#[test]
fn launch_time_variables() {
    let ctx = Context::new().unwrap();
    let dev = cpu(&ctx);
    let g = ctx.graph().unwrap();
    let x = g.input(DType::FLOAT32, &[4], None).unwrap();
    let scale = g.var("scale", 1, 100).unwrap().cast(DType::FLOAT32).unwrap();
    let y = (x * scale).unwrap();
    let p = g.compile(&[y], Some(&dev), &CompileOptions::default()).unwrap();
    assert_eq!(p.vars().unwrap(), vec![("scale".to_string(), 1, 100)]);
    let xb = dev.buffer_from(&[4], &[1f32, 2., 3., -4.]).unwrap();
    let mut out = p.alloc_output(0).unwrap();
    p.run_with_vars(&[&xb], &mut [&mut out], &[("scale", 3)]).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![3.0, 6.0, 9.0, -12.0]);
    p.run_with_vars(&[&xb], &mut [&mut out], &[("scale", 10)]).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![10.0, 20.0, 30.0, -40.0]);
    let err = p.run_with_vars(&[&xb], &mut [&mut out], &[("scale", 0)]).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("outside its range [1, 100]"), "{}", err.message());
    let err = p.run(&[&xb], &mut [&mut out]).unwrap_err();
    assert!(err.message().contains("scale is not bound"), "{}", err.message());
}

#[test]
fn symbolic_batch_compiles_once() {
    // y = relu(x) * 2 for x of shape (b, 3), b in [1, 8]: one program, run at b = 2 and b = 4.
    let ctx = Context::new().unwrap();
    let dev = cpu(&ctx);
    let g = ctx.graph().unwrap();
    let b = g.var("b", 1, 8).unwrap();
    let three = g.const_int(DType::INDEX, 3).unwrap();
    let x = g.input_sym(DType::FLOAT32, &[b, three], None).unwrap();
    let y = (x.relu().unwrap() * 2.0).unwrap();
    let p = g.compile(&[y], Some(&dev), &CompileOptions::default()).unwrap();
    assert_eq!(p.input_info(0).unwrap().shape, vec![-1, 3]);
    assert_eq!(p.output_info(0).unwrap().shape, vec![-1, 3]);
    for rows in [2i64, 4] {
        let data: Vec<f32> = (0..rows * 3).map(|i| i as f32 - 4.0).collect();
        let xb = dev.buffer_from(&[rows, 3], &data).unwrap();
        let mut out = p.alloc_output_with_vars(0, &[("b", rows)]).unwrap();
        assert_eq!(out.shape(), vec![rows, 3]);
        p.run_with_vars(&[&xb], &mut [&mut out], &[("b", rows)]).unwrap();
        let want: Vec<f32> = data.iter().map(|v| v.max(0.0) * 2.0).collect();
        assert_eq!(out.to_vec::<f32>().unwrap(), want);
    }
    let err = p.alloc_output_with_vars(0, &[("b", 9)]).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
}

#[test]
fn symbolic_reshape_and_expand() {
    // x (b,2,3) flattened to (b,6), times w (1,6) broadcast to (b,6), summed per row; b = 2 and 4.
    let ctx = Context::new().unwrap();
    let dev = cpu(&ctx);
    let g = ctx.graph().unwrap();
    let b = g.var("b", 1, 4).unwrap();
    let (two, three, six) = (
        g.const_int(DType::INDEX, 2).unwrap(),
        g.const_int(DType::INDEX, 3).unwrap(),
        g.const_int(DType::INDEX, 6).unwrap(),
    );
    let x = g.input_sym(DType::FLOAT32, &[b, two, three], None).unwrap();
    let w = g.input(DType::FLOAT32, &[1, 6], None).unwrap();
    let prod = (x.reshape_sym(&[b, six]).unwrap() * w.expand_sym(&[b, six]).unwrap()).unwrap();
    let y = prod.sum(&[1]).unwrap();
    let p = g.compile(&[y], Some(&dev), &CompileOptions::default()).unwrap();
    let xd: Vec<f32> = (0..24).map(|i| (i % 5) as f32 - 2.0).collect();
    let wd = [1.0f32, -2.0, 0.5, 3.0, -1.0, 0.25];
    let wb = dev.buffer_from(&[1, 6], &wd).unwrap();
    for rows in [2i64, 4] {
        let xb = dev.buffer_from(&[rows, 2, 3], &xd[..(rows * 6) as usize]).unwrap();
        let mut out = p.alloc_output_with_vars(0, &[("b", rows)]).unwrap();
        p.run_with_vars(&[&xb, &wb], &mut [&mut out], &[("b", rows)]).unwrap();
        let got = out.to_vec::<f32>().unwrap();
        assert_eq!(got.len(), rows as usize);
        for (i, v) in got.iter().enumerate() {
            let want: f32 = (0..6).map(|j| xd[i * 6 + j] * wd[j]).sum();
            assert!((v - want).abs() < 1e-5, "b={rows} row {i}: {v} vs {want}");
        }
    }
    let merged = (b * two).unwrap();
    assert!(x.reshape_sym(&[merged, three]).is_err());
}
