//! The cgroup CPU quota of this process: cgroup v2 `cpu.max`, or cgroup v1
//! `cpu.cfs_quota_us` / `cpu.cfs_period_us`, found through
//! `/proc/self/cgroup` and the cgroup mount in `/proc/self/mountinfo`.
//!
//! Owns: every cgroup and `/proc/self` path jobsys reads, and the parsers
//! for their formats. Like `sysfs`, all functions take the filesystem root
//! as a parameter and only read files; a missing file means "absent".
//!
//! The effective quota is the smallest one on the path from the process's
//! cgroup up to the root of the mounted hierarchy (a parent's limit also
//! binds its children). A cgroup's quota of `max` / `-1` means unlimited.

use super::error::TopologyError;
use super::sysfs::{read_optional, under};
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Which cgroup hierarchy holds the CPU controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupVersion {
    /// cgroup v1, `cpu` controller (`cpu.cfs_quota_us`, `cpu.cfs_period_us`).
    V1,
    /// cgroup v2, unified hierarchy (`cpu.max`).
    V2,
}

impl fmt::Display for CgroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CgroupVersion::V1 => "cgroup v1",
            CgroupVersion::V2 => "cgroup v2",
        })
    }
}

/// The CPU quota that applies to this process.
#[derive(Clone, Debug, PartialEq)]
pub enum CgroupQuota {
    /// At most `quota_us` of CPU time per `period_us` (1.5 CPUs is
    /// 150000 per 100000).
    Limited {
        /// CPU time per period, µs.
        quota_us: u64,
        /// The period, µs.
        period_us: u64,
        /// The hierarchy.
        version: CgroupVersion,
        /// The file that set the (smallest) limit.
        file: PathBuf,
    },
    /// A CPU controller was found and no level of it sets a limit.
    Unlimited {
        /// The hierarchy.
        version: CgroupVersion,
        /// The process's own cgroup file that was read.
        file: PathBuf,
    },
    /// No CPU controller information: not Linux, no `/proc`, or the
    /// hierarchy is not mounted where this process can see it.
    Absent,
}

impl CgroupQuota {
    /// The quota in CPUs (1.5 for 150000/100000); `None` when unlimited or
    /// absent.
    pub fn cpus(&self) -> Option<f64> {
        match self {
            CgroupQuota::Limited {
                quota_us,
                period_us,
                ..
            } => Some(*quota_us as f64 / *period_us as f64),
            _ => None,
        }
    }

    /// The quota rounded **down** to whole CPUs, at least 1; `None` when
    /// unlimited or absent. Rounding down is deliberate (docs/cores.md):
    /// a frame-based program that uses more threads than its quota gets
    /// throttled — every thread stopped until the next period, up to
    /// 100 ms — which is far worse for a frame than one core fewer.
    pub fn whole_cpus(&self) -> Option<usize> {
        match self {
            CgroupQuota::Limited {
                quota_us,
                period_us,
                ..
            } => Some(
                usize::try_from(quota_us / period_us)
                    .unwrap_or(usize::MAX)
                    .max(1),
            ),
            _ => None,
        }
    }
}

impl fmt::Display for CgroupQuota {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CgroupQuota::Limited {
                quota_us,
                period_us,
                version,
                file,
            } => write!(
                f,
                "{} CPUs ({version}, {quota_us}/{period_us} in {})",
                fmt_cpus(*quota_us as f64 / *period_us as f64),
                file.display()
            ),
            CgroupQuota::Unlimited { version, file } => {
                write!(f, "none ({version}, no limit in {})", file.display())
            }
            CgroupQuota::Absent => f.write_str("absent (no cgroup CPU controller found)"),
        }
    }
}

