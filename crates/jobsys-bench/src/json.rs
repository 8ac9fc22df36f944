//! Result rows and their JSON files (one file per workload, one object per
//! row). Tables and plots are both drawn from these rows.

use crate::error::Result;
use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The machine that produced a row.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Machine {
    /// CPUs this process may use (`std::thread::available_parallelism`).
    pub cores: usize,
    /// `model name` from /proc/cpuinfo, or "unknown".
    pub cpu_model: String,
}

impl Machine {
    /// Describe the machine we run on.
    pub fn detect() -> Machine {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".to_string());
        Machine { cores, cpu_model }
    }
}

/// Which implementation a row measures, and with how many threads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    /// "jobsys", "rayon", "serial", or a workload-specific name.
    pub imp: String,
    /// The jobsys idle policy; `None` for the others.
    pub policy: Option<String>,
    /// The `--workers` value this row ran with (`None`: does not apply).
    pub workers: Option<usize>,
    /// Threads that run jobs: jobsys workers + the calling thread; the
    /// rayon pool's size; 1 for serial.
    pub threads: Option<usize>,
}

impl Label {
    /// The serial loop on the calling thread.
    pub fn serial() -> Label {
        Label {
            imp: "serial".into(),
            policy: None,
            workers: None,
            threads: Some(1),
        }
    }
}

/// One line of a table, one object in a workload's JSON file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Row {
    /// Workload name, as the subcommand ("frame-graph").
    pub workload: String,
    /// The variant within the workload ("single", "D=0.5us", ...).
    pub case: String,
    /// Implementation: "jobsys", "rayon", "serial", "ideal", a primitive.
    #[serde(rename = "impl")]
    pub imp: String,
    /// jobsys idle policy, when the row is jobsys.
    pub policy: Option<String>,
    /// The `--workers` value (jobsys: worker threads besides the caller).
    pub workers: Option<usize>,
    /// Threads that ran jobs.
    pub threads: Option<usize>,
    /// Everything else that defines the row (sizes, D, N, counters).
    pub params: Map<String, Value>,
    /// Samples behind the figures (0 for computed reference rows).
    pub n: usize,
    /// Median.
    pub median: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Unit of median..p90 (and of `samples`).
    pub unit: String,
    /// The raw samples, for rows whose distribution is plotted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<Vec<f64>>,
    /// Where it ran.
    pub machine: Machine,
}

impl Row {
    /// A measured row.
    #[allow(clippy::too_many_arguments)]
    pub fn measured(
        workload: &str,
        case: &str,
        label: &Label,
        params: Map<String, Value>,
        unit: &str,
        s: &Summary,
        samples: Option<Vec<f64>>,
        machine: &Machine,
    ) -> Row {
        Row {
            workload: workload.into(),
            case: case.into(),
            imp: label.imp.clone(),
            policy: label.policy.clone(),
            workers: label.workers,
            threads: label.threads,
            params,
            n: s.n,
            median: s.median,
            p99: s.p99,
            min: s.min,
            max: s.max,
            p10: s.p10,
            p90: s.p90,
            unit: unit.into(),
            samples,
            machine: machine.clone(),
        }
    }

    /// A computed reference row (e.g. the ideal frame time): every figure
    /// is `value`, `n` is 0.
    #[allow(clippy::too_many_arguments)]
    pub fn reference(
        workload: &str,
        case: &str,
        imp: &str,
        workers: Option<usize>,
        params: Map<String, Value>,
        unit: &str,
        value: f64,
        machine: &Machine,
    ) -> Row {
        let s = Summary {
            n: 0,
            median: value,
            p10: value,
            p90: value,
            p99: value,
            min: value,
            max: value,
            mean: value,
        };
        let label = Label {
            imp: imp.into(),
            policy: None,
            workers,
            threads: None,
        };
        Row::measured(workload, case, &label, params, unit, &s, None, machine)
    }

    /// A parameter as f64, if present and numeric.
    pub fn param_f64(&self, key: &str) -> Option<f64> {
        self.params.get(key).and_then(Value::as_f64)
    }

