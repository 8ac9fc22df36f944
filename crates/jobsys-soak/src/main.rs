//! `jobsys-soak`: see the library crate (`jobsys_soak::run`).

fn main() {
    match jobsys_soak::run(std::env::args_os()) {
        Ok(()) => {}
        Err(jobsys_soak::Error::Args(e)) => e.exit(),
        Err(e) => {
            eprintln!("jobsys-soak: {e}");
            std::process::exit(1);
        }
    }
}
