//! Reading `/sys/devices/system/cpu`: which CPUs are online, each CPU's
//! capacity (`cpu_capacity`, else `cpufreq/cpuinfo_max_freq`) and the rule
//! that splits CPUs into performance and efficiency classes, and which
//! CPUs are hardware threads (SMT siblings) of one physical core.
//!
//! Owns: every sysfs path jobsys reads. All functions take the filesystem
//! root as a parameter (`/` in production, a fixture directory in tests) and
//! never make syscalls other than reading files. A missing file is
//! `Ok(None)` ("absent"), never an error.

use super::cpulist::{parse_cpu_list, CpuSet};
use super::error::TopologyError;
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// The kernel's CPU directory, relative to the root.
pub const CPU_DIR: &str = "sys/devices/system/cpu";

/// A CPU is an efficiency core only if its capacity is below this percentage
/// of the fastest CPU's (see [`classify`]).
pub const EFFICIENCY_THRESHOLD_PERCENT: u64 = 80;

/// CPUs within this percentage above the slowest CPU's capacity form the
/// slowest tier (see [`classify`]).
pub const TIER_TOLERANCE_PERCENT: u64 = 10;

/// `root` joined with an absolute path written without its leading `/`.
pub(crate) fn under(root: &Path, rel: &str) -> PathBuf {
    root.join(rel.trim_start_matches('/'))
}

/// The file's contents; `Ok(None)` if it (or its directory) does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, TopologyError> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(TopologyError::Unreadable {
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

/// `/sys/devices/system/cpu/online` under `root`. An empty list is
/// reported as malformed: a running system has at least one CPU online.
pub fn read_online(root: &Path) -> Result<Option<CpuSet>, TopologyError> {
    let path = under(root, &format!("{CPU_DIR}/online"));
    let Some(text) = read_optional(&path)? else {
        return Ok(None);
    };
    match parse_cpu_list(&text) {
        Ok(set) if set.is_empty() => Err(TopologyError::Malformed {
            path,
            detail: "no CPU is listed as online".to_string(),
        }),
        Ok(set) => Ok(Some(set)),
        Err(e) => Err(TopologyError::Malformed {
            path,
            detail: e.to_string(),
        }),
    }
}

/// The `cpuN` directories under `root`'s `/sys/devices/system/cpu` (used
/// when neither the online list nor the affinity mask is known).
pub fn present_cpus(root: &Path) -> CpuSet {
    let Ok(dir) = std::fs::read_dir(under(root, CPU_DIR)) else {
        return CpuSet::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let n = name.to_str()?.strip_prefix("cpu")?;
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            n.parse::<usize>().ok()
        })
        .collect()
}

/// Where the capacity values came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapacitySource {
    /// `cpuN/cpu_capacity`: the scheduler's capacity, 1024 for the fastest
    /// CPU (Arm big.LITTLE/DynamIQ; x86 hybrid on recent kernels).
    CpuCapacity,
    /// `cpuN/cpufreq/cpuinfo_max_freq` in kHz (a proxy: it ignores the
    /// difference in instructions per clock between core types).
    MaxFreq,
}

impl CapacitySource {
    /// The file name, relative to `cpuN/`.
    pub fn file(self) -> &'static str {
        match self {
            CapacitySource::CpuCapacity => "cpu_capacity",
            CapacitySource::MaxFreq => "cpufreq/cpuinfo_max_freq",
        }
    }
}

/// Performance or efficiency core; for a job
/// ([`JobBuilder::core_class`](crate::JobBuilder::core_class)) also `Any`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoreClass {
    /// Fast enough for work on a frame's critical path.
    Performance,
    /// The slowest tier (LITTLE cores, Intel E-cores): see [`classify`].
    Efficiency,
    /// Either: what a job asks for by default. No CPU is classified so.
    Any,
}

impl fmt::Display for CoreClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CoreClass::Performance => "performance",
            CoreClass::Efficiency => "efficiency",
            CoreClass::Any => "any",
        })
    }
}

/// One CPU's capacity value and class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuCapacity {
    /// The raw value: capacity (max 1024) or max frequency in kHz.
    pub value: u64,
    /// The class [`classify`] gave it.
    pub class: CoreClass,
}

/// Capacity and class of every CPU that was examined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreClasses {
    /// Which file the values came from.
    pub source: CapacitySource,
    /// Per CPU number.
    pub cpus: BTreeMap<usize, CpuCapacity>,
}

impl CoreClasses {
    /// The class of `cpu`, if it was examined.
    pub fn class_of(&self, cpu: usize) -> Option<CoreClass> {
        self.cpus.get(&cpu).map(|c| c.class)
    }
    /// The CPUs of class `class`.
    pub fn of_class(&self, class: CoreClass) -> CpuSet {
        self.cpus
            .iter()
            .filter(|(_, c)| c.class == class)
            .map(|(&n, _)| n)
            .collect()
    }
    /// The performance CPUs.
    pub fn performance(&self) -> CpuSet {
        self.of_class(CoreClass::Performance)
    }
    /// The efficiency CPUs.
    pub fn efficiency(&self) -> CpuSet {
        self.of_class(CoreClass::Efficiency)
    }
    /// Whether there are efficiency cores at all.
    pub fn is_heterogeneous(&self) -> bool {
        self.cpus.values().any(|c| c.class == CoreClass::Efficiency)
    }
    /// Capacity of `cpu` (0 when unknown), for ordering CPUs fastest first.
    pub fn value_of(&self, cpu: usize) -> u64 {
        self.cpus.get(&cpu).map_or(0, |c| c.value)
    }
}

