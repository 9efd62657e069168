//! `cargo run --release -p snap-benches --example floor -- DIR`: times the floor walk of DIR.

#![allow(missing_docs)]

fn main() -> std::io::Result<()> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| ".".into());
    for _ in 0..3 {
        let start = std::time::Instant::now();
        let n = snap_benches::floor_walk(std::path::Path::new(&dir), 2)?;
        println!(
            "floor: {n} entries in {:.1} ms",
            start.elapsed().as_secs_f64() * 1e3
        );
    }
    Ok(())
}
