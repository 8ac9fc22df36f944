//! `jobsys_config`: what `jobsys_create` reads, its defaults, and its
//! translation into a `jobsys::Builder`.
//!
//! The struct comes from C, so no field is read as a Rust enum or `bool`:
//! enums are `i32` and flags `u8`, checked here; the library's builder
//! checks the rest (worker limit, policy parameters, topology).

use crate::errors::{ffi, non_null, Code, Error, Result};
use jobsys::{Builder, IdlePolicy};
use std::ffi::{c_char, c_void};
use std::time::Duration;

/// `jobsys_idle_policy` values.
pub const IDLE_DEFAULT: i32 = 0;
pub const IDLE_SPIN_THEN_SLEEP: i32 = 1;
pub const IDLE_WHIPPING_BOY: i32 = 2;
pub const IDLE_ALWAYS_SPIN: i32 = 3;
pub const IDLE_ADAPTIVE: i32 = 4;

/// `jobsys_config.on_unobserved_panic`: (user pointer, message, length).
pub type UnobservedFn = unsafe extern "C" fn(*mut c_void, *const c_char, usize);

/// `jobsys_config` (same field order and types as the header).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Worker threads; -1: the library default (`JOBSYS_WORKERS`, else the
    /// usable CPUs minus one).
    pub workers: i32,
    /// A `jobsys_idle_policy`.
    pub idle_policy: i32,
    /// `SPIN_THEN_SLEEP`: how long an idle worker spins before sleeping.
    pub spin_us: u32,
    /// `ADAPTIVE`: the longest a worker spins.
    pub adaptive_max_spin_us: u32,
    /// `ADAPTIVE`: share of a core a worker may spend spinning, 0..=1.
    pub adaptive_cpu_cap: f32,
    /// Non-zero: workers take jobs a waiting thread needs first.
    pub priority_inheritance: u8,
    /// Non-zero: keep workers off efficiency cores.
    pub exclude_efficiency_cores: u8,
    /// Non-zero: pin each worker to its own CPU.
    pub pin_workers: u8,
    /// Non-zero: start a trace capture at once (see `trace`).
    pub trace: u8,
    /// Non-zero: follow the CPUs the process may use (affinity mask, cgroup
    /// quota, CPUs online): the active worker count becomes the smaller of
    /// `jobsys_set_active_workers`' limit and the usable CPUs minus one.
    pub follow_cpus: u8,
    /// NULL, or the `jobsys_profiler_callbacks` to call (copied by
    /// `jobsys_create`; see `profiler`).
    pub profiler: *const crate::profiler::Callbacks,
    /// NULL (print it), or called with the text of each job failure that no
    /// `jobsys_complete` read, once nothing can read it any more.
    pub on_unobserved_panic: Option<UnobservedFn>,
    /// Passed first to `on_unobserved_panic`.
    pub on_unobserved_panic_user: *mut c_void,
    /// [`CONFIG_INITIALIZED`] when `jobsys_config_init` filled the struct;
    /// anything else (a zeroed struct) is rejected by `jobsys_create`.
    pub initialized: u32,
}

/// What `jobsys_config_init` writes to `jobsys_config.initialized` ("JSCF"):
/// a zeroed config must not silently mean 0 workers and no priority
/// inheritance, and zero cannot mean "default" since `workers = 0` is valid.
pub const CONFIG_INITIALIZED: u32 = 0x4A53_4346;

impl Default for Config {
    fn default() -> Config {
        Config {
            workers: -1,
            idle_policy: IDLE_DEFAULT,
            spin_us: 30,
            adaptive_max_spin_us: 50,
            adaptive_cpu_cap: 0.1,
            priority_inheritance: 1,
            exclude_efficiency_cores: 0,
            pin_workers: 0,
            trace: 0,
            follow_cpus: 0,
            profiler: std::ptr::null(),
            on_unobserved_panic: None,
            on_unobserved_panic_user: std::ptr::null_mut(),
            initialized: CONFIG_INITIALIZED,
        }
    }
}

impl Config {
    /// The builder this configuration describes, or `Config` naming the
    /// first field that no builder could take.
    pub fn builder(&self) -> Result<Builder> {
        if self.initialized != CONFIG_INITIALIZED {
            return Err(Error::new(
                Code::Config,
                "config was not initialised with jobsys_config_init \
                 (a zeroed jobsys_config is rejected; pass NULL for the defaults)",
            ));
        }
        let mut b = Builder::default()
            .priority_inheritance(self.priority_inheritance != 0)
            .exclude_efficiency_cores(self.exclude_efficiency_cores != 0)
            .pin_workers(self.pin_workers != 0)
            .follow_cpus(self.follow_cpus != 0);
        match self.workers {
            -1 => {}
            n if n >= 0 => b = b.workers(n as usize),
            n => {
                return Err(Error::new(
                    Code::Config,
                    format!("workers = {n}: expected -1 (default) or a count >= 0"),
                ))
            }
        }
        let policy = match self.idle_policy {
            IDLE_DEFAULT => None,
            IDLE_SPIN_THEN_SLEEP => Some(IdlePolicy::SpinThenSleep {
                spin: Duration::from_micros(self.spin_us.into()),
            }),
            IDLE_WHIPPING_BOY => Some(IdlePolicy::WhippingBoy),
            IDLE_ALWAYS_SPIN => Some(IdlePolicy::AlwaysSpin),
            IDLE_ADAPTIVE => Some(IdlePolicy::Adaptive {
                max_spin: Duration::from_micros(self.adaptive_max_spin_us.into()),
                cpu_cap: self.adaptive_cpu_cap,
            }),
            p => {
                return Err(Error::new(
                    Code::Config,
                    format!("idle_policy = {p} is not a jobsys_idle_policy"),
                ))
            }
        };
        if let Some(p) = policy {
            b = b.idle_policy(p);
        }
        if let Some(f) = self.on_unobserved_panic {
            // The caller promises the function and its user pointer may be
            // used from any thread (the header says so).
            let user = self.on_unobserved_panic_user as usize;
            b = b.on_unobserved_panic(move |e| {
                let text = e.to_string();
                // SAFETY: a C function pointer the caller supplied with its
                // user pointer; the text is valid for the call (pointer and
                // length; no terminator promised).
                unsafe { f(user as *mut c_void, text.as_ptr().cast(), text.len()) }
            });
        }
        Ok(b)
    }
}

/// Fill `*config` with the defaults.
///
/// # Safety
/// `config` is NULL or points to writable memory for a `jobsys_config`.
#[no_mangle]
pub unsafe extern "C" fn jobsys_config_init(config: *mut Config) -> Code {
    ffi("jobsys_config_init", || {
        non_null(config, "config")?;
        // SAFETY: non-NULL, and the caller promises it is writable.
        unsafe { config.write(Config::default()) };
        Ok(())
    })
}
