//! The serial replay of a frame and the checker that compares a real run's
//! records with it.
//!
//! [`replay`] walks a [`FramePlan`] in plan order (a valid serial order):
//! which nodes run, which fail by their own injected panic, which are
//! skipped because something they (transitively) depend on failed, and the
//! value every node that runs must compute. [`check_frame`] then holds a
//! [`FrameRecord`] of the real run against it:
//!
//! - every job that should run ran exactly once (every parallel_for index
//!   exactly once; a failed loop's indices at most once and its panicking
//!   index once); skipped jobs and the children of failed spawners never ran;
//! - every job started (global sequence number) after each of its
//!   dependencies ended; a child started after its parent started, after its
//!   sibling dependencies ended, and ended before its parent ended;
//! - every value a job computed (from its dependencies' values) and every
//!   index a loop wrote equals the serial replay's;
//! - every wait (`try_complete` at sync points and at the end) reports
//!   success for jobs that ran, `Panicked` (not via a dependency, with the
//!   job's own marker message) for exactly the injected jobs, and `Panicked`
//!   via a dependency, with the message of one of the failed ancestors, for
//!   exactly their transitive dependents; the combine of the whole frame
//!   fails via a dependency iff anything failed; every handle reads complete
//!   afterwards.
//!
//! The value formulas live here ([`mix`] and friends) so the jobs in
//! [`super::frame`] and the replay cannot drift apart.

use super::faults;
use super::plan::{FramePlan, Inject, SingleApi, Work};
use jobsys::JobError;

/// Combine two words (SplitMix64's finalizer over `a ^ b·φ`).
pub fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The value a node starts from: its seed mixed with its dependencies'
/// values in dependency order.
pub fn node_input(seed: u64, deps: impl IntoIterator<Item = u64>) -> u64 {
    deps.into_iter().fold(seed, mix)
}

/// What index `k` of a loop whose input is `input` writes.
pub fn index_value(input: u64, k: usize) -> u64 {
    mix(input, k as u64 + 1)
}

/// A child's value: its seed, its parent's input, its sibling dependencies.
pub fn child_value(seed: u64, parent_input: u64, deps: impl IntoIterator<Item = u64>) -> u64 {
    deps.into_iter().fold(mix(seed, parent_input), mix)
}

/// A spawner's value: its input mixed with its children's values in order.
pub fn spawner_value(input: u64, children: impl IntoIterator<Item = u64>) -> u64 {
    children.into_iter().fold(mix(input, 0x5_9A3E), mix)
}

/// One side of a join node (sides 1 and 2 outer, 3 and 4 nested in 2).
pub fn join_side(input: u64, side: u64) -> u64 {
    mix(input, 0x10_1E00 + side)
}

/// A join node's value from its three leaves.
pub fn join_value(a: u64, b: (u64, u64)) -> u64 {
    mix(mix(a, b.0), b.1)
}

/// What a wait on a handle returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Success.
    Ok,
    /// `JobError::Panicked`.
    Panicked {
        /// `JobPanic::via_dependency`.
        via_dependency: bool,
        /// `JobPanic::message`.
        message: String,
    },
    /// Any other error (never expected).
    Other(String),
}

impl Outcome {
    /// The outcome of a `try_complete`.
    pub fn of(r: Result<(), JobError>) -> Outcome {
        match r {
            Ok(()) => Outcome::Ok,
            Err(JobError::Panicked(p)) => Outcome::Panicked {
                via_dependency: p.via_dependency(),
                message: p.message().to_string(),
            },
            Err(e) => Outcome::Other(e.to_string()),
        }
    }
}

/// What the run recorded for one node. Sequence numbers come from one
/// global counter per frame; 0 means "never".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRecord {
    /// Run count per index (one entry for a single job).
    pub runs: Vec<u32>,
    /// First start (smallest over a loop's indices).
    pub start: u64,
    /// Last end (largest over a loop's indices); 0 if it never ended.
    pub end: u64,
    /// The value dependents read.
    pub value: u64,
    /// Written value per index (a single job: its value).
    pub values: Vec<u64>,
    /// The final `try_complete`.
    pub outcome: Outcome,
    /// `try_complete` results at sync points that waited on this node.
    pub sync_outcomes: Vec<Outcome>,
}