    /// Implementation name with the policy, as tables and legends show it.
    pub fn display_impl(&self) -> String {
        match &self.policy {
            Some(p) => format!("{}[{p}]", self.imp),
            None => self.imp.clone(),
        }
    }
}

/// Build a params map: `params!{"D_us" => 0.5, "jobs" => 500}`.
#[macro_export]
macro_rules! params {
    ($($k:expr => $v:expr),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut m = serde_json::Map::new();
        $( m.insert($k.to_string(), serde_json::json!($v)); )*
        m
    }};
}

/// Path of a workload's JSON file in `out`.
pub fn path_for(out: &Path, workload: &str) -> PathBuf {
    out.join(format!("{workload}.json"))
}

/// Path where [`write`] keeps the previous run's rows of a workload:
/// `out/<workload>.prev.json`.
pub fn prev_path_for(out: &Path, workload: &str) -> PathBuf {
    out.join(format!("{workload}.prev.json"))
}

/// What [`write`] did: the file written, and where the rows it replaced
/// went (`None` when there was no earlier file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// `out/<workload>.json`.
    pub path: PathBuf,
    /// `out/<workload>.prev.json` when `path` existed before.
    pub prev: Option<PathBuf>,
}

impl Written {
    /// One line for the table's footer: where the rows are, and whether an
    /// earlier run's were replaced.
    pub fn describe(&self) -> String {
        match &self.prev {
            None => format!("rows: {}", self.path.display()),
            Some(prev) => format!(
                "rows: {} (replaced an earlier run's rows, now kept as {})",
                self.path.display(),
                prev.display()
            ),
        }
    }
}

/// Write `rows` as a pretty JSON array to `out/<workload>.json`. An
/// earlier file there is not lost silently: it is renamed to
/// `out/<workload>.prev.json` (replacing an older one), one run back.
pub fn write(out: &Path, workload: &str, rows: &[Row]) -> Result<Written> {
    std::fs::create_dir_all(out)?;
    let path = path_for(out, workload);
    let text = serde_json::to_string_pretty(rows)?;
    let prev = if path.exists() {
        let prev = prev_path_for(out, workload);
        std::fs::rename(&path, &prev)?;
        Some(prev)
    } else {
        None
    };
    std::fs::write(&path, text + "\n")?;
    Ok(Written { path, prev })
}

/// Read the rows of a JSON file written by [`write`].
pub fn read(path: &Path) -> Result<Vec<Row>> {
    let text = std::fs::read_to_string(path)?;
    Ok(serde_json::from_str(&text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: f64) -> Vec<Row> {
        let machine = Machine {
            cores: 2,
            cpu_model: "test".into(),
        };
        vec![Row::reference(
            "w",
            "c",
            "ideal",
            None,
            Map::new(),
            "us",
            v,
            &machine,
        )]
    }

    /// A second run does not silently overwrite the first: its rows move
    /// to `<workload>.prev.json`, and the footer line says so.
    #[test]
    fn write_keeps_the_previous_run() {
        let out = std::env::temp_dir().join(format!("jobsys-bench-json-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let first = write(&out, "w", &rows(1.0)).unwrap();
        assert_eq!(first.prev, None);
        assert!(
            !first.describe().contains("replaced"),
            "{}",
            first.describe()
        );
        let second = write(&out, "w", &rows(2.0)).unwrap();
        let prev = prev_path_for(&out, "w");
        assert_eq!(second.prev.as_deref(), Some(prev.as_path()));
        assert!(
            second.describe().contains("replaced"),
            "{}",
            second.describe()
        );
        assert!(
            second.describe().contains("w.prev.json"),
            "{}",
            second.describe()
        );
        assert_eq!(read(&second.path).unwrap()[0].median, 2.0);
        assert_eq!(read(&prev).unwrap()[0].median, 1.0);
        // A third run: the previous one is the second, not the first.
        write(&out, "w", &rows(3.0)).unwrap();
        assert_eq!(read(&prev).unwrap()[0].median, 2.0);
        std::fs::remove_dir_all(&out).unwrap();
    }
}
