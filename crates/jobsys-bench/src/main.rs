//! `jobsys-bench`: see the library crate (`jobsys_bench::run`).

fn main() {
    match jobsys_bench::run(std::env::args_os()) {
        Ok(()) => {}
        Err(jobsys_bench::Error::Args(e)) => e.exit(),
        Err(e) => {
            eprintln!("jobsys-bench: {e}");
            std::process::exit(1);
        }
    }
}
