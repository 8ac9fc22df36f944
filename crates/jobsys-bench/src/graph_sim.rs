//! W3's frame graph run by a scheduler that costs nothing: what the graph
//! and jobsys's rules allow, with the machine and the scheduler's own costs
//! taken out.
//!
//! Time is counted in pieces (every piece takes one unit, as every piece of
//! W3 spins the same `D`). `threads` threads, each on a core of its own:
//! thread 0 is the main thread, the others are workers.
//!
//! - The main thread schedules the jobs in order at no cost until a sync
//!   point whose job has not finished, then waits for that job; at the end
//!   of the frame it waits for every job, newest first (as
//!   `frame_graph::jobsys_frame` does).
//! - A waiting main thread runs only pieces its target needs (the target
//!   and its unfinished dependencies, transitively): jobsys's rule
//!   ([`Rule::Needed`], docs/design-notes.md, "`complete` helps only with
//!   work the handle needs"); [`Rule::Any`] lets it take any runnable piece
//!   when nothing needed is left, for comparison.
//! - A worker takes needed work first (priority inheritance), else the
//!   oldest runnable job.
//! - A thread joining a parallel job takes `max(1, left / (2 x threads))`
//!   of its pieces at once, as jobsys's `run_pieces` does, and runs them
//!   without a break.
//!
//! Among runnable jobs a thread takes the oldest (the main thread, when no
//! job is needed, the newest: its own deque's top). In each unit the
//! workers choose first: an idle worker takes what is pushed while the
//! main thread is still scheduling.

use crate::graph::FrameGraph;

/// What a waiting main thread may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Only pieces its target needs (jobsys).
    Needed,
    /// Needed pieces first, else any runnable piece.
    Any,
}

/// The outcome of one simulated frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimFrame {
    /// Frame length, in pieces.
    pub makespan: u64,
    /// Units the main thread found nothing it may run.
    pub main_idle: u64,
    /// Makespan over the ideal (all pieces / threads).
    pub x_ideal: f64,
}

/// Run one frame of `g` on `threads` threads under `rule`.
pub fn simulate(g: &FrameGraph, threads: usize, rule: Rule) -> SimFrame {
    assert!(threads >= 1, "simulate: no thread");
    let n = g.nodes.len();
    let mut unstarted: Vec<u64> = (0..n).map(|i| u64::from(g.pieces(i))).collect();
    let mut left = unstarted.clone();
    let mut pending: Vec<usize> = g.nodes.iter().map(|x| x.deps.len()).collect();
    let dependents = g.dependents();
    let mut done = vec![false; n];
    let mut finished = 0usize;
    // Scheduled jobs whose dependencies have finished and that have
    // pieces nobody took yet, oldest first.
    let mut runnable: Vec<usize> = Vec::new();
    let mut scheduled = 0usize;
    // What each thread runs: (job, pieces, ends at).
    let mut busy: Vec<Option<(usize, u64, u64)>> = vec![None; threads];
    let mut target: Option<usize> = None;
    let mut end_from = n; // the end-of-frame waits look below this
    let (mut t, mut main_idle) = (0u64, 0u64);
    let mut needed = vec![false; n];
    let mut stack = Vec::new();
    while finished < n {
        // Pieces ending now.
        for b in busy.iter_mut() {
            if let Some((j, k, end)) = *b {
                if end == t {
                    *b = None;
                    left[j] -= k;
                    if left[j] == 0 {
                        done[j] = true;
                        finished += 1;
                        for &d in &dependents[j] {
                            pending[d as usize] -= 1;
                            if pending[d as usize] == 0 && (d as usize) < scheduled {
                                runnable.push(d as usize);
                            }
                        }
                    }
                }
            }
        }
        if finished == n {
            break;
        }
        // The main thread: schedule up to the next unfinished sync point,
        // then the end-of-frame waits.
        while target.is_none_or(|x| done[x]) {
            if scheduled < n {
                if let Some(s) = g.nodes[scheduled].sync {
                    if !done[s as usize] && target != Some(s as usize) {
                        target = Some(s as usize);
                        continue;
                    }
                }
                if pending[scheduled] == 0 {
                    runnable.push(scheduled);
                }
                scheduled += 1;
                target = None;
            } else {
                while end_from > 0 && done[end_from - 1] {
                    end_from -= 1;
                }
                target = Some(end_from - 1);
            }
        }
        runnable.sort_unstable();
        runnable.retain(|&j| unstarted[j] > 0);
        mark_needed(g, target.expect("a target"), &done, &mut needed, &mut stack);
        let take = |j: usize, unstarted: &mut Vec<u64>| {
            let k = (unstarted[j] / (2 * threads as u64)).max(1);
            unstarted[j] -= k;
            k
        };
        // Workers first: an idle worker takes what is pushed while the
        // main thread is still scheduling.
        for slot in busy.iter_mut().skip(1) {
            if slot.is_some() {
                continue;
            }
            let pick = runnable
                .iter()
                .copied()
                .filter(|&j| unstarted[j] > 0)
                .find(|&j| needed[j])
                .or_else(|| runnable.iter().copied().find(|&j| unstarted[j] > 0));
            if let Some(j) = pick {
                let k = take(j, &mut unstarted);
                *slot = Some((j, k, t + k));
            }
        }
        if busy[0].is_none() {
            let open = |&j: &usize| unstarted[j] > 0;
            let pick = runnable
                .iter()
                .copied()
                .filter(open)
                .find(|&j| needed[j])
                .or_else(|| match rule {
                    Rule::Any => runnable.iter().copied().rfind(open),
                    Rule::Needed => None,
                });
            match pick {
                Some(j) => {
                    let k = take(j, &mut unstarted);
                    busy[0] = Some((j, k, t + k));
                }
                None => main_idle += 1,
            }
        }
        t += 1;
    }
    let ideal = g.total_pieces() as f64 / threads as f64;
    SimFrame {
        makespan: t,
        main_idle,
        x_ideal: t as f64 / ideal,
    }
}

