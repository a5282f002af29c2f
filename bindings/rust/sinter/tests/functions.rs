//! Functions, Index, Slice and Binary (API version 5), and Stack, through the safe crate, checked against
//! hand-computed values.
use sinter::{Code, CompileOptions, Context, DType, FunctionFlags, Result};

fn relu(v: f32) -> f32 {
    v.max(0.0)
}

#[test]
fn function_called_twice_on_different_arguments() -> Result<()> {
    let ctx = Context::new()?;
    let cpu = ctx.device("CPU")?;
    let g = ctx.graph()?;
    let f = g.function(&[(DType::FLOAT32, &[4]), (DType::FLOAT32, &[4])])?;
    assert_eq!((f.num_params(), f.num_outputs()), (2, None));
    let [p0, p1] = f.params()?[..] else { panic!("two parameters") };
    f.end(&[(p0 + p1)?.relu()?])?; // relu(a + b)
    assert_eq!(f.num_outputs(), Some(1));
    let a = g.input(DType::FLOAT32, &[4], None)?;
    let b = g.input(DType::FLOAT32, &[4], None)?;
    let c = g.input(DType::FLOAT32, &[4], None)?;
    let y1 = f.call(&[a, b])?[0];
    let y2 = f.call(&[c, a])?[0];
    let p = g.compile(&[y1, y2], Some(&cpu), &CompileOptions::default())?;
    let (av, bv, cv) = ([1f32, -2., 3., -4.], [0.5f32, 1., -5., 2.], [-1f32, 4., 1., 5.]);
    let outs =
        p.run_alloc(&[&cpu.buffer_from(&[4], &av)?, &cpu.buffer_from(&[4], &bv)?, &cpu.buffer_from(&[4], &cv)?])?;
    let (r1, r2) = (outs[0].to_vec::<f32>()?, outs[1].to_vec::<f32>()?);
    assert_eq!(r1, vec![1.5, 0.0, 0.0, 0.0]);
    assert_eq!(r2, vec![0.0, 2.0, 4.0, 1.0]);
    for i in 0..4 {
        assert_eq!(r1[i], relu(av[i] + bv[i]));
        assert_eq!(r2[i], relu(cv[i] + av[i]));
    }
    Ok(())
}

#[test]
fn precompiled_function_called_three_times() -> Result<()> {
    let ctx = Context::new()?;
    let cpu = ctx.device("CPU")?;
    let g = ctx.graph()?;
    // two outputs: (x * y + 1, x - y)
    let f = g.function(&[(DType::FLOAT32, &[2, 2]), (DType::FLOAT32, &[2, 2])])?;
    f.set_flags(FunctionFlags::PRECOMPILE)?;
    let (x, y) = (f.param(0)?, f.param(1)?);
    f.end(&[((x * y)? + 1.0)?, (x - y)?])?;
    assert_eq!(f.num_outputs(), Some(2));
    let a = g.input(DType::FLOAT32, &[2, 2], None)?;
    let b = g.input(DType::FLOAT32, &[2, 2], None)?;
    let r1 = f.call(&[a, b])?; // (ab + 1, a - b)
    let r2 = f.call(&[r1[0], r1[1]])?; // on the first call's results
    let r3 = f.call(&[b, a])?; // (ba + 1, b - a)
    let p = g.compile(&[r2[0], r2[1], r3[1]], Some(&cpu), &CompileOptions::default())?;
    let (av, bv) = ([1f32, 2., -3., 0.5], [2f32, -1., 4., 4.]);
    let outs = p.run_alloc(&[&cpu.buffer_from(&[2, 2], &av)?, &cpu.buffer_from(&[2, 2], &bv)?])?;
    let (o0, o1, o2) = (outs[0].to_vec::<f32>()?, outs[1].to_vec::<f32>()?, outs[2].to_vec::<f32>()?);
    for i in 0..4 {
        let (s, d) = (av[i] * bv[i] + 1.0, av[i] - bv[i]);
        assert_eq!(o0[i], s * d + 1.0, "r2[0][{i}]");
        assert_eq!(o1[i], s - d, "r2[1][{i}]");
        assert_eq!(o2[i], bv[i] - av[i], "r3[1][{i}]");
    }
    // by hand for the first element: a=1, b=2 -> (3, -1) -> (-2, 4)
    assert_eq!((o0[0], o1[0], o2[0]), (-2.0, 4.0, 1.0));
    // the flags can be cleared again; calls made afterwards are substituted, with the same numbers
    f.set_flags(FunctionFlags::NONE)?;
    let r4 = f.call(&[a, b])?;
    let p = g.compile(&[r4[0]], Some(&cpu), &CompileOptions::default())?;
    let outs = p.run_alloc(&[&cpu.buffer_from(&[2, 2], &av)?, &cpu.buffer_from(&[2, 2], &bv)?])?;
    assert_eq!(outs[0].to_vec::<f32>()?, vec![3.0, -1.0, -11.0, 3.0]);
    Ok(())
}

#[test]
fn function_errors_carry_the_c_message() -> Result<()> {
    let ctx = Context::new()?;
    let g = ctx.graph()?;
    let f = g.function(&[(DType::FLOAT32, &[4]), (DType::FLOAT32, &[4])])?;
    let a = g.input(DType::FLOAT32, &[4], None)?;
    let wrong = g.input(DType::FLOAT32, &[5], None)?;
    let err = f.call(&[a, a]).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("no body yet"), "{}", err.message());
    f.end(&[(f.param(0)? * f.param(1)?)?])?;
    let err = f.call(&[a, wrong]).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().starts_with("sn_function_call: "), "{}", err.message());
    assert!(err.message().contains("argument 1 is float32 (5,)"), "{}", err.message());
    let err = f.call(&[a]).unwrap_err();
    assert!(err.message().contains("takes 2 arguments"), "{}", err.message());
    let err = f.end(&[a]).unwrap_err();
    assert!(err.message().contains("ended already"), "{}", err.message());
    let err = f.param(2).unwrap_err();
    assert!(err.message().contains("out of range"), "{}", err.message());
    let err = f.set_flags(FunctionFlags::from_bits(8)).unwrap_err();
    assert!(err.message().contains("unknown flags"), "{}", err.message());
    // a node of another graph is refused before the C call
    let other = ctx.graph()?;
    let x = other.input(DType::FLOAT32, &[4], None)?;
    let err = f.call(&[a, x]).unwrap_err();
    assert!(err.message().contains("another graph"), "{}", err.message());
    Ok(())
}

