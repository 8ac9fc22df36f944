//! `jobsys-lab`: see the library crate (`jobsys_lab::run`).

fn main() {
    match jobsys_lab::run(std::env::args_os()) {
        Ok(()) => {}
        Err(jobsys_lab::Error::Args(e)) => e.exit(),
        Err(e) => {
            eprintln!("jobsys-lab: {e}");
            std::process::exit(1);
        }
    }
}
