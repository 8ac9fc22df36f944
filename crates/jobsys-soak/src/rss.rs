//! Resident memory and thread count of this process, from
//! `/proc/self/status` (`VmRSS`, `VmHWM`, `Threads`).
//!
//! The soak reads them twice, each time with no job system alive and after
//! asking the allocator to return free memory to the kernel
//! ([`settle`]), so the two readings differ only by what is really still
//! held: at the end of the warm-up and at the end of the soak. Where
//! `/proc` is absent (not Linux), [`read`] returns `None` and the soak
//! skips the memory bound with a message.

/// One reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStatus {
    /// Resident set now, KiB.
    pub rss_kib: u64,
    /// Largest resident set so far (high-water mark), KiB.
    pub hwm_kib: u64,
    /// Threads of the process.
    pub threads: u64,
}

/// Parse the text of `/proc/<pid>/status`.
pub fn parse(text: &str) -> Option<ProcStatus> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some(ProcStatus {
        rss_kib: field("VmRSS:")?,
        hwm_kib: field("VmHWM:")?,
        threads: field("Threads:")?,
    })
}

/// Read this process's status; `None` where `/proc` is absent.
pub fn read() -> Option<ProcStatus> {
    parse(&std::fs::read_to_string("/proc/self/status").ok()?)
}

/// Return free heap memory to the kernel where the allocator can be asked
/// (glibc), so RSS reflects memory in use rather than the allocator's cache.
pub fn settle() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `malloc_trim` only releases free memory at the top of the
        // heap and unused pages of free chunks; it takes the allocator's own
        // locks and touches no memory owned by the program.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

/// KiB as MiB with one decimal.
pub fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_status() {
        let text =
            "Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    5120 kB\nVmRSS:\t    4096 kB\nThreads:\t7\n";
        assert_eq!(
            parse(text),
            Some(ProcStatus {
                rss_kib: 4096,
                hwm_kib: 5120,
                threads: 7
            })
        );
        assert_eq!(parse("Name:\tx\n"), None);
        assert_eq!(mib(1536), "1.5 MiB");
    }

    #[test]
    fn reads_this_process_on_linux() {
        if cfg!(target_os = "linux") {
            let s = read().expect("/proc/self/status");
            assert!(s.rss_kib > 0 && s.hwm_kib >= s.rss_kib && s.threads >= 1);
        }
    }
}
