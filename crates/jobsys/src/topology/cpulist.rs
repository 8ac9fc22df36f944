//! [`CpuSet`] and the kernel's CPU list syntax (`"0-3,8-11"`), as found in
//! `/sys/devices/system/cpu/online` and `cpuset.cpus`.
//!
//! Owns: parsing and printing CPU lists. Invariant: a `CpuSet` only holds
//! CPU numbers below [`MAX_CPU`], so a malformed file cannot make us build
//! a set of billions of CPUs.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// CPU numbers at or above this are rejected by [`parse_cpu_list`]. Linux's
/// largest configuration (`CONFIG_MAXSMP`) has 8192 CPUs.
pub const MAX_CPU: usize = 1 << 16;

/// A set of logical CPU numbers, printed in the kernel's list syntax.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuSet(BTreeSet<usize>);

impl CpuSet {
    /// The empty set.
    pub fn new() -> CpuSet {
        CpuSet::default()
    }
    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.0.contains(&cpu)
    }
    /// Add `cpu`; returns whether it was new.
    pub fn insert(&mut self, cpu: usize) -> bool {
        self.0.insert(cpu)
    }
    /// Remove `cpu`; returns whether it was there.
    pub fn remove(&mut self, cpu: usize) -> bool {
        self.0.remove(&cpu)
    }
    /// The lowest CPU number in the set.
    pub fn first(&self) -> Option<usize> {
        self.0.first().copied()
    }
    /// The CPU numbers in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().copied()
    }
    /// The CPUs in both sets.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.intersection(&other.0).copied().collect())
    }
    /// The CPUs in `self` but not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.difference(&other.0).copied().collect())
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        CpuSet(iter.into_iter().collect())
    }
}

impl<'a> IntoIterator for &'a CpuSet {
    type Item = usize;
    type IntoIter = std::iter::Copied<std::collections::btree_set::Iter<'a, usize>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().copied()
    }
}

/// The kernel's list syntax: ascending, runs of consecutive CPUs as `a-b`,
/// e.g. `0-3,8-11`; the empty set prints as an empty string.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut iter = self.0.iter().copied().peekable();
        let mut first = true;
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end += 1;
                iter.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

impl FromStr for CpuSet {
    type Err = CpuListError;
    fn from_str(s: &str) -> Result<CpuSet, CpuListError> {
        parse_cpu_list(s)
    }
}

/// A CPU list that is not in the kernel's syntax.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuListError {
    /// The text that was parsed.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for CpuListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad CPU list {:?}: {}", self.input, self.reason)
    }
}

impl std::error::Error for CpuListError {}

/// Parse the kernel's CPU list syntax: comma-separated items, each `N` or
/// `N-M` with `N <= M`. Surrounding whitespace (the file's newline) is
/// ignored; an empty list is the empty set (sysfs writes that, e.g. in
/// `offline`). Anything else — empty items, reversed ranges, signs, the
/// `a-b:stride/group` input form, numbers of [`MAX_CPU`] or more — is an
/// error.
pub fn parse_cpu_list(s: &str) -> Result<CpuSet, CpuListError> {
    let text = s.trim();
    let err = |reason: String| CpuListError {
        input: s.to_string(),
        reason,
    };
    let mut set = CpuSet::new();
    if text.is_empty() {
        return Ok(set);
    }
    for item in text.split(',') {
        let (lo, hi) = match item.split_once('-') {
            Some((a, b)) => (parse_cpu(a).map_err(&err)?, parse_cpu(b).map_err(&err)?),
            None => {
                let n = parse_cpu(item).map_err(&err)?;
                (n, n)
            }
        };
        if lo > hi {
            return Err(err(format!("range {lo}-{hi} is reversed")));
        }
        set.0.extend(lo..=hi);
    }
    Ok(set)
}

fn parse_cpu(s: &str) -> Result<usize, String> {
    if s.is_empty() {
        return Err("empty item".to_string());
    }
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{s:?} is not a CPU number"));
    }
    match s.parse::<usize>() {
        Ok(n) if n < MAX_CPU => Ok(n),
        _ => Err(format!("CPU number {s} is too large (limit {MAX_CPU})")),
    }
}
