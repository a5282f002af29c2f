//! Graph building through the safe API: values, shapes, args, printing, simplification and error paths.
use sinter::{Arg, AxisType, Code, Context, DType, Dim, Graph, Op, UOp};

fn graph() -> Graph {
    Context::new().expect("context").graph().expect("graph")
}

fn mat<'g>(g: &'g Graph, rows: i64, cols: i64) -> UOp<'g> {
    g.buffer(DType::FLOAT32, rows * cols, Some("CPU")).unwrap().reshape(&[rows, cols]).unwrap()
}

#[test]
fn version_matches_header() {
    assert_eq!(sinter::version_number(), sinter::HEADER_VERSION);
    assert!(sinter::version().starts_with("0."), "{}", sinter::version());
}

#[test]
fn elementwise_reduce_and_shapes() {
    let g = graph();
    let a = mat(&g, 2, 3);
    let b = mat(&g, 2, 3);
    let y = ((a + b).unwrap() * 2.0).unwrap();
    assert_eq!(y.op(), Op::MUL);
    assert_eq!(y.dtype(), DType::FLOAT32);
    assert_eq!(y.static_shape().unwrap(), vec![2, 3]);
    let s = y.sum(&[1]).unwrap();
    assert_eq!(s.op(), Op::REDUCE);
    assert_eq!(s.static_shape().unwrap(), vec![2, 1], "reduced axes keep size 1");
    assert_eq!(s.arg().unwrap(), Arg::Reduce { op: Op::ADD, axes: vec![1] });
    assert_eq!(s.device().unwrap(), "CPU");
    let srcs = s.srcs();
    assert_eq!(srcs, vec![y]);
    // Comparisons give bool; where picks its second source's dtype.
    let m = a.lt(b).unwrap();
    assert_eq!(m.dtype(), DType::BOOL);
    assert_eq!(m.where_(a, b).unwrap().dtype(), DType::FLOAT32);
    assert_eq!((-a).unwrap().op(), Op::NEG);
    assert_eq!((a - b).unwrap().op(), Op::SUB);
}

#[test]
fn hash_consing_makes_equal_nodes_identical() {
    let g = graph();
    let x = g.const_float(DType::FLOAT32, 1.5).unwrap();
    let y = g.const_float(DType::FLOAT32, 1.5).unwrap();
    assert_eq!(x, y);
    let n = g.node_count();
    let _ = g.const_float(DType::FLOAT32, 1.5).unwrap();
    assert_eq!(g.node_count(), n);
    assert_ne!(x, g.const_float(DType::FLOAT32, 2.5).unwrap());
    assert_eq!(x.arg().unwrap(), Arg::Float(1.5));
}

#[test]
fn generic_builder_and_arg_round_trip() {
    let g = graph();
    let x = g.param(0, DType::FLOAT32, &[2, 3, 4], Some("CPU")).unwrap();
    assert_eq!(
        x.arg().unwrap(),
        Arg::Param { slot: 0, device: Some("CPU".into()), addrspace: sinter::AddrSpace::GLOBAL }
    );
    // A Permute built through the generic builder equals the typed builder's node.
    let p = g.node(Op::PERMUTE, DType::FLOAT32, &[x], &Arg::Ints(vec![2, 0, 1])).unwrap();
    assert_eq!(p, x.permute(&[2, 0, 1]).unwrap());
    assert_eq!(p.static_shape().unwrap(), vec![4, 2, 3]);
    let c = g.node(Op::CAST, DType::INT32, &[x], &Arg::DType(DType::INT32)).unwrap();
    assert_eq!(c, x.cast(DType::INT32).unwrap());
    let v = g.var("n", 1, 16).unwrap();
    assert_eq!(v.arg().unwrap(), Arg::Var { name: "n".into(), min: 1, max: 16 });
    let r = g
        .node(
            Op::RANGE,
            DType::INDEX,
            &[g.const_int(DType::INDEX, 8).unwrap()],
            &Arg::Range { id: 0, axis_type: AxisType::LOOP },
        )
        .unwrap();
    assert_eq!(r.arg().unwrap(), Arg::Range { id: 0, axis_type: AxisType::LOOP });
    assert_eq!(r.min_max_int().unwrap(), (0, 7, false));
}

#[test]
fn symbolic_shapes_and_simplify() {
    let g = graph();
    let i = g.var("i", 0, 9).unwrap();
    // ((i * 4) + 3) // 4 is i for i in [0, 9].
    let e = ((i * 4i64).unwrap() + 3i64).unwrap().idiv(g.const_int(DType::INDEX, 4).unwrap()).unwrap();
    assert_ne!(e, i);
    assert_eq!(e.simplify().unwrap(), i);
    assert_eq!(e.min_max_int().unwrap(), (0, 9, false));
    // A shrink to a symbolic length reports that dimension as its uop.
    let n = g.var("n", 1, 8).unwrap();
    let stack = |x: UOp<'_>| g.node(Op::STACK, DType::INDEX, &[x], &Arg::None).unwrap();
    let buf = g.buffer(DType::FLOAT32, 8, None).unwrap();
    let zero = g.const_int(DType::INDEX, 0).unwrap();
    let part = g.node(Op::SHRINK, DType::FLOAT32, &[buf, stack(zero), stack(n)], &Arg::None).unwrap();
    match &part.shape().unwrap().unwrap()[..] {
        [Dim::Sym(s)] => assert_eq!(*s, n),
        other => panic!("expected one symbolic dim, got {other:?}"),
    }
    assert!(part.static_shape().unwrap_err().message().contains("symbolic"));
    assert_eq!(g.sink(&[buf]).unwrap().shape().unwrap(), None, "void nodes have no shape");
    let (lo, hi) = g.const_float(DType::FLOAT32, 2.0).unwrap().sqrt().unwrap().min_max_float().unwrap();
    assert!(lo <= hi);
}

