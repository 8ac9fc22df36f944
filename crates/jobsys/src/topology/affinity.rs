//! The calling thread's scheduling settings through Linux syscalls: its
//! affinity mask (`sched_getaffinity` / `sched_setaffinity`), the CPU it
//! is on (`sched_getcpu`), and its nice value (`getpriority` /
//! `setpriority` on its thread id); also the process's affinity mask (its
//! main thread's), which `CpuWatch` can poll instead.
//!
//! Owns: every `unsafe` FFI call of the topology module. On other operating
//! systems the getters report "unsupported" (`Err` / `None`) and the setters
//! fail with `ErrorKind::Unsupported`; callers treat that as "information
//! absent".

use super::cpulist::CpuSet;
use std::io;

/// Whose affinity mask is read: by [`read_affinity_words`], and so by
/// `CpuWatch::poll` (`watch.rs`, which imports this module).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MaskSource {
    /// The calling thread (a pinned worker sees only its own CPU).
    CallingThread,
    /// The main thread (`sched_getaffinity(getpid())`), which is what
    /// `taskset -p PID` changes.
    Process,
}

/// One word of a kernel cpumask, which is an array of `unsigned long`.
pub(crate) type MaskWord = std::ffi::c_ulong;

/// Bits per [`MaskWord`].
pub(crate) const MASK_WORD_BITS: usize = MaskWord::BITS as usize;

/// The calling thread's affinity mask: the CPUs it may run on. Reflects
/// `taskset`, cpuset cgroups and `sched_setaffinity` calls made earlier.
pub fn current_affinity() -> io::Result<CpuSet> {
    affinity_of(MaskSource::CallingThread)
}

/// The affinity mask of the process's main thread (the thread whose id is
/// the process id). Worker threads may have pinned themselves; the main
/// thread's mask is what `taskset -p` and container runtimes change.
#[allow(dead_code)] // until the job system's active-worker loop calls it
pub(crate) fn process_affinity() -> io::Result<CpuSet> {
    affinity_of(MaskSource::Process)
}

fn affinity_of(source: MaskSource) -> io::Result<CpuSet> {
    let mut words = Vec::new();
    read_affinity_words(source, &mut words)?;
    let mut set = CpuSet::new();
    for (w, &word) in words.iter().enumerate() {
        for bit in 0..MASK_WORD_BITS {
            if word & (1 << bit) != 0 {
                set.insert(w * MASK_WORD_BITS + bit);
            }
        }
    }
    Ok(set)
}

/// The affinity mask as raw cpumask words, into `words`, which is reused
/// (and grown when the kernel's cpumask is larger) so that a poll loop
/// does not allocate.
pub(crate) fn read_affinity_words(source: MaskSource, words: &mut Vec<MaskWord>) -> io::Result<()> {
    imp::read_affinity_words(source, words)
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
    use super::{CpuSet, MaskSource, MaskWord as Word, MASK_WORD_BITS as WORD_BITS};
    use crate::topology::cpulist::MAX_CPU;
    use std::io;
    use std::mem::size_of;

    pub(super) fn read_affinity_words(source: MaskSource, buf: &mut Vec<Word>) -> io::Result<()> {
        let pid = match source {
            MaskSource::CallingThread => 0,
            // SAFETY: getpid takes no arguments and cannot fail.
            MaskSource::Process => unsafe { libc::getpid() },
        };
        // Start with glibc's cpu_set_t (1024 CPUs) and grow while the kernel
        // says the buffer is smaller than its cpumask (EINVAL).
        let min_words = size_of::<libc::cpu_set_t>() / size_of::<Word>();
        if buf.len() < min_words {
            buf.resize(min_words, 0);
        }
        loop {
            // The C libraries zero the tail past the kernel's cpumask, but a
            // reused buffer must not depend on that.
            buf.fill(0);
            let words = buf.len();
            // SAFETY: `buf` is a writable, word-aligned buffer of exactly
            // `words * size_of::<Word>()` bytes, the size passed; the kernel
            // (and glibc, which zero-fills the tail) writes only within it.
            // cpu_set_t is itself an array of unsigned longs, so the cast
            // matches the layout the call expects.
            let rc = unsafe {
                libc::sched_getaffinity(
                    pid,
                    words * size_of::<Word>(),
                    buf.as_mut_ptr().cast::<libc::cpu_set_t>(),
                )
            };
            if rc == 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINVAL) && words * WORD_BITS < MAX_CPU {
                buf.resize(words * 2, 0);
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
    use super::{CpuSet, MaskSource, MaskWord};
    use std::io;

    fn unsupported<T>() -> io::Result<T> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "thread affinity and per-thread nice are Linux-only in jobsys",
        ))
    }
    pub(super) fn read_affinity_words(_: MaskSource, _: &mut Vec<MaskWord>) -> io::Result<()> {
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
