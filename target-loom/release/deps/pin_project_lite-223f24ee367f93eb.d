/work/main/target-loom/release/deps/pin_project_lite-223f24ee367f93eb.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pin-project-lite-0.2.17/src/lib.rs

/work/main/target-loom/release/deps/libpin_project_lite-223f24ee367f93eb.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pin-project-lite-0.2.17/src/lib.rs

/work/main/target-loom/release/deps/libpin_project_lite-223f24ee367f93eb.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pin-project-lite-0.2.17/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pin-project-lite-0.2.17/src/lib.rs:
