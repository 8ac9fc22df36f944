//! The calling thread's scheduling settings through Linux syscalls: its
//! affinity mask (`sched_getaffinity` / `sched_setaffinity`), the CPU it
//! is on (`sched_getcpu`), and its nice value (`getpriority` /
//! `setpriority` on its thread id).
//!
//! Owns: every `unsafe` FFI call of the topology module. On other operating
//! systems the getters report "unsupported" (`Err` / `None`) and the setters
//! fail with `ErrorKind::Unsupported`; callers treat that as "information
//! absent".

use super::cpulist::CpuSet;
use std::io;

/// The calling thread's affinity mask: the CPUs it may run on. Reflects
/// `taskset`, cpuset cgroups and `sched_setaffinity` calls made earlier.
pub fn current_affinity() -> io::Result<CpuSet> {
    imp::current_affinity()
}

/// Restrict the calling thread to `cpus` (one CPU pins it). The kernel
/// migrates the thread before this returns.
pub fn set_current_affinity(cpus: &CpuSet) -> io::Result<()> {
    imp::set_current_affinity(cpus)
}

/// The CPU the calling thread is running on right now (it may be migrated
/// a moment later unless it is pinned). `None` where unsupported.
pub fn current_cpu() -> Option<usize> {
    imp::current_cpu()
}

/// The calling thread's nice value (Linux: per thread).
pub fn current_nice() -> io::Result<i32> {
    imp::current_nice()
}

/// Set the calling thread's nice value (−20..=19, lower is more CPU).
/// Lowering it needs `CAP_SYS_NICE` or a large enough `RLIMIT_NICE`.
pub fn set_current_nice(nice: i32) -> io::Result<()> {
    imp::set_current_nice(nice)
}

#[cfg(target_os = "linux")]
mod imp {
    use super::CpuSet;
    use crate::topology::cpulist::MAX_CPU;
    use std::io;
    use std::mem::size_of;

    type Word = libc::c_ulong;
    const WORD_BITS: usize = Word::BITS as usize;

    pub(super) fn current_affinity() -> io::Result<CpuSet> {
        // Start with glibc's cpu_set_t (1024 CPUs) and grow while the kernel
        // says the buffer is smaller than its cpumask (EINVAL).
        let mut words = size_of::<libc::cpu_set_t>() / size_of::<Word>();
        loop {
            let mut buf: Vec<Word> = vec![0; words];
            // SAFETY: `buf` is a writable, word-aligned buffer of exactly
            // `words * size_of::<Word>()` bytes, the size passed; the kernel
            // (and glibc, which zero-fills the tail) writes only within it.
            // cpu_set_t is itself an array of unsigned longs, so the cast
            // matches the layout the call expects.
            let rc = unsafe {
                libc::sched_getaffinity(
                    0,
                    words * size_of::<Word>(),
                    buf.as_mut_ptr().cast::<libc::cpu_set_t>(),
                )
            };
            if rc == 0 {
                let mut set = CpuSet::new();
                for (w, &word) in buf.iter().enumerate() {
                    for bit in 0..WORD_BITS {
                        if word & (1 << bit) != 0 {
                            set.insert(w * WORD_BITS + bit);
                        }
                    }
                }
                return Ok(set);
            }
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINVAL) && words * WORD_BITS < MAX_CPU {
                words *= 2;
                continue;
            }
            return Err(err);
        }
    }

    pub(super) fn set_current_affinity(cpus: &CpuSet) -> io::Result<()> {
        let highest = cpus.iter().last().unwrap_or(0);
        let min_words = size_of::<libc::cpu_set_t>() / size_of::<Word>();
        let words = (highest / WORD_BITS + 1).max(min_words);
        let mut buf: Vec<Word> = vec![0; words];
        for cpu in cpus {
            buf[cpu / WORD_BITS] |= 1 << (cpu % WORD_BITS);
        }
        // SAFETY: `buf` is a readable, word-aligned buffer of the size
        // passed, laid out as the kernel's cpumask (array of unsigned long).
        let rc = unsafe {
            libc::sched_setaffinity(
                0,
                words * size_of::<Word>(),
                buf.as_ptr().cast::<libc::cpu_set_t>(),
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    pub(super) fn current_cpu() -> Option<usize> {
        // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
        let cpu = unsafe { libc::sched_getcpu() };
        usize::try_from(cpu).ok()
    }

    fn tid() -> libc::id_t {
        // SAFETY: gettid takes no arguments and cannot fail.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        tid as libc::id_t
    }

    pub(super) fn current_nice() -> io::Result<i32> {
        // getpriority returns -1 both for nice -1 and for an error: clear
        // errno first and check it afterwards.
        // SAFETY: __errno_location returns the calling thread's errno slot,
        // valid for the thread's lifetime; getpriority has no pointer args.
        let nice = unsafe {
            *libc::__errno_location() = 0;
            libc::getpriority(libc::PRIO_PROCESS, tid())
        };
        if nice == -1 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(0) {
                return Err(err);
            }
        }
        Ok(nice)
    }

    pub(super) fn set_current_nice(nice: i32) -> io::Result<()> {
        // On Linux the nice value is per thread: PRIO_PROCESS with a thread
        // id changes only that thread (setpriority(2), "BUGS").
        // SAFETY: no pointer arguments.
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid(), nice) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::CpuSet;
    use std::io;

    fn unsupported<T>() -> io::Result<T> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "thread affinity and per-thread nice are Linux-only in jobsys",
        ))
    }
    pub(super) fn current_affinity() -> io::Result<CpuSet> {
        unsupported()
    }
    pub(super) fn set_current_affinity(_: &CpuSet) -> io::Result<()> {
        unsupported()
    }
    pub(super) fn current_cpu() -> Option<usize> {
        None
    }
    pub(super) fn current_nice() -> io::Result<i32> {
        unsupported()
    }
    pub(super) fn set_current_nice(_: i32) -> io::Result<()> {
        unsupported()
    }
}