/// What the run recorded for one child of a spawner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildRecord {
    /// Runs.
    pub runs: u32,
    /// Start sequence number (0: never).
    pub start: u64,
    /// End sequence number (0: never).
    pub end: u64,
    /// Its value.
    pub value: u64,
}

/// Everything one frame recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameRecord {
    /// Per node.
    pub nodes: Vec<NodeRecord>,
    /// Per child.
    pub children: Vec<ChildRecord>,
    /// `try_complete` of the combine of all nodes.
    pub combined: Outcome,
    /// Every node's handle read complete after the waits.
    pub all_complete: bool,
    /// Mismatches found by the frame's extra phases (scope, join, burst,
    /// spawners' waits), already as messages.
    pub errors: Vec<String>,
    /// Jobs run by the extra phases (scope, burst, join sides, hot-zone job).
    pub extra_jobs: u64,
}

/// What the serial replay says about a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Runs and succeeds.
    Ran,
    /// Runs and panics (injected).
    Failed,
    /// Does not run: a dependency failed.
    Skipped,
}

/// The serial replay of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// Per node.
    pub status: Vec<Status>,
    /// Per node: the input (0 unless it runs).
    pub input: Vec<u64>,
    /// Per node: the value dependents read (0 unless it ran).
    pub value: Vec<u64>,
    /// Per child: its value (0 unless its parent ran).
    pub child_value: Vec<u64>,
    /// Per node: the failed (injected) ancestors that made it skip.
    pub causes: Vec<Vec<u32>>,
}

/// Replay `plan` serially.
pub fn replay(plan: &FramePlan) -> Expected {
    let n = plan.nodes.len();
    let mut e = Expected {
        status: Vec::with_capacity(n),
        input: vec![0; n],
        value: vec![0; n],
        child_value: vec![0; plan.children.len()],
        causes: vec![Vec::new(); n],
    };
    for (i, node) in plan.nodes.iter().enumerate() {
        let mut causes = Vec::new();
        for &d in &node.deps {
            match e.status[d as usize] {
                Status::Ran => {}
                Status::Failed => causes.push(d),
                Status::Skipped => causes.extend_from_slice(&e.causes[d as usize]),
            }
        }
        causes.sort_unstable();
        causes.dedup();
        if !causes.is_empty() {
            e.status.push(Status::Skipped);
            e.causes[i] = causes;
            continue;
        }
        if node.inject != Inject::None {
            e.status.push(Status::Failed);
            continue;
        }
        e.status.push(Status::Ran);
        let input = node_input(node.seed, node.deps.iter().map(|&d| e.value[d as usize]));
        e.input[i] = input;
        e.value[i] = match node.work {
            Work::Single(SingleApi::Spawner) => {
                for c in node.children.clone() {
                    let cp = &plan.children[c as usize];
                    e.child_value[c as usize] = child_value(
                        cp.seed,
                        input,
                        cp.deps.iter().map(|&d| e.child_value[d as usize]),
                    );
                }
                spawner_value(
                    input,
                    node.children.clone().map(|c| e.child_value[c as usize]),
                )
            }
            Work::Single(SingleApi::Join) => join_value(
                join_side(input, 1),
                (join_side(input, 3), join_side(input, 4)),
            ),
            _ => input,
        };
    }
    e
}

