/work/main/target-loom/release/deps/smallvec-4a1d69615613be45.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/smallvec-1.16.5/src/lib.rs

/work/main/target-loom/release/deps/libsmallvec-4a1d69615613be45.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/smallvec-1.16.5/src/lib.rs

/work/main/target-loom/release/deps/libsmallvec-4a1d69615613be45.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/smallvec-1.16.5/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/smallvec-1.16.5/src/lib.rs:
