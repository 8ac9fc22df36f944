/work/main/target-loom/release/deps/matchers-77b3ac4974fcfcf4.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/matchers-0.2.0/src/lib.rs

/work/main/target-loom/release/deps/libmatchers-77b3ac4974fcfcf4.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/matchers-0.2.0/src/lib.rs

/work/main/target-loom/release/deps/libmatchers-77b3ac4974fcfcf4.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/matchers-0.2.0/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/matchers-0.2.0/src/lib.rs:
