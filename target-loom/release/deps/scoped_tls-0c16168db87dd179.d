/work/main/target-loom/release/deps/scoped_tls-0c16168db87dd179.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/scoped-tls-1.0.1/src/lib.rs

/work/main/target-loom/release/deps/libscoped_tls-0c16168db87dd179.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/scoped-tls-1.0.1/src/lib.rs

/work/main/target-loom/release/deps/libscoped_tls-0c16168db87dd179.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/scoped-tls-1.0.1/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/scoped-tls-1.0.1/src/lib.rs:
