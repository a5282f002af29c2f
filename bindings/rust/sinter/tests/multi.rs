//! Multi-device programs (API version 8): a sharded input, shard/to, and allreduce, with values.
use sinter::{Code, CompileOptions, Context, DType};

#[test]
fn sharded_program_and_collectives() {
    let ctx = Context::new().unwrap();
    let dev = ctx.device("CPU").unwrap();
    assert_eq!(ctx.device_count("CPU").unwrap(), 8);
    let g = ctx.graph().unwrap();
    // each of two devices holds 4 values: (1,2,3,4) and (10,20,30,40); allreduce sums them
    let x = g.input(DType::FLOAT32, &[8], None).unwrap();
    let s = x.shard("CPU:0,CPU:1", 0).unwrap();
    assert_eq!(s.axis().unwrap(), Some(0));
    let sum = s.allreduce().unwrap();
    assert_eq!(sum.axis().unwrap(), None);
    let twice = (s * 2.0).unwrap().to("CPU").unwrap();
    let p = g.compile(&[sum, twice], Some(&dev), &CompileOptions::default()).unwrap();
    let xb = dev.buffer_from(&[8], &[1f32, 2., 3., 4., 10., 20., 30., 40.]).unwrap();
    let mut a = p.alloc_output(0).unwrap();
    let mut b = p.alloc_output(1).unwrap();
    p.run(&[&xb], &mut [&mut a, &mut b]).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![11.0, 22.0, 33.0, 44.0]);
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0, 8.0, 20.0, 40.0, 60.0, 80.0]);

    // bad input comes back as an error naming it
    let err = x.shard("CPU:0,CPU:1,CPU:2", 0).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("do not divide"), "{}", err.message());
    let err = x.to("CPU:9").unwrap_err();
    assert_eq!(err.code(), Code::DEVICE);
    assert!(err.message().contains("CPU:9"), "{}", err.message());
}