#[test]
fn printing() {
    let g = graph();
    let a = mat(&g, 2, 2);
    let y = (a * a).unwrap();
    let s = y.to_sexpr().unwrap();
    assert!(s.contains("(mul "), "{s}");
    assert_eq!(format!("{y}"), s);
    assert!(y.to_tree().unwrap().contains("float32"));
    assert!(y.to_dot().unwrap().contains("digraph"));
    assert_eq!(Op::ADD.to_string(), "Add");
    assert_eq!(DType::FLOAT32.to_string(), "float32");
    assert_eq!(format!("{:?}", Code::INVALID_ARG), "Code::INVALID_ARG");
}

#[test]
fn every_op_and_dtype_is_known_to_the_library() {
    for &op in Op::ALL.iter().filter(|&&o| o != Op::INVALID) {
        assert!(op.name().is_some(), "{op:?} has no name in libsinter");
    }
    for &dt in DType::ALL.iter().filter(|&&d| d != DType::INVALID) {
        assert!(dt.name().is_some(), "{dt:?} has no name in libsinter");
    }
    // The crate names every op the library has: the value after the last known one has no name.
    let next = Op::ALL.iter().map(|o| o.raw()).max().unwrap() + 1;
    assert_eq!(Op::from_raw(next).name(), None, "libsinter has ops this crate does not name");
}

// ---- error paths: the C message arrives as Err ----

#[test]
fn shape_error_carries_the_c_message() {
    let g = graph();
    let a = mat(&g, 2, 3);
    let err = a.reshape(&[4, 2]).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("sn_uop_reshape"), "{}", err.message());
    assert!(err.message().contains("(2,3)") && err.message().contains("(4,2)"), "{}", err.message());
    assert!(err.to_string().contains("INVALID_ARG"));
    // Shapes that do not broadcast.
    let b = mat(&g, 3, 5);
    let err = (a + b).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(!err.message().is_empty());
}

#[test]
fn dtype_and_arg_errors() {
    let g = graph();
    assert_eq!(g.const_float(DType::INT32, 1.5).unwrap_err().code(), Code::INVALID_ARG);
    let a = mat(&g, 2, 2);
    // A float constant for an int tensor goes through the same check.
    let i = g.buffer(DType::INT32, 4, None).unwrap();
    assert!((i * 2.5).is_err());
    assert!(a.reduce(Op::SUB, &[0]).is_err(), "only ADD, MAX, MUL reduce");
    assert!(a.permute(&[0, 0]).is_err());
    assert!(a.pad(&[0], &[1, 2]).is_err(), "mismatched offsets/sizes are caught before the call");
    assert!(g.var("bad\0name", 0, 1).unwrap_err().message().contains("NUL"));
    assert!(g.node(Op::from_raw(9999), DType::FLOAT32, &[], &Arg::None).unwrap_err().message().contains("9999"));
    assert!(a.min_max_int().is_err(), "float nodes have no integer bounds");
}

#[test]
fn uops_of_another_graph_are_rejected() {
    let ctx = Context::new().unwrap();
    let g1 = ctx.graph().unwrap();
    let g2 = ctx.graph().unwrap();
    let a = g1.const_int(DType::INT32, 1).unwrap();
    let b = g2.const_int(DType::INT32, 1).unwrap();
    let err = a.binary(Op::ADD, b).unwrap_err();
    assert!(err.message().contains("another graph"), "{}", err.message());
}

#[test]
fn context_and_graph_cross_threads_as_documented() {
    let ctx = Context::new().unwrap();
    // Context: Send + Sync, shared by reference across threads.
    std::thread::scope(|s| {
        for t in 0..2 {
            let ctx = &ctx;
            s.spawn(move || {
                let g = ctx.graph().unwrap();
                let x = g.const_int(DType::INT64, t).unwrap();
                assert_eq!(x.arg().unwrap(), Arg::Int(t));
            });
        }
    });
    // Graph: Send, moved to another thread and back.
    let g = ctx.graph().unwrap();
    let g = std::thread::spawn(move || {
        g.const_int(DType::INT32, 7).unwrap();
        g
    })
    .join()
    .unwrap();
    assert!(g.node_count() >= 1);
    // Clones share the context; dropping the original keeps the clone (and the graph's context) alive.
    let c2 = ctx.clone();
    drop(ctx);
    assert!(c2.graph().is_ok());
}

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send>() {}

#[test]
fn auto_traits() {
    assert_send_sync::<Context>();
    assert_send::<Graph>();
    assert_send_sync::<sinter::Error>();
}
