//! Writes a store of recorded calls for the console's benchmark (`bench/console.sh`,
//! docs/performance.md): `cargo run --release -p switchyard-console --example
//! generate_store -- DIR [N]` (N: 1,000,000 by default). The same generator the
//! console's tests use (`tests/common/generate.rs`).

#[path = "../tests/common/generate.rs"]
mod generate;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: generate_store DIR [N]");
        std::process::exit(2);
    };
    let n: u64 = match args.next().map(|s| s.parse()) {
        None => 1_000_000,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("N: expected a whole number of calls");
            std::process::exit(2);
        }
    };
    let dir = std::path::PathBuf::from(dir);
    if dir.join(switchyard::record::INDEX_FILE).exists() {
        eprintln!("{} already holds a store", dir.display());
        std::process::exit(1);
    }
    let started = std::time::Instant::now();
    generate::generate(&dir, n);
    println!(
        "{n} calls written into {} in {:.1?}",
        dir.display(),
        started.elapsed()
    );
}