/// Counts of one checked frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Job runs recorded (graph jobs and indices, children, extra phases).
    pub jobs: u64,
    /// Injected panics that fired (nodes the replay says fail).
    pub injected: u64,
    /// Injected panics that could not fire (downstream of another failure).
    pub masked: u64,
    /// Nodes whose final wait reported their own panic.
    pub reported: u64,
    /// Nodes the replay says fail via a dependency.
    pub dependents_expected: u64,
    /// Nodes whose final wait reported a failure via a dependency.
    pub dependents_failed: u64,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Tally) {
        self.jobs += o.jobs;
        self.injected += o.injected;
        self.masked += o.masked;
        self.reported += o.reported;
        self.dependents_expected += o.dependents_expected;
        self.dependents_failed += o.dependents_failed;
    }
}

/// Does `got` match what a wait on node `i` with status `st` must report?
fn judge(i: usize, st: Status, causes: &[u32], got: &Outcome, what: &str) -> Option<String> {
    match (st, got) {
        (Status::Ran, Outcome::Ok) => None,
        (Status::Ran, o) => Some(format!(
            "job {i}: {what} reported {o:?}, expected success (an extra failure)"
        )),
        (
            Status::Failed,
            Outcome::Panicked {
                via_dependency: false,
                message,
            },
        ) if *message == faults::job_message(i) => None,
        (Status::Failed, o) => Some(format!(
            "job {i}: injected panic, {what} reported {o:?} (expected Panicked, not via a dependency, message {:?}; a missing failure)",
            faults::job_message(i)
        )),
        (
            Status::Skipped,
            Outcome::Panicked {
                via_dependency: true,
                message,
            },
        ) if causes.iter().any(|&c| *message == faults::job_message(c as usize)) => None,
        (Status::Skipped, o) => Some(format!(
            "job {i}: depends on failed jobs {causes:?}, {what} reported {o:?} (expected Panicked via a dependency with one of their messages)"
        )),
    }
}