#[test]
fn index_gathers_rows_and_reads_zero_out_of_range() -> Result<()> {
    let ctx = Context::new()?;
    let cpu = ctx.device("CPU")?;
    let g = ctx.graph()?;
    let table = g.input(DType::FLOAT32, &[3, 2], None)?;
    let idx = g.input(DType::INT32, &[4], None)?;
    let rows = table.index(&[idx])?;
    assert_eq!(rows.static_shape()?, vec![4, 2]);
    let p = g.compile(&[rows], Some(&cpu), &CompileOptions::default())?;
    let tv = [10f32, 11., 20., 21., 30., 31.];
    let out = p.run_alloc(&[&cpu.buffer_from(&[3, 2], &tv)?, &cpu.buffer_from(&[4], &[2i32, 0, 5, 1])?])?;
    // rows 2, 0, (5 is outside the axis: zeros), 1
    assert_eq!(out[0].to_vec::<f32>()?, vec![30.0, 31.0, 10.0, 11.0, 0.0, 0.0, 20.0, 21.0]);
    // a float index tensor is an error naming the rule
    let err = table.index(&[table]).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("integer"), "{}", err.message());
    Ok(())
}

#[test]
fn slice_reinterprets_storage() -> Result<()> {
    let ctx = Context::new()?;
    let cpu = ctx.device("CPU")?;
    let g = ctx.graph()?;
    let table = g.input(DType::FLOAT32, &[3, 2], None)?;
    let two = table.slice(3, 2, DType::FLOAT32)?; // elements 3 and 4 of the row-major storage
    assert_eq!(two.static_shape()?, vec![2]);
    let bits = table.slice(1, 1, DType::INT32)?; // element 1's bits
    let p = g.compile(&[two, bits], Some(&cpu), &CompileOptions::default())?;
    let tv = [10f32, 11., 20., 21., 30., 31.];
    let out = p.run_alloc(&[&cpu.buffer_from(&[3, 2], &tv)?])?;
    assert_eq!(out[0].to_vec::<f32>()?, vec![21.0, 30.0]);
    assert_eq!(out[1].to_vec::<i32>()?, vec![11f32.to_bits() as i32]);
    assert_eq!(11f32.to_bits(), 0x4130_0000);
    // past the end
    let err = table.slice(5, 2, DType::FLOAT32).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().starts_with("sn_tensor_slice: "), "{}", err.message());
    assert!(err.message().contains("run past"), "{}", err.message());
    Ok(())
}

#[test]
fn binary_constant_bytes_as_f32() -> Result<()> {
    let ctx = Context::new()?;
    let cpu = ctx.device("CPU")?;
    let g = ctx.graph()?;
    let consts = [0.5f32, -4.0, 7.25];
    let bytes: Vec<u8> = consts.iter().flat_map(|v| v.to_le_bytes()).collect();
    let bin = g.binary(&bytes)?;
    assert_eq!((bin.dtype(), bin.static_shape()?), (DType::UINT8, vec![12]));
    let x = g.input(DType::FLOAT32, &[3], None)?;
    let scaled = (x * bin.bitcast(DType::FLOAT32)?)?; // x * [0.5, -4, 7.25]
    let tail = bin.slice(4, 2, DType::FLOAT32)?; // bytes 4.. as two f32: [-4, 7.25]
    let p = g.compile(&[scaled, tail], Some(&cpu), &CompileOptions::default())?;
    let out = p.run_alloc(&[&cpu.buffer_from(&[3], &[2f32, 3., -1.])?])?;
    assert_eq!(out[0].to_vec::<f32>()?, vec![1.0, -12.0, -7.25]);
    assert_eq!(out[1].to_vec::<f32>()?, vec![-4.0, 7.25]);
    let err = bin.slice(8, 2, DType::FLOAT32).unwrap_err(); // 8 + 8 bytes > 12
    assert!(err.message().contains("run past"), "{}", err.message());
    Ok(())
}

#[test]
fn stack_values_along_each_axis() -> Result<()> {
    let ctx = Context::new()?;
    let cpu = ctx.device("CPU")?;
    let g = ctx.graph()?;
    let a = g.input(DType::FLOAT32, &[3], None)?;
    let b = g.input(DType::FLOAT32, &[3], None)?;
    let (s0, s1) = (g.stack(&[a, b], 0)?, g.stack(&[a, b], -1)?);
    assert_eq!((s0.static_shape()?, s1.static_shape()?), (vec![2, 3], vec![3, 2]));
    let p = g.compile(&[s0, s1], Some(&cpu), &CompileOptions::default())?;
    let out = p.run_alloc(&[&cpu.buffer_from(&[3], &[1f32, 2., 3.])?, &cpu.buffer_from(&[3], &[4f32, 5., 6.])?])?;
    assert_eq!(out[0].to_vec::<f32>()?, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(out[1].to_vec::<f32>()?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    assert_eq!(g.stack(&[a, b], 2).unwrap_err().code(), Code::INVALID_ARG);
    Ok(())
}
