//! Kernel opts as data, BEAM search and the disk-cache switch (API version 6), through the safe API.
use sinter::{Code, CompileOptions, Context, DType, Device, Graph, UOp};

/// A row-sum of squares of an (8,64) f32 input, its input data and the hand-computed sums (exact in f32: the
/// values are small integers).
fn row_sum_of_squares(g: &Graph) -> (UOp<'_>, Vec<f32>, Vec<f32>) {
    let x = g.input(DType::FLOAT32, &[8, 64], None).unwrap();
    let y = (x * x).unwrap().sum(&[1]).unwrap();
    let data: Vec<f32> = (0..512).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let want: Vec<f32> = data.chunks(64).map(|row| row.iter().map(|v| v * v).sum()).collect();
    (y, data, want)
}

fn run(p: &sinter::Program, dev: &Device, data: &[f32]) -> Vec<f32> {
    let input = dev.buffer_from(&[8, 64], data).unwrap();
    p.run_alloc(&[&input]).unwrap()[0].to_vec::<f32>().unwrap()
}

/// "<16 hex digits>: <opts>"
fn is_opts_line(line: &str) -> bool {
    line.len() >= 17 && line.as_bytes()[..16].iter().all(|c| c.is_ascii_hexdigit()) && line.as_bytes()[16] == b':'
}

#[test]
fn kernel_opts_round_trip() {
    let ctx = Context::new().unwrap();
    let dev = ctx.device("CPU").unwrap();
    let g = ctx.graph().unwrap();
    let (y, data, want) = row_sum_of_squares(&g);

    let heuristic = CompileOptions { beam: Some(0), ..Default::default() };
    let p = g.compile(&[y], Some(&dev), &heuristic).unwrap();
    assert_eq!(p.kernel_names().len(), 1);
    let line = p.kernel_opts(0).unwrap();
    assert!(is_opts_line(&line), "{line:?}");
    assert!(line[17..].contains("UNROLL("), "the heuristic's vector accumulator of a row sum: {line:?}");
    assert_eq!(run(&p, &dev, &data), want);
    assert_eq!(p.kernel_opts(1).unwrap_err().code(), Code::INVALID_ARG);

    // Forced back (and not served from the program cache): the identical line, the same numbers.
    let forced =
        CompileOptions { kernel_opts: vec![line.clone()], use_cache: false, beam: Some(0), ..Default::default() };
    let q = g.compile(&[y], Some(&dev), &forced).unwrap();
    assert_eq!(q.kernel_opts(0).unwrap(), line);
    assert_eq!(run(&q, &dev, &data), want);

    // Nothing after the colon: no opts at all for that kernel, still the right numbers.
    let bare = CompileOptions { kernel_opts: vec![line[..17].to_string()], use_cache: false, ..Default::default() };
    let r = g.compile(&[y], Some(&dev), &bare).unwrap();
    assert_eq!(r.kernel_opts(0).unwrap(), &line[..17]);
    assert_eq!(run(&r, &dev, &data), want);
}

#[test]
fn beam_search_numbers() {
    let ctx = Context::new().unwrap();
    ctx.set_disk_cache(false).unwrap(); // search here, not a result another test kept on disk
    let dev = ctx.device("CPU").unwrap();
    let g = ctx.graph().unwrap();
    let (y, data, want) = row_sum_of_squares(&g);
    let p = g.compile(&[y], Some(&dev), &CompileOptions { beam: Some(2), ..Default::default() }).unwrap();
    assert!(is_opts_line(&p.kernel_opts(0).unwrap()));
    assert_eq!(run(&p, &dev, &data), want);

    let err = g.compile(&[y], Some(&dev), &CompileOptions { beam: Some(65), ..Default::default() }).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("beam"), "{err}");
    let err = g.compile(&[y], Some(&dev), &CompileOptions { beam: Some(u32::MAX), ..Default::default() }).unwrap_err();
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("4294967295"), "{err}");
}

#[test]
fn kernel_opts_errors() {
    let ctx = Context::new().unwrap();
    let dev = ctx.device("CPU").unwrap();
    let g = ctx.graph().unwrap();
    let (y, _, _) = row_sum_of_squares(&g);
    let compile = |lines: &[&str]| {
        let opts = CompileOptions { kernel_opts: lines.iter().map(|l| l.to_string()).collect(), ..Default::default() };
        g.compile(&[y], Some(&dev), &opts).unwrap_err()
    };
    let err = compile(&["not a line"]);
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("<kernel id>: <opts>"), "{err}");
    let err = compile(&["00000000000000ab: UPCAST(0,4)"]);
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("does not have"), "{err}");
    let err = compile(&["00000000000000ab: UPCAST(0,4) WIDEN(1)"]);
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("'WIDEN(1)' is not an opt"), "{err}");
    // An interior NUL cannot cross into C.
    let err = compile(&["00000000000000ab:\0 UPCAST(0,4)"]);
    assert_eq!(err.code(), Code::INVALID_ARG);
    assert!(err.message().contains("NUL"), "{err}");
}

#[test]
fn disk_cache_switch() {
    let ctx = Context::new().unwrap();
    ctx.set_disk_cache(false).unwrap();
    let dev = ctx.device("CPU").unwrap();
    let g = ctx.graph().unwrap();
    let (y, data, want) = row_sum_of_squares(&g);
    let p = g.compile(&[y], Some(&dev), &CompileOptions { use_cache: false, ..Default::default() }).unwrap();
    assert_eq!(run(&p, &dev, &data), want);
    ctx.set_disk_cache(true).unwrap();
    let p = g.compile(&[y], Some(&dev), &CompileOptions { use_cache: false, ..Default::default() }).unwrap();
    assert_eq!(run(&p, &dev, &data), want);
}