/// Check one frame's records against the serial replay of its plan.
/// Returns the counts and every mismatch found (empty: the frame is good).
pub fn check_frame(plan: &FramePlan, rec: &FrameRecord) -> (Tally, Vec<String>) {
    let mut t = Tally::default();
    let mut bad = rec.errors.clone();
    if rec.nodes.len() != plan.nodes.len() || rec.children.len() != plan.children.len() {
        bad.push(format!(
            "record has {} nodes and {} children, the plan {} and {}",
            rec.nodes.len(),
            rec.children.len(),
            plan.nodes.len(),
            plan.children.len()
        ));
        return (t, bad);
    }
    let e = replay(plan);
    let started_after = |bad: &mut Vec<String>, who: String, start: u64, deps: &[u64]| {
        if start == 0 {
            bad.push(format!("{who} has no start record"));
            return;
        }
        for &d in deps {
            let end = rec.nodes[d as usize].end;
            if end == 0 || end >= start {
                bad.push(format!(
                    "{who} started (seq {start}) before its dependency job {d} ended (seq {end})"
                ));
            }
        }
    };
    for (i, (node, r)) in plan.nodes.iter().zip(&rec.nodes).enumerate() {
        let st = e.status[i];
        t.jobs += r.runs.iter().map(|&c| u64::from(c)).sum::<u64>();
        if r.runs.len() != node.work.slots() || r.values.len() != node.work.slots() {
            bad.push(format!(
                "job {i}: {} run counters and {} values, the plan has {} indices",
                r.runs.len(),
                r.values.len(),
                node.work.slots()
            ));
            continue;
        }
        let index = |k: usize| match node.work {
            Work::Single(_) => String::new(),
            _ => format!(" index {k}"),
        };
        let deps: Vec<u64> = node.deps.iter().map(|&d| u64::from(d)).collect();
        match st {
            Status::Ran => {
                for (k, &c) in r.runs.iter().enumerate() {
                    if c != 1 {
                        bad.push(format!(
                            "job {i}{} ran {c} times (expected exactly once)",
                            index(k)
                        ));
                    }
                }
                started_after(&mut bad, format!("job {i}"), r.start, &deps);
                if r.start != 0 && r.end <= r.start {
                    bad.push(format!(
                        "job {i} ended (seq {}) before it started (seq {})",
                        r.end, r.start
                    ));
                }
                if r.value != e.value[i] {
                    bad.push(format!(
                        "job {i} computed {:#x}, the serial replay {:#x}",
                        r.value, e.value[i]
                    ));
                }
                let want = |k: usize| match node.work {
                    Work::Single(_) => e.value[i],
                    _ => index_value(e.input[i], k),
                };
                if let Some(k) = (0..r.values.len()).find(|&k| r.values[k] != want(k)) {
                    bad.push(format!(
                        "job {i}{} wrote {:#x}, the serial replay {:#x}",
                        index(k),
                        r.values[k],
                        want(k)
                    ));
                }
            }
            Status::Failed => {
                t.injected += 1;
                let fired = match node.inject {
                    Inject::PanicAt(k) => k,
                    _ => 0,
                };
                for (k, &c) in r.runs.iter().enumerate() {
                    if c > 1 || (k == fired && c != 1) {
                        bad.push(format!(
                            "job {i}{} (injected panic) ran {c} times (expected {})",
                            index(k),
                            if k == fired { "once" } else { "at most once" }
                        ));
                    }
                }
                started_after(&mut bad, format!("job {i}"), r.start, &deps);
            }
            Status::Skipped => {
                t.dependents_expected += 1;
                if node.inject != Inject::None {
                    t.masked += 1;
                }
                if let Some(k) = r.runs.iter().position(|&c| c != 0) {
                    bad.push(format!(
                        "job {i}{} ran {} times although jobs it depends on failed ({:?})",
                        index(k),
                        r.runs[k],
                        e.causes[i]
                    ));
                }
            }
        }
        match &r.outcome {
            Outcome::Panicked {
                via_dependency: false,
                ..
            } => t.reported += 1,
            Outcome::Panicked {
                via_dependency: true,
                ..
            } => t.dependents_failed += 1,
            _ => {}
        }
        bad.extend(judge(i, st, &e.causes[i], &r.outcome, "its final wait"));
        for o in &r.sync_outcomes {
            bad.extend(judge(i, st, &e.causes[i], o, "a sync-point wait"));
        }
        for c in node.children.clone() {
            let (cp, rc) = (&plan.children[c as usize], &rec.children[c as usize]);
            t.jobs += u64::from(rc.runs);
            if st != Status::Ran {
                if rc.runs != 0 {
                    bad.push(format!(
                        "child {c} of job {i} ran {} times although its parent failed",
                        rc.runs
                    ));
                }
                continue;
            }
            if rc.runs != 1 {
                bad.push(format!(
                    "child {c} of job {i} ran {} times (expected exactly once)",
                    rc.runs
                ));
            }
            if rc.start <= r.start || (r.end != 0 && rc.end >= r.end) || rc.end <= rc.start {
                bad.push(format!(
                    "child {c} of job {i} ran at seq {}..{}, outside its parent's {}..{}",
                    rc.start, rc.end, r.start, r.end
                ));
            }
            for &d in &cp.deps {
                let end = rec.children[d as usize].end;
                if end == 0 || end >= rc.start {
                    bad.push(format!(
                        "child {c} started (seq {}) before its sibling dependency {d} ended (seq {end})",
                        rc.start
                    ));
                }
            }
            if rc.value != e.child_value[c as usize] {
                bad.push(format!(
                    "child {c} of job {i} computed {:#x}, the serial replay {:#x}",
                    rc.value, e.child_value[c as usize]
                ));
            }
        }
    }
    let failed: Vec<u32> = (0..plan.nodes.len() as u32)
        .filter(|&i| e.status[i as usize] == Status::Failed)
        .collect();
    let combined_ok = match &rec.combined {
        Outcome::Ok => failed.is_empty(),
        Outcome::Panicked {
            via_dependency: true,
            message,
        } => failed
            .iter()
            .any(|&c| *message == faults::job_message(c as usize)),
        Outcome::Panicked { .. } | Outcome::Other(_) => false,
    };
    if !combined_ok {
        bad.push(format!(
            "the combine of the frame reported {:?}; failed jobs: {failed:?}",
            rec.combined
        ));
    }
    if !rec.all_complete {
        bad.push("a handle read incomplete after its wait returned".into());
    }
    t.jobs += rec.extra_jobs;
    (t, bad)
}