/// Set `needed[j]` for `x` and its unfinished dependencies, transitively.
fn mark_needed(
    g: &FrameGraph,
    x: usize,
    done: &[bool],
    needed: &mut [bool],
    stack: &mut Vec<usize>,
) {
    needed.iter_mut().for_each(|b| *b = false);
    stack.clear();
    stack.push(x);
    while let Some(j) = stack.pop() {
        if needed[j] || done[j] {
            continue;
        }
        needed[j] = true;
        stack.extend(g.nodes[j].deps.iter().map(|&d| d as usize));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{GraphParams, Kind, Node};

    fn graph(nodes: Vec<Node>) -> FrameGraph {
        FrameGraph {
            params: GraphParams::quick(),
            nodes,
        }
    }

    fn single(deps: &[u32], sync: Option<u32>) -> Node {
        Node {
            kind: Kind::Single,
            deps: deps.to_vec(),
            sync,
        }
    }

    #[test]
    fn one_thread_takes_all_the_work() {
        let g = FrameGraph::generate(&GraphParams::quick());
        let s = simulate(&g, 1, Rule::Needed);
        assert_eq!(s.makespan, g.total_pieces());
        assert_eq!(s.main_idle, 0);
    }

    #[test]
    fn a_chain_leaves_the_second_thread_nothing() {
        // 0 <- 1 <- 2: one piece at a time whatever the thread count.
        let g = graph(vec![
            single(&[], None),
            single(&[0], None),
            single(&[1], None),
        ]);
        assert_eq!(simulate(&g, 2, Rule::Needed).makespan, 3);
    }

    #[test]
    fn the_needed_rule_idles_the_main_thread_where_any_does_not() {
        // The main thread waits at a sync point for job 1, which needs job
        // 0, which the worker took; job 2 is runnable and not needed:
        // under `Needed` the main thread may not run it meanwhile.
        let g = graph(vec![
            single(&[], None),
            single(&[0], None),
            single(&[], None),
            single(&[], Some(1)),
        ]);
        let needed = simulate(&g, 2, Rule::Needed);
        let any = simulate(&g, 2, Rule::Any);
        assert!(needed.main_idle > any.main_idle, "{needed:?} vs {any:?}");
        assert!(needed.makespan >= any.makespan);
    }

    #[test]
    fn w3_under_both_rules() {
        // Printed for docs/benchmarks.md (`cargo test -p jobsys-bench
        // graph_sim -- --nocapture`); asserts only what must hold.
        let g = FrameGraph::generate(&GraphParams::seed_experiment());
        for threads in [2, 3, 5] {
            let needed = simulate(&g, threads, Rule::Needed);
            let any = simulate(&g, threads, Rule::Any);
            println!("W3, {threads} threads: needed {needed:?}, any {any:?}");
            assert!(needed.x_ideal >= 1.0 && any.x_ideal >= 1.0);
        }
    }

    #[test]
    fn loops_are_handed_out_in_chunks() {
        // One loop of 8 pieces on 2 threads: chunks of 2, 1, 1, 1, 1, 1, 1
        // (left / 4, at least 1) alternate between the threads: 4 units.
        let g = graph(vec![Node {
            kind: Kind::Parallel(8),
            deps: vec![],
            sync: None,
        }]);
        let s = simulate(&g, 2, Rule::Needed);
        assert_eq!(s.makespan, 4);
    }
}
