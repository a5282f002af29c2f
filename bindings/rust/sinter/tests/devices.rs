//! Devices and backends (API version 4): device counts, descriptions, buffer-to-buffer copies (also between
//! devices) and ahead-of-time export as C.
use sinter::{Code, CompileOptions, Context, DType, Device, Program};

/// x * x + 1 over a float32 (3, 5) input on `dev`.
fn square_plus_one(ctx: &Context, dev: &Device) -> Program {
    let g = ctx.graph().unwrap();
    let x = g.input(DType::FLOAT32, &[3, 5], Some(dev.name().as_str())).unwrap();
    let y = ((x * x).unwrap() + 1.0).unwrap();
    g.compile(&[y], Some(dev), &CompileOptions::default()).unwrap()
}

fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

#[test]
fn device_counts_and_descriptions() {
    let ctx = Context::new().unwrap();
    assert_eq!(ctx.device_count("CPU").unwrap(), 8);
    assert_eq!(ctx.device_count("C").unwrap(), 1);
    assert!(ctx.device_count("CL").unwrap() >= 0);
    let err = ctx.device_count("METAL").unwrap_err();
    assert_eq!(err.code(), Code::NOT_FOUND);
    assert!(err.message().starts_with("sn_device_count: "), "{}", err.message());
    assert!(err.message().contains("METAL"), "{}", err.message());
    assert_eq!(ctx.device_count("NUL\0").unwrap_err().code(), Code::INVALID_ARG);

    for name in ["CPU", "C"] {
        let dev = ctx.device(name).unwrap();
        assert!(!dev.description().unwrap().is_empty(), "{name}");
    }
}

#[test]
fn export_c() {
    let ctx = Context::new().unwrap();
    let c = ctx.device("C").unwrap();
    let p = square_plus_one(&ctx, &c);
    let src = p.export_c("square_plus_one").unwrap();
    assert!(src.contains("int square_plus_one(void *const *inputs, void *const *outputs)"), "{src}");
    let err = p.export_c("1st").unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("not a C identifier"), "{}", err.message());
    // Device "C" only compiles.
    let x = c.alloc(DType::FLOAT32, &[3, 5]).unwrap();
    let mut out = p.alloc_output(0).unwrap();
    let err = p.run(&[&x], &mut [&mut out]).unwrap_err();
    assert_eq!(err.code(), Code::DEVICE);
    assert!(err.message().contains("runs nothing"), "{}", err.message());

    let cpu = ctx.device("CPU").unwrap();
    let err = square_plus_one(&ctx, &cpu).export_c("square_plus_one").unwrap_err();
    assert_eq!(err.code(), Code::UNSUPPORTED);
    assert!(err.message().starts_with("sn_program_export_c: "), "{}", err.message());
}

#[test]
fn copy_between_buffers() {
    let ctx = Context::new().unwrap();
    let cpu = ctx.device("CPU").unwrap();
    let p = square_plus_one(&ctx, &cpu);
    let x = cpu.buffer_from(&[3, 5], &ramp(15)).unwrap();
    let out = p.run_alloc(&[&x]).unwrap();
    // Same dtype and element count; the shapes may differ.
    let mut flat = cpu.alloc(DType::FLOAT32, &[15]).unwrap();
    flat.copy_from_buffer(&out[0]).unwrap();
    let want: Vec<f32> = ramp(15).iter().map(|v| v * v + 1.0).collect();
    assert_eq!(flat.to_vec::<f32>().unwrap(), want);

    let err = cpu.alloc(DType::INT32, &[3, 5]).unwrap().copy_from_buffer(&out[0]).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("does not fit"), "{}", err.message());
    let mut short = cpu.alloc(DType::FLOAT32, &[14]).unwrap();
    assert_eq!(short.copy_from_buffer(&out[0]).unwrap_err().code(), Code::INVALID_ARG);

    // Views of one buffer: disjoint ones copy, overlapping ones are refused.
    let b = cpu.buffer_from(&[4], &[1f32, 2., 3., 4.]).unwrap();
    let (mut lo, hi, mid) = unsafe { (b.view(0, &[2]).unwrap(), b.view(2, &[2]).unwrap(), b.view(1, &[2]).unwrap()) };
    lo.copy_from_buffer(&hi).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![3.0, 4.0, 3.0, 4.0]);
    let err = lo.copy_from_buffer(&mid).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("overlaps"), "{}", err.message());
}

#[test]
fn copy_across_devices() {
    let ctx = Context::new().unwrap();
    if ctx.device_count("CL").unwrap() == 0 {
        eprintln!("no OpenCL device: skipped");
        return;
    }
    let cl = ctx.device("CL").unwrap();
    assert!(!cl.description().unwrap().is_empty());
    let cpu = ctx.device("CPU").unwrap();
    let src = cpu.buffer_from(&[3, 5], &ramp(15)).unwrap();
    let mut on_cl = cl.alloc(DType::FLOAT32, &[3, 5]).unwrap();
    assert_eq!(on_cl.device_name(), cl.name());
    on_cl.copy_from_buffer(&src).unwrap();
    let mut back = cpu.alloc(DType::FLOAT32, &[3, 5]).unwrap();
    back.copy_from_buffer(&on_cl).unwrap();
    assert_eq!(back.to_vec::<f32>().unwrap(), ramp(15));
}

#[test]
fn gpu_targets_compile_without_a_gpu() {
    let ctx = Context::new().unwrap();
    let cuda = Device::open_target(&ctx, "CUDA", "sm_80").unwrap();
    assert_eq!(cuda.name(), "CUDA");
    let p = square_plus_one(&ctx, &cuda);
    let ptx = p.kernel_source(0).unwrap();
    assert!(ptx.contains(".target sm_80"), "{ptx}");
    assert_eq!(p.kernel_binary(0).unwrap(), ptx.as_bytes());
    let amd = Device::open_target(&ctx, "AMD", "gfx1100").unwrap();
    let code_object = square_plus_one(&ctx, &amd).kernel_binary(0).unwrap();
    assert_eq!(&code_object[..4], b"\x7fELF");
    let err = Device::open_target(&ctx, "CUDA", "sm_1").unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("sm_1"), "{}", err.message());
    let cpu = ctx.device("CPU").unwrap();
    assert_eq!(square_plus_one(&ctx, &cpu).kernel_binary(0).unwrap_err().code(), Code::UNSUPPORTED);
}