/// The record a correct serial run of `plan` leaves: what the checker must
/// accept. (Tests mutate it to prove the checker rejects bad records.)
pub fn serial_record(plan: &FramePlan) -> FrameRecord {
    let e = replay(plan);
    let mut seq = 0u64;
    let mut tick = || {
        seq += 1;
        seq
    };
    let mut children: Vec<ChildRecord> = plan
        .children
        .iter()
        .map(|_| ChildRecord {
            runs: 0,
            start: 0,
            end: 0,
            value: 0,
        })
        .collect();
    let mut nodes = Vec::with_capacity(plan.nodes.len());
    for (i, node) in plan.nodes.iter().enumerate() {
        let slots = node.work.slots();
        let mut r = NodeRecord {
            runs: vec![0; slots],
            start: 0,
            end: 0,
            value: 0,
            values: vec![0; slots],
            outcome: Outcome::Ok,
            sync_outcomes: Vec::new(),
        };
        match e.status[i] {
            Status::Ran => {
                r.start = tick();
                r.runs = vec![1; slots];
                for c in node.children.clone() {
                    let rc = &mut children[c as usize];
                    rc.runs = 1;
                    rc.start = tick();
                    rc.value = e.child_value[c as usize];
                    rc.end = tick();
                }
                r.value = e.value[i];
                r.values = match node.work {
                    Work::Single(_) => vec![e.value[i]],
                    _ => (0..slots).map(|k| index_value(e.input[i], k)).collect(),
                };
                r.end = tick();
            }
            Status::Failed => {
                r.start = tick();
                let k = match node.inject {
                    Inject::PanicAt(k) => k,
                    _ => 0,
                };
                r.runs[k] = 1;
                r.outcome = Outcome::Panicked {
                    via_dependency: false,
                    message: faults::job_message(i),
                };
            }
            Status::Skipped => {
                r.outcome = Outcome::Panicked {
                    via_dependency: true,
                    message: faults::job_message(e.causes[i][0] as usize),
                };
            }
        }
        nodes.push(r);
    }
    let first_failed = e.status.iter().position(|&s| s == Status::Failed);
    FrameRecord {
        nodes,
        children,
        combined: match first_failed {
            None => Outcome::Ok,
            Some(c) => Outcome::Panicked {
                via_dependency: true,
                message: faults::job_message(c),
            },
        },
        all_complete: true,
        errors: Vec::new(),
        extra_jobs: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ChildPlan, PlanNode, Sizes};
    use jobsys::{Batch, Priority};
    use jobsys_bench::graph::GraphParams;

    fn node(deps: &[u32], work: Work, children: std::ops::Range<u32>) -> PlanNode {
        PlanNode {
            deps: deps.to_vec(),
            sync: None,
            work,
            priority: Priority::Normal,
            dur_ns: 0,
            inject: Inject::None,
            seed: 0xABC + u64::from(deps.len() as u32) * 7 + children.start as u64,
            children,
        }
    }

    /// 0 ← 1, 0 ← 2 (loop of 5), {1, 2} ← 3 (spawner of 2 children, the
    /// second after the first), 3 ← 4 (chunked loop of 4).
    fn small_plan() -> FramePlan {
        let mut p = FramePlan::generate(1, 0, &Sizes::quick(), false);
        p.graph = GraphParams::quick();
        p.nodes = vec![
            node(&[], Work::Single(SingleApi::Schedule), 0..0),
            node(&[0], Work::Single(SingleApi::ScheduleWith), 0..0),
            node(
                &[0],
                Work::PerIndex {
                    len: 5,
                    batch: Batch::Auto,
                },
                0..0,
            ),
            node(&[1, 2], Work::Single(SingleApi::Spawner), 0..2),
            node(
                &[3],
                Work::Chunked {
                    len: 4,
                    batch: Batch::Fixed(2),
                },
                2..2,
            ),
        ];
        p.children = vec![
            ChildPlan {
                parent: 3,
                deps: vec![],
                priority: Priority::High,
                dur_ns: 0,
                seed: 11,
            },
            ChildPlan {
                parent: 3,
                deps: vec![0],
                priority: Priority::Low,
                dur_ns: 0,
                seed: 12,
            },
        ];
        p
    }

    fn errors(plan: &FramePlan, rec: &FrameRecord) -> Vec<String> {
        check_frame(plan, rec).1
    }

    fn assert_caught(plan: &FramePlan, rec: &FrameRecord, needle: &str) {
        let e = errors(plan, rec);
        assert!(
            e.iter().any(|m| m.contains(needle)),
            "expected a mismatch containing {needle:?}, got {e:#?}"
        );
    }

    #[test]
    fn a_correct_serial_record_passes() {
        let p = small_plan();
        let rec = serial_record(&p);
        let (t, e) = check_frame(&p, &rec);
        assert!(e.is_empty(), "{e:#?}");
        assert_eq!(t.jobs, 1 + 1 + 5 + 1 + 4 + 2);
        assert_eq!(t.injected, 0);
    }

    #[test]
    fn serial_records_of_generated_plans_pass() {
        let mut injected = 0;
        for s in 0..300u64 {
            let p = FramePlan::generate(s ^ 0xF00D, s, &Sizes::quick(), false);
            let (t, e) = check_frame(&p, &serial_record(&p));
            assert!(e.is_empty(), "seed {s}: {e:#?}");
            assert_eq!(t.reported, t.injected);
            assert_eq!(t.dependents_failed, t.dependents_expected);
            assert_eq!(t.injected + t.masked, p.planned_faults() as u64);
            injected += t.injected;
        }
        assert!(injected > 0);
    }

    #[test]
    fn catches_a_job_run_twice() {
        let p = small_plan();
        let mut rec = serial_record(&p);
        rec.nodes[1].runs[0] = 2;
        assert_caught(&p, &rec, "job 1 ran 2 times");
    }

    #[test]
    fn catches_a_job_started_before_its_dependency_ended() {
        let p = small_plan();
        let mut rec = serial_record(&p);
        rec.nodes[2].start = rec.nodes[0].end - 1;
        assert_caught(&p, &rec, "job 2 started");
        let mut rec = serial_record(&p);
        rec.nodes[0].end = 0; // dependency never ended
        assert_caught(&p, &rec, "before its dependency job 0 ended");
    }

    #[test]
    fn catches_a_missing_or_doubled_parallel_for_index() {
        let p = small_plan();
        let mut rec = serial_record(&p);
        rec.nodes[2].runs[3] = 0;
        assert_caught(&p, &rec, "job 2 index 3 ran 0 times");
        let mut rec = serial_record(&p);
        rec.nodes[4].runs[0] = 2;
        assert_caught(&p, &rec, "job 4 index 0 ran 2 times");
    }

    #[test]
    fn catches_wrong_values() {
        let p = small_plan();
        let mut rec = serial_record(&p);
        rec.nodes[3].value ^= 1;
        assert_caught(&p, &rec, "job 3 computed");
        let mut rec = serial_record(&p);
        rec.nodes[2].values[4] ^= 1;
        assert_caught(&p, &rec, "job 2 index 4 wrote");
        let mut rec = serial_record(&p);
        rec.children[1].value ^= 1;
        assert_caught(&p, &rec, "child 1 of job 3 computed");
    }

    #[test]
    fn catches_child_order_violations() {
        let p = small_plan();
        let mut rec = serial_record(&p);
        rec.children[1].start = rec.children[0].end;
        assert_caught(&p, &rec, "before its sibling dependency 0 ended");
        let mut rec = serial_record(&p);
        rec.children[0].end = rec.nodes[3].end + 1;
        assert_caught(&p, &rec, "outside its parent's");
    }

    #[test]
    fn catches_an_extra_failure() {
        let p = small_plan();
        let mut rec = serial_record(&p);
        rec.nodes[4].outcome = Outcome::Panicked {
            via_dependency: false,
            message: faults::job_message(4),
        };
        assert_caught(&p, &rec, "job 4: its final wait reported");
        let mut rec = serial_record(&p);
        rec.combined = Outcome::Panicked {
            via_dependency: true,
            message: faults::job_message(1),
        };
        assert_caught(&p, &rec, "the combine of the frame");
    }

    fn with_fault_in_1() -> FramePlan {
        let mut p = small_plan();
        p.nodes[1].inject = Inject::Panic;
        p
    }

    #[test]
    fn failures_follow_dependencies() {
        let p = with_fault_in_1();
        let e = replay(&p);
        assert_eq!(
            e.status,
            [
                Status::Ran,
                Status::Failed,
                Status::Ran,
                Status::Skipped,
                Status::Skipped
            ]
        );
        assert_eq!(e.causes[4], [1]);
        let (t, errs) = check_frame(&p, &serial_record(&p));
        assert!(errs.is_empty(), "{errs:#?}");
        assert_eq!((t.injected, t.reported), (1, 1));
        assert_eq!((t.dependents_expected, t.dependents_failed), (2, 2));
    }

    #[test]
    fn catches_a_missing_failure() {
        let p = with_fault_in_1();
        let mut rec = serial_record(&p);
        rec.nodes[1].outcome = Outcome::Ok;
        assert_caught(
            &p,
            &rec,
            "job 1: injected panic, its final wait reported Ok",
        );
        let mut rec = serial_record(&p);
        rec.nodes[4].outcome = Outcome::Ok;
        assert_caught(&p, &rec, "job 4: depends on failed jobs [1]");
        let mut rec = serial_record(&p);
        rec.combined = Outcome::Ok;
        assert_caught(&p, &rec, "the combine of the frame reported Ok");
    }

    #[test]
    fn catches_a_wrong_failure_kind_or_cause() {
        let p = with_fault_in_1();
        let mut rec = serial_record(&p);
        rec.nodes[3].outcome = Outcome::Panicked {
            via_dependency: false,
            message: faults::job_message(1),
        };
        assert_caught(&p, &rec, "job 3: depends on failed jobs [1]");
        let mut rec = serial_record(&p);
        rec.nodes[1].outcome = Outcome::Panicked {
            via_dependency: false,
            message: faults::job_message(2),
        };
        assert_caught(&p, &rec, "job 1: injected panic");
        let mut rec = serial_record(&p);
        rec.nodes[1].sync_outcomes.push(Outcome::Ok);
        assert_caught(&p, &rec, "a sync-point wait reported Ok");
    }

    #[test]
    fn catches_a_skipped_job_or_child_that_ran() {
        let p = with_fault_in_1();
        let mut rec = serial_record(&p);
        rec.nodes[4].runs[2] = 1;
        assert_caught(&p, &rec, "job 4 index 2 ran 1 times although");
        let mut rec = serial_record(&p);
        rec.children[0].runs = 1;
        assert_caught(
            &p,
            &rec,
            "child 0 of job 3 ran 1 times although its parent failed",
        );
    }

    #[test]
    fn catches_an_incomplete_handle_and_extra_phase_errors() {
        let p = small_plan();
        let mut rec = serial_record(&p);
        rec.all_complete = false;
        rec.errors.push("burst: job 7 ran 0 times".into());
        let e = errors(&p, &rec);
        assert!(e.iter().any(|m| m.contains("read incomplete")), "{e:#?}");
        assert!(e.iter().any(|m| m.contains("burst: job 7")), "{e:#?}");
    }
}
