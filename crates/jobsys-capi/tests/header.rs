//! `include/jobsys.h` is written by hand; this keeps it in sync with the
//! Rust side: it declares exactly the functions this crate exports, each
//! right after its comment, `tests/c/api_test.c` calls every one of them
//! (compiled and run by `c_programs.rs`, so every declaration links), and
//! its enum constants have the values the Rust side uses. Struct sizes are
//! compared in `c_programs.rs`.

use jobsys_capi::errors::{jobsys_error_name, Code};
use jobsys_capi::{config, engine, jobs};
use std::collections::BTreeSet;
use std::ffi::CStr;
use std::path::Path;

fn read(path: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// (name, the line above) of every function the header declares.
fn declared() -> Vec<(String, String)> {
    let h = read("include/jobsys.h");
    let lines: Vec<&str> = h.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let l = line.trim_start();
        if l.starts_with("typedef")
            || l.starts_with('#')
            || l.starts_with("/*")
            || l.starts_with('*')
        {
            continue;
        }
        let Some(open) = l.find('(') else { continue };
        let name = l[..open].rsplit([' ', '*']).next().unwrap_or("");
        if name.starts_with("jobsys_") {
            out.push((name.to_string(), lines[i - 1].trim().to_string()));
        }
    }
    out
}

/// Every `extern "C" fn` in `src/`, outside the files' unit tests (which
/// define C callbacks to call the library's hooks with).
fn exported() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut no_mangle = 0;
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("src")).unwrap() {
        let whole = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let src = whole.split("#[cfg(test)]\nmod tests").next().unwrap();
        no_mangle += src.matches("#[no_mangle]").count();
        for part in src.split("extern \"C\" fn ").skip(1) {
            let name: String = part
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.insert(name);
        }
    }
    assert_eq!(
        no_mangle,
        out.len(),
        "every extern \"C\" fn is #[no_mangle], and only those"
    );
    out
}

#[test]
fn the_header_declares_exactly_the_exported_functions_each_with_a_comment() {
    let declared = declared();
    let names: BTreeSet<String> = declared.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(names.len(), declared.len(), "a function is declared twice");
    let exported = exported();
    let missing: Vec<_> = exported.difference(&names).collect();
    let extra: Vec<_> = names.difference(&exported).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "jobsys.h is out of sync with src/: not declared: {missing:?}; declared but not exported: {extra:?}"
    );
    for (name, comment) in &declared {
        assert!(
            comment.ends_with("*/"),
            "{name}: its declaration should follow its comment, found {comment:?} above it"
        );
    }
}

#[test]
fn the_c_api_test_calls_every_declared_function() {
    let test = read("tests/c/api_test.c");
    let uncalled: Vec<_> = declared()
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| !test.contains(&format!("{n}(")))
        .collect();
    assert!(
        uncalled.is_empty(),
        "tests/c/api_test.c never calls {uncalled:?}"
    );
}

/// (name, value) of every `JOBSYS_X = n` enum constant in the header.
fn constants() -> Vec<(String, i32)> {
    read("include/jobsys.h")
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.trim().split_once(" = ")?;
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            Some((name.to_string(), digits.parse().ok()?))
        })
        .filter(|(name, _)| name.starts_with("JOBSYS_"))
        .collect()
}

/// `jobsys_error_name(code)` as a Rust string.
fn error_name(code: i32) -> String {
    let p = jobsys_error_name(code);
    // SAFETY: jobsys_error_name returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string()
}

#[test]
fn the_header_constants_match_the_rust_side() {
    let constants = constants();
    assert_eq!(
        constants.len(),
        15 + 5 + 3 + 3 + 4 + 4,
        "constants found in jobsys.h: {constants:?}"
    );
    for (name, value) in constants {
        if name == "JOBSYS_OK" || name.starts_with("JOBSYS_ERR_") {
            assert_eq!(error_name(value), name, "jobsys_error_name({value})");
            continue;
        }
        let rust = match name.as_str() {
            "JOBSYS_IDLE_DEFAULT" => config::IDLE_DEFAULT,
            "JOBSYS_IDLE_SPIN_THEN_SLEEP" => config::IDLE_SPIN_THEN_SLEEP,
            "JOBSYS_IDLE_WHIPPING_BOY" => config::IDLE_WHIPPING_BOY,
            "JOBSYS_IDLE_ALWAYS_SPIN" => config::IDLE_ALWAYS_SPIN,
            "JOBSYS_IDLE_ADAPTIVE" => config::IDLE_ADAPTIVE,
            "JOBSYS_PRIORITY_NORMAL" => jobs::PRIORITY_NORMAL,
            "JOBSYS_CORE_ANY" => jobs::CORE_ANY,
            "JOBSYS_CORE_PERFORMANCE" => jobs::CORE_PERFORMANCE,
            "JOBSYS_CORE_EFFICIENCY" => jobs::CORE_EFFICIENCY,
            "JOBSYS_PRIORITY_HIGH" => jobs::PRIORITY_HIGH,
            "JOBSYS_PRIORITY_LOW" => jobs::PRIORITY_LOW,
            "JOBSYS_PIN_MAIN" => engine::PIN_MAIN,
            "JOBSYS_PIN_WORKER" => engine::PIN_WORKER,
            "JOBSYS_PIN_THREAD" => engine::PIN_THREAD,
            "JOBSYS_PIN_REGISTERED" => engine::PIN_REGISTERED,
            "JOBSYS_JOB_BATCHED" => jobs::JOB_BATCHED as i32,
            "JOBSYS_JOB_PINNED" => jobs::JOB_PINNED as i32,
            "JOBSYS_JOB_BLOCKING" => jobs::JOB_BLOCKING as i32,
            "JOBSYS_JOB_KEEP_PRIORITY" => jobs::JOB_KEEP_PRIORITY as i32,
            other => panic!("{other}: a constant this test does not know; add it"),
        };
        assert_eq!(rust, value, "{name}");
    }
    assert_eq!(error_name(Code::Timeout as i32 + 1), "JOBSYS_ERR_UNKNOWN");
    let header = read("include/jobsys.h");
    assert!(
        header.contains(&format!(
            "#define JOBSYS_INLINE_DATA {}\n",
            jobs::INLINE_DATA
        )),
        "JOBSYS_INLINE_DATA in jobsys.h is not the library's {}",
        jobs::INLINE_DATA
    );
}