/// 1.5 → "1.5", 2.0 → "2", 0.333… → "0.33".
pub(crate) fn fmt_cpus(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Parse cgroup v2 `cpu.max`: `"max 100000"` (or `"max"`) is unlimited
/// (`Ok(None)`); `"150000 100000"` is 150000 µs per 100000 µs. A missing
/// period means the kernel default, 100000.
pub fn parse_cpu_max(text: &str) -> Result<Option<(u64, u64)>, String> {
    let mut fields = text.split_whitespace();
    let quota = fields.next().ok_or("empty file")?;
    let period = match fields.next() {
        Some(p) => parse_us(p, "period")?,
        None => 100_000,
    };
    if fields.next().is_some() {
        return Err(format!("{:?}: expected \"QUOTA PERIOD\"", text.trim()));
    }
    if period == 0 {
        return Err("period is 0".to_string());
    }
    if quota == "max" {
        return Ok(None);
    }
    Ok(Some((parse_us(quota, "quota")?, period)))
}

/// Parse cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us`: a quota of
/// `-1` is unlimited (`Ok(None)`).
pub fn parse_cfs(quota: &str, period: &str) -> Result<Option<(u64, u64)>, String> {
    let quota = quota.trim();
    let period = parse_us(period.trim(), "period")?;
    if period == 0 {
        return Err("period is 0".to_string());
    }
    if quota == "-1" {
        return Ok(None);
    }
    Ok(Some((parse_us(quota, "quota")?, period)))
}

fn parse_us(s: &str, what: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(format!(
            "{what} {s:?} is not a positive number of microseconds"
        )),
    }
}

/// The process's cgroup paths, from `/proc/self/cgroup`: the v2 path (the
/// `0::PATH` line) and the v1 path of the hierarchy holding `cpu`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcCgroup {
    /// `0::PATH`.
    pub v2: Option<String>,
    /// `N:…,cpu,…:PATH`.
    pub v1_cpu: Option<String>,
}

/// Parse `/proc/self/cgroup` (`ID:CONTROLLERS:PATH` per line).
pub fn parse_proc_cgroup(text: &str) -> ProcCgroup {
    let mut out = ProcCgroup::default();
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            out.v2 = Some(path.to_string());
        } else if controllers.split(',').any(|c| c == "cpu") {
            out.v1_cpu = Some(path.to_string());
        }
    }
    out
}

/// One cgroup filesystem from `/proc/self/mountinfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupMount {
    /// The cgroup directory that is the root of this mount.
    pub root: String,
    /// Where it is mounted.
    pub mount_point: String,
    /// Which hierarchy.
    pub version: CgroupVersion,
    /// Controllers (v1, from the super options; empty for v2).
    pub controllers: Vec<String>,
}

/// The cgroup mounts in `/proc/self/mountinfo` text. Format per line:
/// `ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTS [OPTIONAL…] - FSTYPE SOURCE SUPER_OPTS`,
/// with spaces in paths written as `\040`.
pub fn parse_mountinfo(text: &str) -> Vec<CgroupMount> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let pre: Vec<&str> = pre.split(' ').collect();
        let post: Vec<&str> = post.split(' ').collect();
        if pre.len() < 5 || post.is_empty() {
            continue;
        }
        let version = match post[0] {
            "cgroup2" => CgroupVersion::V2,
            "cgroup" => CgroupVersion::V1,
            _ => continue,
        };
        let controllers = match version {
            CgroupVersion::V1 => post
                .get(2)
                .map(|o| o.split(',').map(str::to_string).collect())
                .unwrap_or_default(),
            CgroupVersion::V2 => Vec::new(),
        };
        out.push(CgroupMount {
            root: unescape(pre[3]),
            mount_point: unescape(pre[4]),
            version,
            controllers,
        });
    }
    out
}

/// Undo mountinfo's octal escapes (`\040` space, `\011` tab, `\012`, `\134`).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The cgroup CPU quota of this process, reading `/proc/self/cgroup`,
/// `/proc/self/mountinfo` and the cgroup files under `root`.
///
/// The v1 `cpu` hierarchy is used when `/proc/self/cgroup` lists one (a
/// controller lives in exactly one hierarchy, so on a hybrid v1/v2 system
/// the v2 tree then has no `cpu.max`); otherwise the v2 unified hierarchy.
/// If the process's cgroup path does not lie under the mount's root (a
/// container that sees only its own cgroup mounted at the mount point), the
/// mount point itself is read.
pub fn read_cgroup_quota(root: &Path) -> Result<CgroupQuota, TopologyError> {
    for (version, dirs) in cpu_hierarchies(root)? {
        let found = quota_in_dirs(version, &dirs)?;
        if found != CgroupQuota::Absent {
            return Ok(found);
        }
    }
    Ok(CgroupQuota::Absent)
}