impl fmt::Display for CoreClasses {
    /// `from cpu_capacity: performance 0-3 (1024), efficiency 4-7 (446)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "from {}:", self.source.file())?;
        let mut first = true;
        for class in [CoreClass::Performance, CoreClass::Efficiency] {
            let cpus = self.of_class(class);
            if cpus.is_empty() {
                continue;
            }
            let values = cpus.iter().map(|c| self.value_of(c));
            let (lo, hi) = values.fold((u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
            let show = |v: u64| match self.source {
                CapacitySource::CpuCapacity => v.to_string(),
                CapacitySource::MaxFreq => format!("{:.1} GHz", v as f64 / 1e6),
            };
            let range = if lo == hi {
                show(lo)
            } else {
                format!("{}-{}", show(lo), show(hi))
            };
            let sep = if first { "" } else { "," };
            first = false;
            write!(f, "{sep} {class} {cpus} ({range})")?;
        }
        Ok(())
    }
}

/// Read the capacity of every CPU in `cpus`: `cpu_capacity` if every one
/// of them has it, else `cpufreq/cpuinfo_max_freq` if every one has that,
/// else `Ok(None)` (absent: a VM, a container without sysfs, another OS).
/// A value that is not a positive integer is an error.
pub fn read_core_classes(root: &Path, cpus: &CpuSet) -> Result<Option<CoreClasses>, TopologyError> {
    if cpus.is_empty() {
        return Ok(None);
    }
    'sources: for source in [CapacitySource::CpuCapacity, CapacitySource::MaxFreq] {
        let mut values = BTreeMap::new();
        for cpu in cpus {
            let path = under(root, &format!("{CPU_DIR}/cpu{cpu}/{}", source.file()));
            let Some(text) = read_optional(&path)? else {
                continue 'sources;
            };
            match text.trim().parse::<u64>() {
                Ok(v) if v > 0 => {
                    values.insert(cpu, v);
                }
                _ => {
                    return Err(TopologyError::Malformed {
                        path,
                        detail: format!("{:?} is not a positive integer", text.trim()),
                    })
                }
            }
        }
        let classes = classify(&values);
        let cpus = values
            .iter()
            .map(|(&cpu, &value)| {
                let class = classes[&cpu];
                (cpu, CpuCapacity { value, class })
            })
            .collect();
        return Ok(Some(CoreClasses { source, cpus }));
    }
    Ok(None)
}

/// For each CPU in `cpus`, the hardware threads of its physical core
/// (itself included), from `cpuN/topology/core_cpus_list`, else the older
/// name `thread_siblings_list`. `Ok(None)` when a CPU has neither (VMs that
/// hide the topology, other OSes): then each CPU counts as its own core.
pub fn read_smt_siblings(
    root: &Path,
    cpus: &CpuSet,
) -> Result<Option<BTreeMap<usize, CpuSet>>, TopologyError> {
    if cpus.is_empty() {
        return Ok(None);
    }
    let mut out = BTreeMap::new();
    for cpu in cpus {
        let mut found = None;
        for name in ["core_cpus_list", "thread_siblings_list"] {
            let path = under(root, &format!("{CPU_DIR}/cpu{cpu}/topology/{name}"));
            if let Some(text) = read_optional(&path)? {
                let mut set = parse_cpu_list(&text).map_err(|e| TopologyError::Malformed {
                    path,
                    detail: e.to_string(),
                })?;
                set.insert(cpu);
                found = Some(set);
                break;
            }
        }
        let Some(set) = found else {
            return Ok(None);
        };
        out.insert(cpu, set);
    }
    Ok(Some(out))
}

/// Split CPUs into performance and efficiency classes by capacity.
///
/// The rule: the **slowest tier** — CPUs whose capacity is within
/// [`TIER_TOLERANCE_PERCENT`] (10 %) above the lowest value — is the
/// efficiency class, provided those CPUs are below
/// [`EFFICIENCY_THRESHOLD_PERCENT`] (80 %) of the highest value. Everything
/// else is performance. So:
/// - all CPUs equal, or Intel "favoured cores" a few percent apart: all
///   performance;
/// - big.LITTLE 1024 / 446: the 446s are efficiency;
/// - Intel hybrid by max frequency, 5.4 GHz P / 4.2 GHz E (78 %): E-cores
///   are efficiency;
/// - three tiers (phone SoCs: prime, big, little): only the little cores are
///   efficiency; the middle tier stays performance even when it is below
///   80 % of the prime core. Unity's lesson (the priority-inversion post):
///   excluding a middle tier by mistake left engines running on 2 cores
///   instead of 4–6, which costs more than the occasional slow core.
pub fn classify(values: &BTreeMap<usize, u64>) -> BTreeMap<usize, CoreClass> {
    let max = values.values().copied().max().unwrap_or(0) as u128;
    let min = values.values().copied().min().unwrap_or(0) as u128;
    values
        .iter()
        .map(|(&cpu, &v)| {
            let v = v as u128;
            let below_threshold = v * 100 < max * u128::from(EFFICIENCY_THRESHOLD_PERCENT);
            let in_slowest_tier = v * 100 <= min * u128::from(100 + TIER_TOLERANCE_PERCENT);
            let class = if below_threshold && in_slowest_tier {
                CoreClass::Efficiency
            } else {
                CoreClass::Performance
            };
            (cpu, class)
        })
        .collect()
}
