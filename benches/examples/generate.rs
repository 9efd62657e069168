//! `cargo run --release -p snap-benches --example generate -- DIR [FILES] [SEED]`: writes the
//! bench's workload into DIR, so that a case can be profiled outside the bench
//! (`SNAP_BENCH_SHAPE=real` for the real-repository shape).

#![allow(missing_docs)]

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().unwrap_or_else(|| "snap-workload".into());
    let files = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let seed = args.next().and_then(|s| s.parse().ok()).unwrap_or(42);
    let shape = snap_benches::Shape::from_env();
    let w = shape.generate(std::path::Path::new(&dir), files, seed)?;
    println!(
        "{} files in {} directories, {} MB",
        w.files,
        w.dirs,
        w.bytes >> 20
    );
    Ok(())
}