/// The hierarchies that may hold this process's CPU controller, in the
/// order [`read_cgroup_quota`] tries them, each with the cgroup directories
/// from the process's own up to the mount point. Split out so that
/// `CpuWatch` can resolve the paths once and re-read only the files.
pub(crate) fn cpu_hierarchies(
    root: &Path,
) -> Result<Vec<(CgroupVersion, Vec<PathBuf>)>, TopologyError> {
    let Some(cgroup) = read_optional(&under(root, "proc/self/cgroup"))? else {
        return Ok(Vec::new());
    };
    let Some(mountinfo) = read_optional(&under(root, "proc/self/mountinfo"))? else {
        return Ok(Vec::new());
    };
    let groups = parse_proc_cgroup(&cgroup);
    let mounts = parse_mountinfo(&mountinfo);
    let attempts = [
        (CgroupVersion::V1, groups.v1_cpu.as_deref()),
        (CgroupVersion::V2, groups.v2.as_deref()),
    ];
    let mut out = Vec::new();
    for (version, path) in attempts {
        let Some(path) = path else { continue };
        let mount = mounts.iter().find(|m| {
            m.version == version
                && (version == CgroupVersion::V2 || m.controllers.iter().any(|c| c == "cpu"))
        });
        let Some(mount) = mount else { continue };
        out.push((version, hierarchy_dirs(root, mount, path)));
    }
    Ok(out)
}

/// The directories from the process's cgroup up to the mount point.
fn hierarchy_dirs(root: &Path, mount: &CgroupMount, path: &str) -> Vec<PathBuf> {
    let top = under(root, &mount.mount_point);
    let rel = Path::new(path)
        .strip_prefix(&mount.root)
        .ok()
        .filter(|r| r.components().all(|c| matches!(c, Component::Normal(_))));
    let mut dir = match rel {
        Some(r) => top.join(r),
        None => top.clone(),
    };
    let mut dirs = Vec::new();
    loop {
        dirs.push(dir.clone());
        if dir == top || !dir.pop() || !dir.starts_with(&top) {
            break;
        }
    }
    dirs
}

/// The smallest limit set in `dirs`.
fn quota_in_dirs(version: CgroupVersion, dirs: &[PathBuf]) -> Result<CgroupQuota, TopologyError> {
    let mut best: Option<(u64, u64, PathBuf)> = None;
    let mut own_file: Option<PathBuf> = None;
    for dir in dirs {
        if let Some((file, limit)) = quota_at(dir, version)? {
            own_file.get_or_insert_with(|| file.clone());
            if let Some((q, p)) = limit {
                let smaller = match &best {
                    Some((bq, bp, _)) => {
                        u128::from(q) * u128::from(*bp) < u128::from(*bq) * u128::from(p)
                    }
                    None => true,
                };
                if smaller {
                    best = Some((q, p, file));
                }
            }
        }
    }
    Ok(match (best, own_file) {
        (Some((quota_us, period_us, file)), _) => CgroupQuota::Limited {
            quota_us,
            period_us,
            version,
            file,
        },
        (None, Some(file)) => CgroupQuota::Unlimited { version, file },
        (None, None) => CgroupQuota::Absent,
    })
}

/// The limit set in one cgroup directory: `None` if it has no quota file
/// (e.g. the v2 root), else the file and the limit (`None` = unlimited).
#[allow(clippy::type_complexity)]
fn quota_at(
    dir: &Path,
    version: CgroupVersion,
) -> Result<Option<(PathBuf, Option<(u64, u64)>)>, TopologyError> {
    match version {
        CgroupVersion::V2 => {
            let file = dir.join("cpu.max");
            let Some(text) = read_optional(&file)? else {
                return Ok(None);
            };
            let limit = parse_cpu_max(&text).map_err(|detail| TopologyError::Malformed {
                path: file.clone(),
                detail,
            })?;
            Ok(Some((file, limit)))
        }
        CgroupVersion::V1 => {
            let file = dir.join("cpu.cfs_quota_us");
            let Some(quota) = read_optional(&file)? else {
                return Ok(None);
            };
            let period_file = dir.join("cpu.cfs_period_us");
            let Some(period) = read_optional(&period_file)? else {
                return Err(TopologyError::Malformed {
                    path: period_file,
                    detail: "missing next to cpu.cfs_quota_us".to_string(),
                });
            };
            let limit = parse_cfs(&quota, &period).map_err(|detail| TopologyError::Malformed {
                path: file.clone(),
                detail,
            })?;
            Ok(Some((file, limit)))
        }
    }
}
