//! The CMake recipe (`CMakeLists.txt` of this crate, docs/c-api.md):
//! `tests/cmake/` is a project that uses jobsys only through
//! `add_subdirectory` and `jobsys::jobsys`; this test configures and builds
//! it with cmake and runs its C++ and C programs.
//!
//! It reuses the static library of the profile these tests were built with
//! (`JOBSYS_CARGO_PROFILE=dev` for `cargo test`, so no second build), and
//! builds in `<target>/cmake-test/<profile>`. Without cmake installed the
//! test is skipped with a note, unless `JOBSYS_REQUIRE_CMAKE=1` (CI sets
//! it), which makes that a failure.

mod common;

use std::path::Path;
use std::process::Command;

fn cmake(build_dir: &Path, args: &[&str]) {
    let out = Command::new("cmake")
        .args(args)
        .current_dir(build_dir)
        .output()
        .expect("run cmake");
    assert!(
        out.status.success(),
        "cmake {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn cmake_project_links_jobsys_and_runs() {
    if Command::new("cmake").arg("--version").output().is_err() {
        assert!(
            std::env::var("JOBSYS_REQUIRE_CMAKE").as_deref() != Ok("1"),
            "cmake is not installed, and JOBSYS_REQUIRE_CMAKE=1"
        );
        eprintln!("SKIPPED: cmake is not installed (the CMake recipe was not tested)");
        return;
    }
    // The library the other tests use, so the recipe's cargo build is a no-op.
    let lib = common::static_lib();
    let profile_dir = lib.parent().expect("<target>/<profile>");
    let target_dir = profile_dir.parent().expect("<target>");
    let profile_dir_name = profile_dir.file_name().unwrap().to_str().unwrap();
    let profile = if profile_dir_name == "debug" {
        "dev"
    } else {
        profile_dir_name
    };
    let build_dir = target_dir.join("cmake-test").join(profile_dir_name);
    std::fs::create_dir_all(&build_dir).expect("create the build directory");
    let source = common::crate_dir().join("tests/cmake");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    cmake(
        &build_dir,
        &[
            "-S",
            source.to_str().unwrap(),
            "-B",
            ".",
            &format!("-DJOBSYS_CARGO={cargo}"),
            &format!("-DJOBSYS_CARGO_TARGET_DIR={}", target_dir.display()),
            &format!("-DJOBSYS_CARGO_PROFILE={profile}"),
        ],
    );
    cmake(&build_dir, &["--build", "."]);
    let out = common::run(Command::new(build_dir.join("cmake_test_cpp")), 60);
    assert!(out.contains("cmake test (C++): ok"), "{out}");
    let out = common::run(Command::new(build_dir.join("cmake_test_c")), 60);
    assert!(out.contains("cmake test (C): ok"), "{out}");
}
