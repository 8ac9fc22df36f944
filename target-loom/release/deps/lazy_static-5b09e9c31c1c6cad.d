/work/main/target-loom/release/deps/lazy_static-5b09e9c31c1c6cad.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/lazy_static-1.5.1/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/lazy_static-1.5.1/src/inline_lazy.rs

/work/main/target-loom/release/deps/liblazy_static-5b09e9c31c1c6cad.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/lazy_static-1.5.1/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/lazy_static-1.5.1/src/inline_lazy.rs

/work/main/target-loom/release/deps/liblazy_static-5b09e9c31c1c6cad.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/lazy_static-1.5.1/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/lazy_static-1.5.1/src/inline_lazy.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/lazy_static-1.5.1/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/lazy_static-1.5.1/src/inline_lazy.rs:
