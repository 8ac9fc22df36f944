//! Re-reading, every few milliseconds, how many CPUs the process may use,
//! so that the job system can follow `taskset`, CPU hot-plug and cgroup
//! quota changes made while it runs.
//!
//! [`detect`](super::detect) is meant for start-up: it parses mountinfo and
//! walks the cgroup tree. [`CpuWatch::new`] does that walk once and keeps
//! the paths; [`CpuWatch::poll`] is then one `sched_getaffinity`, one read
//! of `online` and one read per quota file, into buffers it reuses.

use super::affinity::{read_affinity_words, MaskSource, MaskWord, MASK_WORD_BITS as BITS};
use super::cgroup::{cpu_hierarchies, parse_cfs, parse_cpu_max, CgroupVersion};
use super::cpulist::{CpuSet, MAX_CPU};
use super::sysfs::{under, CPU_DIR};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// One cgroup level's limit.
enum QuotaFile {
    V2(PathBuf),
    V1 { quota: PathBuf, period: PathBuf },
}

/// The usable-CPU count, re-readable cheaply. See the module docs.
pub(crate) struct CpuWatch {
    mask: MaskSource,
    /// `None`: the file was absent at `new`, so it is never read.
    online: Option<PathBuf>,
    quota_files: Vec<QuotaFile>,
    text: String,
    period_text: String,
    affinity_words: Vec<MaskWord>,
    online_words: Vec<MaskWord>,
}

impl CpuWatch {
    /// `root`: filesystem root ("/" normally, a fixture dir in tests).
    pub(crate) fn new(root: &Path, mask: MaskSource) -> CpuWatch {
        let online = under(root, &format!("{CPU_DIR}/online"));
        CpuWatch {
            mask,
            online: online.exists().then_some(online),
            quota_files: resolve_quota_files(root),
            text: String::new(),
            period_text: String::new(),
            affinity_words: Vec::new(),
            online_words: Vec::new(),
        }
    }

    /// Usable CPUs now: affinity ∩ online (either unknown → the other; both
    /// unknown → `available_parallelism`), capped by floor(quota) when a
    /// quota exists, at least 1.
    pub(crate) fn poll(&mut self) -> usize {
        let known = read_affinity_words(self.mask, &mut self.affinity_words).is_ok();
        self.usable(known)
    }

    /// Same rule, with the affinity mask given (tests with fixtures).
    #[cfg_attr(any(not(test), loom), allow(dead_code))] // fixtures
    pub(crate) fn poll_with_mask(&mut self, mask: Option<&CpuSet>) -> usize {
        if let Some(m) = mask {
            set_to_words(m, &mut self.affinity_words);
        }
        self.usable(mask.is_some())
    }

    fn usable(&mut self, affinity_known: bool) -> usize {
        let online_known = match &self.online {
            Some(path) => {
                read_into(path, &mut self.text).is_ok()
                    && parse_list_into(&self.text, &mut self.online_words).is_some()
            }
            None => false,
        };
        let quota = self.read_quota();
        let affinity = affinity_known.then_some(&self.affinity_words[..]);
        let online = online_known.then_some(&self.online_words[..]);
        cap(count(affinity, online), quota)
    }

    /// The smallest limit, in CPUs. A file that cannot be read or parsed
    /// sets no limit, as in `read_cgroup_quota` when the quota is unknown.
    fn read_quota(&mut self) -> Option<f64> {
        let mut best: Option<f64> = None;
        for file in &self.quota_files {
            let limit = match file {
                QuotaFile::V2(path) => read_into(path, &mut self.text)
                    .ok()
                    .and_then(|()| parse_cpu_max(&self.text).ok().flatten()),
                QuotaFile::V1 { quota, period } => read_into(quota, &mut self.text)
                    .and_then(|()| read_into(period, &mut self.period_text))
                    .ok()
                    .and_then(|()| parse_cfs(&self.text, &self.period_text).ok().flatten()),
            };
            if let Some((q, p)) = limit {
                let cpus = q as f64 / p as f64;
                best = Some(best.map_or(cpus, |b| b.min(cpus)));
            }
        }
        best
    }
}

/// The pure rule, on sets (the tests compare it with [`Topology`](super::Topology)).
#[cfg_attr(any(not(test), loom), allow(dead_code))] // fixtures
pub(crate) fn usable_count(
    affinity: Option<&CpuSet>,
    online: Option<&CpuSet>,
    quota_cpus: Option<f64>,
) -> usize {
    let words = |s: &CpuSet| {
        let mut w = Vec::new();
        set_to_words(s, &mut w);
        w
    };
    let (a, o) = (affinity.map(words), online.map(words));
    cap(count(a.as_deref(), o.as_deref()), quota_cpus)
}

/// Same choice of hierarchy as `read_cgroup_quota`: the first one with a
/// quota file anywhere between the process's cgroup and the mount point.
fn resolve_quota_files(root: &Path) -> Vec<QuotaFile> {
    let Ok(hierarchies) = cpu_hierarchies(root) else {
        return Vec::new();
    };
    for (version, dirs) in hierarchies {
        let files: Vec<QuotaFile> = dirs
            .iter()
            .filter_map(|dir| match version {
                CgroupVersion::V2 => {
                    let f = dir.join("cpu.max");
                    f.exists().then_some(QuotaFile::V2(f))
                }
                CgroupVersion::V1 => {
                    let quota = dir.join("cpu.cfs_quota_us");
                    let period = dir.join("cpu.cfs_period_us");
                    quota.exists().then_some(QuotaFile::V1 { quota, period })
                }
            })
            .collect();
        if !files.is_empty() {
            return files;
        }
    }
    Vec::new()
}

/// Affinity ∩ online, counted; the mask alone when they do not overlap (a
/// race with hot-plug), as `Topology::usable_cpus` does.
fn count(affinity: Option<&[MaskWord]>, online: Option<&[MaskWord]>) -> Option<usize> {
    let ones = |w: &[MaskWord]| w.iter().map(|x| x.count_ones() as usize).sum::<usize>();
    match (affinity, online) {
        (Some(a), Some(o)) => {
            let both: usize = a
                .iter()
                .zip(o)
                .map(|(x, y)| (x & y).count_ones() as usize)
                .sum();
            Some(if both == 0 { ones(a) } else { both })
        }
        (Some(w), None) | (None, Some(w)) => Some(ones(w)),
        (None, None) => None,
    }
}

fn cap(cpus: Option<usize>, quota_cpus: Option<f64>) -> usize {
    let n = cpus
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    match quota_cpus {
        // `as` truncates, which is the rounding down the rule asks for.
        Some(q) => n.min(q as usize).max(1),
        None => n,
    }
}

#[cfg_attr(any(not(test), loom), allow(dead_code))] // fixtures
fn set_to_words(set: &CpuSet, words: &mut Vec<MaskWord>) {
    words.clear();
    words.resize(set.iter().last().map_or(0, |c| c / BITS + 1), 0);
    for cpu in set {
        words[cpu / BITS] |= 1 << (cpu % BITS);
    }
}

/// The file into `buf`; `File::open` keeps short paths on the stack, so
/// this allocates only when `buf` must grow.
fn read_into(path: &Path, buf: &mut String) -> io::Result<()> {
    buf.clear();
    std::fs::File::open(path)?.read_to_string(buf).map(drop)
}

/// `parse_cpu_list` into a reused bitmap instead of a new set; `None` for
/// anything it rejects, and for an empty list (see `read_online`).
fn parse_list_into(text: &str, words: &mut Vec<MaskWord>) -> Option<()> {
    fn cpu(s: &str) -> Option<usize> {
        let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        s.parse().ok().filter(|&n| digits && n < MAX_CPU)
    }
    words.fill(0);
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    for item in text.split(',') {
        let (lo, hi) = match item.split_once('-') {
            Some((a, b)) => (cpu(a)?, cpu(b)?),
            None => (cpu(item)?, cpu(item)?),
        };
        if lo > hi {
            return None;
        }
        if words.len() <= hi / BITS {
            words.resize(hi / BITS + 1, 0);
        }
        for c in lo..=hi {
            words[c / BITS] |= 1 << (c % BITS);
        }
    }
    Some(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fixture root under the temp dir, removed on drop.
    struct Tree(PathBuf);

    impl Tree {
        fn new() -> Tree {
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let dir =
                std::env::temp_dir().join(format!("jobsys-cpuwatch-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            Tree(dir)
        }
        fn write(&self, rel: &str, text: &str) -> &Tree {
            let path = self.0.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
            self
        }
        fn watch(&self) -> CpuWatch {
            CpuWatch::new(&self.0, MaskSource::CallingThread)
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const ONLINE: &str = "sys/devices/system/cpu/online";

    /// cgroup v2, the process in /app/job, a limit on /app.
    fn v2(app_max: &str) -> Tree {
        let t = Tree::new();
        t.write(ONLINE, "0-7\n")
            .write("proc/self/cgroup", "0::/app/job\n")
            .write(
                "proc/self/mountinfo",
                "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n",
            )
            .write("sys/fs/cgroup/app/cpu.max", app_max)
            .write("sys/fs/cgroup/app/job/cpu.max", "max 100000\n");
        t
    }

    fn set(s: &str) -> CpuSet {
        s.parse().unwrap()
    }

    #[test]
    fn v2_rewrites_between_polls_are_seen() {
        let t = v2("150000 100000\n");
        let mut w = t.watch();
        assert_eq!(w.poll_with_mask(None), 1);
        t.write("sys/fs/cgroup/app/cpu.max", "max 100000\n");
        assert_eq!(w.poll_with_mask(None), 8);
        t.write(ONLINE, "0-3\n");
        assert_eq!(w.poll_with_mask(None), 4);
        t.write("sys/fs/cgroup/app/cpu.max", "250000 100000\n");
        assert_eq!(w.poll_with_mask(None), 2);
        // The smaller limit wins, whichever level sets it.
        t.write("sys/fs/cgroup/app/job/cpu.max", "30000 100000\n");
        assert_eq!(w.poll_with_mask(None), 1, "below 1 CPU still leaves 1");
        t.write("sys/fs/cgroup/app/job/cpu.max", "lots\n");
        assert_eq!(w.poll_with_mask(None), 2, "a malformed level sets no limit");
    }

    #[test]
    fn v1_quota_and_unlimited() {
        let t = Tree::new();
        t.write(ONLINE, "0-15\n")
            .write("proc/self/cgroup", "4:cpu,cpuacct:/docker/abc\n0::/\n")
            .write(
                "proc/self/mountinfo",
                "712 710 0:29 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n",
            )
            .write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "250000\n")
            .write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
        let mut w = t.watch();
        assert_eq!(w.poll_with_mask(None), 2);
        t.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
        assert_eq!(w.poll_with_mask(None), 16);
    }

    #[test]
    fn mask_and_online() {
        let t = v2("max\n");
        let mut w = t.watch();
        assert_eq!(w.poll_with_mask(Some(&set("2-3,100"))), 2);
        assert_eq!(
            w.poll_with_mask(Some(&set("64-66"))),
            3,
            "no overlap: the mask"
        );
        assert_eq!(w.poll_with_mask(None), 8);
        let bare = Tree::new();
        std::fs::create_dir_all(&bare.0).unwrap();
        assert_eq!(bare.watch().poll_with_mask(Some(&set("0-2"))), 3);
        assert_eq!(usable_count(Some(&set("0-9")), None, Some(4.9)), 4);
        assert_eq!(usable_count(Some(&set("0-3")), Some(&set("2-5")), None), 2);
    }

    #[test]
    fn parse_list_into_matches_parse_cpu_list() {
        let mut words = Vec::new();
        for text in ["0", "0-3,8-11\n", "63-65", "5-3", "0-3,,5", "", "x", "1-"] {
            let ours = parse_list_into(text, &mut words).map(|()| count(Some(&words), None));
            let theirs = super::super::cpulist::parse_cpu_list(text)
                .ok()
                .filter(|s| !s.is_empty());
            assert_eq!(ours, theirs.map(|s| Some(s.len())), "{text:?}");
        }
    }

    #[test]
    fn real_system() {
        let topo = super::super::topology();
        let want = usable_count(
            topo.allowed.as_ref(),
            topo.online.as_ref(),
            topo.quota_cpus(),
        );
        let got = CpuWatch::new(Path::new("/"), MaskSource::CallingThread).poll();
        assert!(got >= 1);
        assert_eq!(got, want, "{topo}");
        let process = super::super::affinity::process_affinity().ok();
        let want = usable_count(process.as_ref(), topo.online.as_ref(), topo.quota_cpus());
        let got = CpuWatch::new(Path::new("/"), MaskSource::Process).poll();
        assert_eq!(got, want);
    }
}
