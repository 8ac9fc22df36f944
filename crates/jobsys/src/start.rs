//! Starting and stopping a job system: `start` turns a `Config` into
//! running workers (topology plan, registry, hooks, threads); `Owner`,
//! held by every `JobSystem` clone, shuts the system down when the last
//! clone goes (every scheduled job runs or fails, then the workers are
//! joined).

use crate::builder::{resolve_policy, resolve_workers, BuildError, Config, MIN_STACK_SIZE};
use crate::classes::WorkerClasses;
use crate::registry::ThisThread;
use crate::registry::{Registry, Stats};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Shuts the system down when the last `JobSystem` clone goes.
pub(crate) struct Owner {
    pub(crate) registry: Arc<Registry>,
    pub(crate) threads: Mutex<Vec<JoinHandle<()>>>,
    /// Baseline of `take_stats`.
    pub(crate) last_stats: Mutex<Stats>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        // Before anything below waits for the sleepers' lock: a hook may be
        // running under it on this thread.
        crate::current::forbid_in_hook("JobSystem::drop (of the last clone)");
        let reg = &self.registry;
        reg.terminating().store(true, Ordering::SeqCst);
        reg.sleep().wake_all(true);
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        let on_own_worker = threads
            .iter()
            .any(|t| t.thread().id() == std::thread::current().id());
        // No outside thread can call in any more (that takes a JobSystem):
        // jobs pinned to one other than this thread can never run.
        let me = reg.current();
        reg.note_unflushed(me);
        ThisThread::new(reg, me).close_outside_pinned();
        if on_own_worker || me.inside_job() || crate::running::InBlocking::here() {
            // Dropped from inside one of our jobs (a job on one of our
            // workers, or a closure this thread runs or drops, e.g. a
            // pinned job cancelled at its thread's exit, or a blocking
            // job's closure on a blocking thread, that held the
            // last clone): that job is outstanding until we return, so we
            // cannot wait for the drain here (it waited for ever). The
            // workers finish every queued job and exit on their own
            // (detached); with none, a thread of its own drains.
            if reg.num_workers() == 0 {
                let r = reg.clone();
                let spawned = std::thread::Builder::new()
                    .name("jobsys-drain".into())
                    .spawn(move || crate::worker::drain(&r));
                if let Err(e) = spawned {
                    eprintln!(
                        "jobsys: could not start a thread to run the jobs left at shutdown: {e}"
                    );
                }
            }
            return;
        }
        crate::worker::drain(reg);
        for t in threads {
            let _ = t.join();
        }
    }
}

/// Start the system `config` describes: plan the workers, build the
/// registry, register the building thread as `Pin::Main`, install the
/// hooks, then start the workers (`JobSystem::new`).
pub(crate) fn start(config: Config) -> Result<Owner, BuildError> {
    let topo_config = crate::topology::TopologyConfig {
        workers: resolve_workers(config.workers)?,
        exclude_efficiency_cores: config.exclude_efficiency_cores,
        pin_workers: config.pin_workers,
        worker_nice: config.worker_nice,
    };
    let (mut plan, classes) = match &config.topology_fixture {
        None => {
            let plan = crate::topology::plan(&topo_config).map_err(BuildError::Topology)?;
            // Classes only matter for placed workers: the topology is read
            // again only then.
            let classes = match plan.needs_setup() {
                true => WorkerClasses::of_plan(&plan, &crate::topology::topology()),
                false => WorkerClasses::default(),
            };
            (plan, classes)
        }
        Some(root) => {
            let topo = crate::topology::detect(root, None);
            let plan = crate::topology::internals::plan_for(&topo, &topo_config, None)
                .map_err(BuildError::Topology)?;
            let classes = WorkerClasses::of_plan(&plan, &topo);
            (plan, classes)
        }
    };
    if config.topology_fixture.is_some() {
        // A fake machine's CPUs: the classes are taken, the placements not.
        plan = crate::topology::internals::WorkerPlan::unplaced(plan.workers);
    }
    let workers = plan.workers;
    let setup = plan
        .needs_setup()
        .then(|| (Arc::new(plan), std::sync::mpsc::channel()));
    let policy = resolve_policy(config.idle_policy)?;
    if let Some(requested) = config.stack_size.filter(|&b| b < MIN_STACK_SIZE) {
        return Err(BuildError::StackTooSmall {
            requested,
            min: MIN_STACK_SIZE,
        });
    }
    let wait_spin = config.wait_spin.unwrap_or(policy.wait_spin());
    let max_jobs = config.max_jobs.unwrap_or(crate::builder::DEFAULT_MAX_JOBS);
    if max_jobs == 0 {
        return Err(BuildError::ZeroMaxJobs);
    }
    let registry = Registry::new(
        workers,
        policy,
        wait_spin,
        !config.no_priority_inheritance,
        crate::builder::resolve_shuffle(config.shuffle)?,
        config
            .failure_history
            .unwrap_or(crate::builder::DEFAULT_FAILURE_HISTORY),
        max_jobs,
        config
            .retained_slots
            .unwrap_or(crate::builder::DEFAULT_RETAINED_SLOTS)
            .div_ceil(crate::slot::PAGE_SLOTS),
        crate::active::Active::new(workers, config.follow_cpus, config.pin_workers),
    );
    let _ = registry.classes().set(classes);
    if let Some(h) = config.on_unobserved_panic.clone() {
        registry.failures().on_unobserved(h);
    }
    // The building thread is `Pin::Main`, thread index 0; registered
    // before the hooks are installed so that its start reaches them
    // with that number (`docs/engine.md`, "Thread index"). Hooks next:
    // every job of the system is scheduled after, the workers start
    // after.
    let main_ctx = registry.current_for(|| "JobSystem::new");
    ThisThread::new(&registry, main_ctx).register_main();
    #[cfg(feature = "trace")]
    if let Some(h) = config.profiler {
        registry.trace().install_hooks(h);
        crate::trace::thread_start(registry.site(main_ctx));
    }
    let mut threads = Vec::with_capacity(workers);
    for i in 0..workers {
        let reg = registry.clone();
        let mut b = std::thread::Builder::new().name(format!("jobsys-worker-{}", i + 1));
        if let Some(sz) = config.stack_size {
            b = b.stack_size(sz);
        }
        // Each worker applies its placement and nice first and reports
        // the result; it runs its loop either way, so a failed setup
        // shuts down like any other system.
        let setup = setup
            .as_ref()
            .map(|(plan, (tx, _))| (plan.clone(), tx.clone()));
        match b.spawn(move || {
            if let Some((plan, tx)) = setup {
                let _ = tx.send(crate::topology::setup_worker_thread(i, &plan));
            }
            crate::worker::worker_main(reg, i)
        }) {
            Ok(t) => threads.push(t),
            Err(e) => {
                // Stop the ones already started before reporting.
                drop(Owner {
                    registry,
                    threads: Mutex::new(threads),
                    last_stats: Mutex::default(),
                });
                return Err(BuildError::Spawn(e));
            }
        }
    }
    let owner = Owner {
        registry,
        threads: Mutex::new(threads),
        last_stats: Mutex::default(),
    };
    if let Some((_, (tx, rx))) = setup {
        drop(tx);
        // One result per started worker; the first error fails the build
        // (dropping `owner` stops and joins the workers).
        if let Some(Err(e)) = rx.iter().find(Result::is_err) {
            drop(owner);
            return Err(BuildError::Topology(e));
        }
    }
    Ok(owner)
}
