//! The W3 frame graph: a deterministic, generated job graph of one engine
//! frame. Kept free of any scheduler so a soak test can reuse it.
//!
//! From a fixed seed ([`SplitMix64`], no `rand` dependency): `jobs` jobs in
//! schedule order; each is a single job (60 %) or a parallel job of
//! 1..=`max_pieces` pieces (40 %); each depends on 0..=`max_deps` distinct
//! earlier jobs, drawn uniformly from all earlier jobs; every ~`sync_every`
//! jobs (uniform in [sync_every/2, 3·sync_every/2]) the main thread waits for
//! a random earlier job before scheduling the next one (a sync point).
//!
//! Invariants: every dependency and sync target is an earlier job, so the
//! schedule order is a valid serial order; the same parameters always give
//! the same graph.

/// SplitMix64: a tiny, good-enough, deterministic generator.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`), by multiply-shift (bias below 2^-32).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// `true` with probability `percent` / 100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// What a job runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One piece of work.
    Single,
    /// A parallel job of this many pieces (1..=max_pieces).
    Parallel(u32),
}

/// One job of the frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Single or parallel.
    pub kind: Kind,
    /// Earlier jobs this one runs after (distinct, ascending).
    pub deps: Vec<u32>,
    /// Before scheduling this job, the main thread waits for this earlier job.
    pub sync: Option<u32>,
}

/// Generator parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphParams {
    /// Jobs per frame.
    pub jobs: usize,
    /// Share of parallel jobs, percent.
    pub parallel_percent: u64,
    /// Largest piece count of a parallel job.
    pub max_pieces: u32,
    /// Largest dependency count of a job.
    pub max_deps: usize,
    /// Mean distance between sync points, in jobs.
    pub sync_every: usize,
    /// Seed.
    pub seed: u64,
}

/// The seed of every published run.
pub const SEED: u64 = 0x5EED_F4A3_E000_0003;

impl GraphParams {
    /// The W3 frame of docs/workloads.md: 500 jobs, 40 % parallel of
    /// 1-100 pieces, 0-10 dependencies, a sync point every ~50 jobs.
    pub fn seed_experiment() -> Self {
        GraphParams {
            jobs: 500,
            parallel_percent: 40,
            max_pieces: 100,
            max_deps: 10,
            sync_every: 50,
            seed: SEED,
        }
    }

    /// A small graph of the same shape for `--quick` runs and tests.
    pub fn quick() -> Self {
        GraphParams {
            jobs: 100,
            max_pieces: 20,
            sync_every: 25,
            ..Self::seed_experiment()
        }
    }
}

/// A generated frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameGraph {
    /// What it was generated from.
    pub params: GraphParams,
    /// Jobs in schedule order.
    pub nodes: Vec<Node>,
}

impl FrameGraph {
    /// Generate the frame for `params`.
    pub fn generate(params: &GraphParams) -> FrameGraph {
        let mut rng = SplitMix64::new(params.seed);
        let sync_every = params.sync_every.max(2) as u64;
        let gap = |rng: &mut SplitMix64| sync_every / 2 + rng.below(sync_every + 1);
        let mut next_sync = gap(&mut rng);
        let mut nodes = Vec::with_capacity(params.jobs);
        for i in 0..params.jobs {
            let kind = if rng.percent(params.parallel_percent) {
                Kind::Parallel(1 + rng.below(u64::from(params.max_pieces.max(1))) as u32)
            } else {
                Kind::Single
            };
            let want = (rng.below(params.max_deps as u64 + 1) as usize).min(i);
            let mut deps: Vec<u32> = Vec::with_capacity(want);
            while deps.len() < want {
                let d = rng.below(i as u64) as u32;
                if !deps.contains(&d) {
                    deps.push(d);
                }
            }
            deps.sort_unstable();
            let sync = if i as u64 >= next_sync && i > 0 {
                next_sync = i as u64 + gap(&mut rng);
                Some(rng.below(i as u64) as u32)
            } else {
                None
            };
            nodes.push(Node { kind, deps, sync });
        }
        FrameGraph {
            params: params.clone(),
            nodes,
        }
    }

    /// Pieces of job `i` (1 for a single job).
    pub fn pieces(&self, i: usize) -> u32 {
        match self.nodes[i].kind {
            Kind::Single => 1,
            Kind::Parallel(p) => p,
        }
    }

    /// Pieces in the whole frame: the work, in units of one job duration.
    pub fn total_pieces(&self) -> u64 {
        (0..self.nodes.len())
            .map(|i| u64::from(self.pieces(i)))
            .sum()
    }

    /// For each job, the jobs that depend on it (ascending).
    pub fn dependents(&self) -> Vec<Vec<u32>> {
        let mut out = vec![Vec::new(); self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            for &d in &n.deps {
                out[d as usize].push(i as u32);
            }
        }
        out
    }

    /// Longest dependency chain in job durations, with unlimited threads
    /// (a parallel job counts one duration); sync points ignored.
    pub fn critical_path(&self) -> u64 {
        let mut depth = vec![0u64; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            depth[i] = 1 + n.deps.iter().map(|&d| depth[d as usize]).max().unwrap_or(0);
        }
        depth.into_iter().max().unwrap_or(0)
    }

    /// Number of sync points.
    pub fn sync_points(&self) -> usize {
        self.nodes.iter().filter(|n| n.sync.is_some()).count()
    }

    /// Number of parallel jobs.
    pub fn parallel_jobs(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| matches!(n.kind, Kind::Parallel(_)))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_well_formed() {
        let p = GraphParams::seed_experiment();
        let g = FrameGraph::generate(&p);
        assert_eq!(g, FrameGraph::generate(&p));
        assert_eq!(g.nodes.len(), 500);
        for (i, n) in g.nodes.iter().enumerate() {
            assert!(n.deps.len() <= 10);
            assert!(n.deps.windows(2).all(|w| w[0] < w[1]));
            assert!(n.deps.iter().all(|&d| (d as usize) < i));
            assert!(n.sync.is_none_or(|s| (s as usize) < i));
            if let Kind::Parallel(k) = n.kind {
                assert!((1..=100).contains(&k));
            }
        }
        let par = g.parallel_jobs();
        assert!((150..250).contains(&par), "{par} parallel jobs");
        let syncs = g.sync_points();
        assert!((6..=14).contains(&syncs), "{syncs} sync points");
        assert!(g.critical_path() >= 2);
        let other = FrameGraph::generate(&GraphParams {
            seed: 1,
            ..p.clone()
        });
        assert_ne!(g, other);
    }

    #[test]
    fn below_is_in_range() {
        let mut r = SplitMix64::new(7);
        for n in [1u64, 2, 3, 10, 1000] {
            for _ in 0..1000 {
                assert!(r.below(n) < n);
            }
        }
    }
}
