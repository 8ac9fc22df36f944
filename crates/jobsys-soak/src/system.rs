//! Random job-system configurations: worker count 0..=2·cores, an idle
//! policy with random parameters, priority inheritance on or off.
//!
//! `--workers` and `--policy` (global options of the command) narrow the
//! choice, e.g. to reproduce a failure on one configuration.

use crate::plan::between;
use jobsys::{IdlePolicy, JobSystem};
use jobsys_bench::graph::SplitMix64;
use std::time::Duration;

/// Policy kinds, as `--policy` names them.
pub const POLICY_KINDS: [&str; 4] = ["spin-then-sleep", "whipping-boy", "always-spin", "adaptive"];

/// One system to build.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SystemConfig {
    /// Worker threads.
    pub workers: usize,
    /// Idle policy.
    pub policy: IdlePolicy,
    /// `Builder::priority_inheritance`.
    pub inheritance: bool,
}

/// What the random choice may pick from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choices {
    /// Worker counts.
    pub workers: Vec<usize>,
    /// Policy kinds (names from [`POLICY_KINDS`]).
    pub policies: Vec<&'static str>,
}

impl Choices {
    /// 0..=2·`cores` workers (or `workers`), every policy kind (or those in
    /// `policies`; unknown names are an error).
    pub fn new(
        cores: usize,
        workers: Option<&[usize]>,
        policies: Option<&[String]>,
    ) -> Result<Choices, String> {
        let workers = workers.map_or_else(|| (0..=2 * cores.max(1)).collect(), <[usize]>::to_vec);
        let policies = match policies {
            None => POLICY_KINDS.to_vec(),
            Some(names) => names
                .iter()
                .map(|n| {
                    POLICY_KINDS
                        .iter()
                        .copied()
                        .find(|k| k == n)
                        .ok_or_else(|| {
                            format!("unknown --policy {n:?}; known: {}", POLICY_KINDS.join(", "))
                        })
                })
                .collect::<Result<_, _>>()?,
        };
        if workers.is_empty() || policies.is_empty() {
            return Err("soak: --workers and --policy must name at least one value".into());
        }
        Ok(Choices { workers, policies })
    }
}

impl SystemConfig {
    /// A random configuration from `choices`.
    pub fn random(rng: &mut SplitMix64, choices: &Choices) -> SystemConfig {
        let workers = choices.workers[rng.below(choices.workers.len() as u64) as usize];
        let kind = choices.policies[rng.below(choices.policies.len() as u64) as usize];
        let policy = match kind {
            "whipping-boy" => IdlePolicy::WhippingBoy,
            "always-spin" => IdlePolicy::AlwaysSpin,
            "adaptive" => IdlePolicy::Adaptive {
                max_spin: Duration::from_micros(rng.below(201)),
                cpu_cap: rng.below(101) as f32 / 100.0,
            },
            _ => IdlePolicy::SpinThenSleep {
                spin: Duration::from_micros(between(rng, 0, 100)),
            },
        };
        SystemConfig {
            workers,
            policy,
            inheritance: rng.percent(75),
        }
    }

    /// Start it.
    pub fn build(&self) -> Result<JobSystem, jobsys::BuildError> {
        JobSystem::builder()
            .workers(self.workers)
            .idle_policy(self.policy)
            .priority_inheritance(self.inheritance)
            .build()
    }

    /// E.g. `3 workers, whipping-boy, inheritance on`.
    pub fn describe(&self) -> String {
        format!(
            "{} workers, {}, inheritance {}",
            self.workers,
            self.policy.name(),
            if self.inheritance { "on" } else { "off" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_narrow_and_validate() {
        let c = Choices::new(2, None, None).unwrap();
        assert_eq!(c.workers, [0, 1, 2, 3, 4]);
        assert_eq!(c.policies.len(), 4);
        let c = Choices::new(2, Some(&[1]), Some(&["adaptive".to_string()])).unwrap();
        let mut rng = SplitMix64::new(3);
        for _ in 0..20 {
            let s = SystemConfig::random(&mut rng, &c);
            assert_eq!(s.workers, 1);
            assert!(
                matches!(s.policy, IdlePolicy::Adaptive { cpu_cap, .. } if (0.0..=1.0).contains(&cpu_cap))
            );
        }
        assert!(Choices::new(2, None, Some(&["nope".to_string()])).is_err());
        assert!(Choices::new(2, Some(&[]), None).is_err());
    }
}
