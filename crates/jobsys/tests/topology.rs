//! Core topology: parsing on fixture trees (`tests/fixtures/topology`, see
//! the README there), worker placement plans, and a few live checks on
//! this machine. No timing anywhere.

// The parsers and placement are the crate's own (`topology::internals`,
// hidden); the report's types are public.
use jobsys::topology::internals::{
    classify, detect, parse_cfs, parse_cpu_list, parse_cpu_max, parse_mountinfo, parse_proc_cgroup,
    plan_for, read_cgroup_quota, read_core_classes, read_online, read_smt_siblings,
    setup_worker_thread, Placement, TopologyConfig,
};
use jobsys::topology::{
    CapacitySource, CgroupQuota, CgroupVersion, CoreClass, CpuSet, TopologyError,
};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topology")
        .join(name)
}

fn set(list: &str) -> CpuSet {
    parse_cpu_list(list).unwrap()
}

fn pinned(cpu: usize) -> Placement {
    Placement::Cpus(std::iter::once(cpu).collect())
}

// ---------------------------------------------------------------- cpu lists

#[test]
fn cpu_list_forms() {
    assert_eq!(set("0").iter().collect::<Vec<_>>(), [0]);
    assert_eq!(
        set("0-3,8-11").iter().collect::<Vec<_>>(),
        [0, 1, 2, 3, 8, 9, 10, 11]
    );
    assert_eq!(set("5,1-2").iter().collect::<Vec<_>>(), [1, 2, 5]);
    assert_eq!(set("0-3\n").len(), 4, "the file's newline is ignored");
    assert_eq!(set("3-3").iter().collect::<Vec<_>>(), [3]);
    assert!(set("").is_empty(), "sysfs writes an empty list as \"\"");
    assert!(set("\n").is_empty());
}

#[test]
fn cpu_list_malformed() {
    for bad in [
        "a",
        "0,,2",
        "0,",
        ",0",
        "3-1",
        "-1",
        "1-",
        "0-3:2/4",
        "1 ,2",
        "+1",
        "0x3",
        "99999999",
        "0-99999999",
    ] {
        let err = parse_cpu_list(bad).expect_err(bad);
        assert_eq!(err.input, bad);
        assert!(!err.reason.is_empty());
        assert!(err.to_string().contains("bad CPU list"), "{err}");
    }
}

#[test]
fn cpu_list_prints_in_kernel_syntax() {
    for text in ["0-3,8-11", "5", "1,3", "0-1,4,6-7", ""] {
        assert_eq!(set(text).to_string(), text);
    }
    let s: CpuSet = [11, 10, 9, 8, 3, 2, 1, 0].into_iter().collect();
    assert_eq!(s.to_string(), "0-3,8-11");
    assert_eq!(format!("{s:?}"), "CpuSet(0-3,8-11)");
    assert_eq!("2-4".parse::<CpuSet>().unwrap(), set("2,3,4"));
}

// ------------------------------------------------------------ core classes

#[test]
fn big_little_from_cpu_capacity() {
    let root = fixture("biglittle_4x4");
    assert_eq!(read_online(&root).unwrap(), Some(set("0-7")));
    let cores = read_core_classes(&root, &set("0-7")).unwrap().unwrap();
    assert_eq!(
        cores.source,
        CapacitySource::CpuCapacity,
        "cpu_capacity wins over cpuinfo_max_freq when both exist"
    );
    assert_eq!(cores.performance(), set("0-3"));
    assert_eq!(cores.efficiency(), set("4-7"));
    assert_eq!(cores.cpus[&5].value, 446);
    assert!(cores.is_heterogeneous());
    assert_eq!(
        cores.to_string(),
        "from cpu_capacity: performance 0-3 (1024), efficiency 4-7 (446)"
    );
}

#[test]
fn intel_hybrid_from_max_freq_only() {
    let root = fixture("intel_hybrid");
    let t = detect(&root, Some(set("0-23")));
    let cores = t.cores.as_ref().expect("classes from cpuinfo_max_freq");
    assert_eq!(cores.source, CapacitySource::MaxFreq);
    assert_eq!(
        cores.performance(),
        set("0-15"),
        "favoured P-cores (5.5 GHz) and plain ones (5.4) are one class"
    );
    assert_eq!(cores.efficiency(), set("16-23"), "4.2 GHz is 78% of 5.5");
    assert_eq!(cores.class_of(4), Some(CoreClass::Performance));
    assert_eq!(cores.class_of(99), None);
    assert!(
        cores.to_string().contains("efficiency 16-23 (4.2 GHz)"),
        "{cores}"
    );
    assert_eq!(t.quota, CgroupQuota::Absent, "no /proc in this tree");
    assert_eq!(t.default_workers, 23);
    let (n, reason) = t.default_workers_for(true);
    assert_eq!(n, 15, "16 P-core threads minus the calling thread");
    assert!(
        reason.contains("without efficiency cores (16-23)"),
        "{reason}"
    );
}

#[test]
fn three_tiers_only_the_slowest_is_efficiency() {
    let t = detect(&fixture("phone_3tier"), Some(set("0-7")));
    let cores = t.cores.unwrap();
    assert_eq!(cores.efficiency(), set("0-3"));
    assert_eq!(
        cores.performance(),
        set("4-7"),
        "the A710 tier (85% of the X2) stays performance"
    );
}

#[test]
fn classification_rule() {
    let m = |v: &[(usize, u64)]| v.iter().copied().collect::<BTreeMap<usize, u64>>();
    let eff = |v: &[(usize, u64)]| -> Vec<usize> {
        classify(&m(v))
            .into_iter()
            .filter(|(_, c)| *c == CoreClass::Efficiency)
            .map(|(n, _)| n)
            .collect()
    };
    assert!(eff(&[(0, 1024), (1, 1024)]).is_empty(), "homogeneous");
    assert!(eff(&[(0, 1024)]).is_empty(), "one CPU");
    assert!(eff(&[]).is_empty(), "no CPUs");
    // The 80 % threshold, exactly: 819/1024 is below, 820/1024 is not.
    assert_eq!(eff(&[(0, 1024), (1, 819)]), [1]);
    assert!(eff(&[(0, 1024), (1, 820)]).is_empty());
    // Slowest tier = within 10 % of the slowest value.
    assert_eq!(eff(&[(0, 1024), (1, 400), (2, 440), (3, 441)]), [1, 2]);
    // A middle tier below 80 % stays performance (Tensor-style 1024/500/160).
    assert_eq!(eff(&[(0, 1024), (1, 500), (2, 160)]), [2]);
}

// ------------------------------------------------------------------ cgroup

#[test]
fn cgroup_v2_quota_of_one_and_a_half_cpus() {
    let root = fixture("cgroup_v2_quota");
    let q = read_cgroup_quota(&root).unwrap();
    match &q {
        CgroupQuota::Limited {
            quota_us,
            period_us,
            version,
            file,
        } => {
            assert_eq!((*quota_us, *period_us), (150_000, 100_000));
            assert_eq!(*version, CgroupVersion::V2);
            assert!(
                file.ends_with("sys/fs/cgroup/kubepods/pod1/cpu.max"),
                "the parent's limit binds the container: {}",
                file.display()
            );
        }
        other => panic!("expected a limit, got {other:?}"),
    }
    assert_eq!(q.cpus(), Some(1.5));
    assert_eq!(q.whole_cpus(), Some(1), "rounded down");
    let t = detect(&root, Some(set("0-7")));
    assert_eq!(t.quota_cpus(), Some(1.5));
    assert_eq!(t.default_workers, 0);
    assert!(
        t.reason
            .contains("cgroup v2 quota 1.5 CPUs (rounded down: 1)"),
        "{}",
        t.reason
    );
    assert!(t
        .reason
        .ends_with("1 usable → 0 workers: the calling thread runs every job"));
}

#[test]
fn quota_and_affinity_mask_of_three_cpus() {
    let t = detect(&fixture("cgroup_v2_quota"), Some(set("2-4")));
    assert_eq!(t.allowed, Some(set("2-4")));
    assert_eq!(t.default_workers, 0, "min(3, floor(1.5)) = 1 usable");
    assert!(
        t.reason
            .starts_with("3 CPUs in the affinity mask (2-4), 8 CPUs online"),
        "{}",
        t.reason
    );
}

#[test]
fn affinity_mask_of_three_cpus_without_quota() {
    let t = detect(&fixture("biglittle_4x4"), Some(set("1-3")));
    assert_eq!(t.default_workers, 2);
    assert_eq!(
        t.reason,
        "3 CPUs in the affinity mask (1-3), 8 CPUs online, no cgroup CPU quota → 3 usable → 2 workers + the calling thread"
    );
    // Offline CPUs in the mask do not count.
    let t = detect(&fixture("cgroup_v1_unlimited"), Some(set("0-3")));
    assert_eq!(t.online, None, "no sysfs in this tree");
    assert_eq!(t.default_workers, 3);
    let t = detect(&fixture("biglittle_4x4"), Some(set("6-9")));
    assert_eq!(t.usable_cpus(), Some(set("6-7")));
    assert_eq!(t.default_workers, 1);
    assert!(t.reason.contains("2 of them online (6-7)"), "{}", t.reason);
}

#[test]
fn cgroup_v2_max_is_no_quota() {
    let q = read_cgroup_quota(&fixture("biglittle_4x4")).unwrap();
    match &q {
        CgroupQuota::Unlimited { version, file } => {
            assert_eq!(*version, CgroupVersion::V2);
            assert!(
                file.ends_with("user.slice/game.scope/cpu.max"),
                "{}",
                file.display()
            );
        }
        other => panic!("expected no limit, got {other:?}"),
    }
    assert_eq!(q.cpus(), None);
    let t = detect(&fixture("biglittle_4x4"), Some(set("0-7")));
    assert_eq!(t.default_workers, 7);
    assert!(t.reason.contains("no cgroup CPU quota"), "{}", t.reason);
}

#[test]
fn cgroup_v1_quota() {
    let root = fixture("cgroup_v1_quota");
    let q = read_cgroup_quota(&root).unwrap();
    match &q {
        CgroupQuota::Limited {
            quota_us,
            period_us,
            version,
            file,
        } => {
            assert_eq!((*quota_us, *period_us), (250_000, 100_000));
            assert_eq!(*version, CgroupVersion::V1);
            assert!(file.ends_with("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"));
        }
        other => panic!("expected a limit, got {other:?}"),
    }
    assert_eq!(q.cpus(), Some(2.5));
    let t = detect(&root, Some(set("0-7")));
    assert_eq!(t.default_workers, 1, "floor(2.5) = 2 usable");
    assert!(
        t.reason.contains("cgroup v1 quota 2.5 CPUs"),
        "{}",
        t.reason
    );
}

#[test]
fn cgroup_v1_unlimited() {
    let q = read_cgroup_quota(&fixture("cgroup_v1_unlimited")).unwrap();
    assert!(
        matches!(
            q,
            CgroupQuota::Unlimited {
                version: CgroupVersion::V1,
                ..
            }
        ),
        "{q:?}"
    );
}

#[test]
fn quota_file_formats() {
    assert_eq!(parse_cpu_max("max 100000\n"), Ok(None));
    assert_eq!(parse_cpu_max("max"), Ok(None));
    assert_eq!(
        parse_cpu_max("150000 100000\n"),
        Ok(Some((150_000, 100_000)))
    );
    assert_eq!(parse_cpu_max("50000"), Ok(Some((50_000, 100_000))));
    for bad in [
        "",
        "lots 100000",
        "0 100000",
        "150000 0",
        "-1 100000",
        "1 2 3",
    ] {
        assert!(parse_cpu_max(bad).is_err(), "{bad:?}");
    }
    assert_eq!(parse_cfs("-1\n", "100000\n"), Ok(None));
    assert_eq!(parse_cfs("50000", "100000"), Ok(Some((50_000, 100_000))));
    for (q, p) in [
        ("x", "100000"),
        ("50000", "0"),
        ("50000", ""),
        ("0", "100000"),
    ] {
        assert!(parse_cfs(q, p).is_err(), "{q:?} {p:?}");
    }
}

#[test]
fn proc_self_cgroup_and_mountinfo() {
    let g = parse_proc_cgroup(
        "12:pids:/a\n4:cpu,cpuacct:/docker/x\n3:cpuset:/b\n0::/unified\ngarbage\n",
    );
    assert_eq!(g.v1_cpu.as_deref(), Some("/docker/x"));
    assert_eq!(g.v2.as_deref(), Some("/unified"));
    let g = parse_proc_cgroup("5:cpuacct:/only-acct\n");
    assert_eq!(g.v1_cpu, None, "cpuacct is not cpu");

    let m = parse_mountinfo(
        "1 0 0:1 / / rw - ext4 /dev/root rw\n\
         2 1 0:2 /x /sys/fs/my\\040cgroups rw shared:3 - cgroup cgroup rw,cpu,cpuacct\n\
         3 1 0:3 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n\
         not a mount line\n",
    );
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].version, CgroupVersion::V1);
    assert_eq!(m[0].root, "/x");
    assert_eq!(m[0].mount_point, "/sys/fs/my cgroups", "\\040 is a space");
    assert_eq!(m[0].controllers, ["rw", "cpu", "cpuacct"]);
    assert_eq!(m[1].version, CgroupVersion::V2);
}

// ---------------------------------------------------------- absent / broken

#[test]
fn missing_files_are_absent() {
    let root = fixture("empty");
    assert_eq!(read_online(&root).unwrap(), None);
    assert_eq!(read_core_classes(&root, &set("0-1")).unwrap(), None);
    assert_eq!(read_cgroup_quota(&root).unwrap(), CgroupQuota::Absent);
    let t = detect(&root, Some(set("0-1")));
    assert_eq!(t.online, None);
    assert_eq!(t.cores, None);
    assert_eq!(t.quota, CgroupQuota::Absent);
    assert_eq!(t.default_workers, 1, "the affinity mask alone decides");
    assert!(t.reason.contains("online CPUs unknown"), "{}", t.reason);
    assert!(
        t.reason.contains("cgroup CPU quota unknown"),
        "{}",
        t.reason
    );
    let shown = t.to_string();
    assert!(
        shown.contains("CPUs online:                  absent"),
        "{shown}"
    );
    assert!(
        shown.contains("core classes:                 absent"),
        "{shown}"
    );
    assert!(
        shown.contains("cgroup CPU quota:             absent"),
        "{shown}"
    );
    // Excluding efficiency cores cannot work without capacities: all kept.
    let (n, reason) = t.default_workers_for(true);
    assert_eq!(n, 1);
    assert!(reason.contains("cannot be told apart"), "{reason}");
}

#[test]
fn nothing_known_at_all_still_gives_a_count() {
    let t = detect(&fixture("empty"), None);
    assert_eq!(t.allowed, None);
    assert!(
        t.reason
            .starts_with("affinity mask and online CPUs unknown, the OS reports"),
        "{}",
        t.reason
    );
    let available = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(t.default_workers, available - 1);
}

#[test]
fn malformed_files_are_reported_and_treated_as_absent() {
    let t = detect(&fixture("malformed"), Some(set("0-3")));
    assert_eq!(t.online, None);
    assert_eq!(t.cores, None);
    assert_eq!(t.quota, CgroupQuota::Absent);
    assert_eq!(t.default_workers, 3);
    let notes = t.notes.join("\n");
    assert!(
        notes.contains("online CPUs: jobsys: unexpected contents in"),
        "{notes}"
    );
    assert!(notes.contains("empty item"), "{notes}");
    assert!(
        notes.contains("\"fast\" is not a positive integer"),
        "{notes}"
    );
    assert!(notes.contains("quota \"lots\""), "{notes}");
    assert!(t.to_string().contains("note: "), "{t}");
    assert!(matches!(
        read_online(&fixture("malformed")),
        Err(TopologyError::Malformed { .. })
    ));
}

// ------------------------------------------------------------------ plans

fn cfg(workers: Option<usize>, exclude: bool, pin: bool) -> TopologyConfig {
    TopologyConfig {
        workers,
        exclude_efficiency_cores: exclude,
        pin_workers: pin,
        worker_nice: None,
    }
}

#[test]
fn pin_three_workers_on_big_cores_keeping_the_main_cpu_free() {
    let t = detect(&fixture("biglittle_4x4"), Some(set("0-7")));
    let p = plan_for(&t, &cfg(Some(3), true, true), Some(0)).unwrap();
    assert_eq!(p.workers, 3);
    assert_eq!(p.placements, [pinned(1), pinned(2), pinned(3)]);
    assert_eq!(p.main_cpu, Some(0));
    assert!(p.needs_setup());
    assert!(
        p.reason
            .contains("pinned one per CPU on 1-3, CPU 0 kept for the calling thread"),
        "{}",
        p.reason
    );
    assert!(p.to_string().contains("jobsys-worker-3: CPUs 3"), "{p}");
    // The default count with exclusion is the same: 4 big cores - 1.
    let d = plan_for(&t, &cfg(None, true, true), Some(0)).unwrap();
    assert_eq!(d.placements, p.placements);
}

#[test]
fn main_thread_on_a_little_core() {
    let t = detect(&fixture("biglittle_4x4"), Some(set("0-7")));
    let p = plan_for(&t, &cfg(Some(3), true, true), Some(5)).unwrap();
    assert_eq!(p.placements, [pinned(0), pinned(1), pinned(2)]);
    assert_eq!(p.main_cpu, Some(5));
    // Unknown main CPU: the first CPU of the mask is kept free.
    let p = plan_for(&t, &cfg(Some(3), true, true), None).unwrap();
    assert_eq!(p.placements, [pinned(1), pinned(2), pinned(3)]);
}

#[test]
fn pinning_without_exclusion_fills_big_cores_first() {
    // Little cores first in CPU order, as on most Arm phones.
    let t = detect(&fixture("phone_3tier"), Some(set("0-7")));
    let p = plan_for(&t, &cfg(Some(5), false, true), Some(0)).unwrap();
    assert_eq!(
        p.placements,
        [pinned(7), pinned(4), pinned(5), pinned(6), pinned(1)]
    );
}

#[test]
fn smt_siblings_are_read() {
    let intel = read_smt_siblings(&fixture("intel_hybrid"), &set("0-23"))
        .unwrap()
        .unwrap();
    assert_eq!(intel[&0], set("0-1"));
    assert_eq!(intel[&7], set("6-7"));
    assert_eq!(intel[&20], set("20"));
    let old_name = read_smt_siblings(&fixture("biglittle_4x4"), &set("0-7"))
        .unwrap()
        .unwrap();
    assert_eq!(
        old_name[&3],
        set("3"),
        "thread_siblings_list is the fallback"
    );
    assert_eq!(
        read_smt_siblings(&fixture("empty"), &set("0-1")).unwrap(),
        None
    );
    let t = detect(&fixture("intel_hybrid"), Some(set("0-23")));
    assert_eq!(t.siblings_of(9), set("8-9"));
    assert!(
        t.to_string().contains("up to 2 hardware threads per core"),
        "{t}"
    );
    let t = detect(&fixture("cgroup_v2_quota"), Some(set("0-7")));
    assert_eq!(
        t.siblings_of(3),
        set("3"),
        "absent: each CPU is its own core"
    );
}

#[test]
fn pinning_with_smt_keeps_the_main_core_free_and_spreads_over_cores() {
    let t = detect(&fixture("intel_hybrid"), Some(set("0-23")));
    // One thread per P-core first (the favoured core 4-5 leads), never the
    // calling thread's sibling cpu1.
    let p = plan_for(&t, &cfg(Some(3), false, true), Some(0)).unwrap();
    assert_eq!(p.placements, [pinned(4), pinned(2), pinned(6)]);
    // The default count (23) uses every other CPU; cpu1, the calling
    // thread's sibling, comes last, after the E-cores and the other
    // second threads.
    let p = plan_for(&t, &cfg(None, false, true), Some(0)).unwrap();
    assert_eq!(p.workers, 23);
    let order: Vec<usize> = p
        .placements
        .iter()
        .map(|pl| match pl {
            Placement::Cpus(c) => c.first().unwrap(),
            Placement::Inherit => panic!("{p}"),
        })
        .collect();
    assert_eq!(
        order,
        [4, 2, 6, 8, 10, 12, 14, 16, 17, 18, 19, 20, 21, 22, 23, 5, 3, 7, 9, 11, 13, 15, 1]
    );
    // Excluding E-cores: 15 workers on the P-core threads, cpu1 last.
    let p = plan_for(&t, &cfg(None, true, true), Some(0)).unwrap();
    assert_eq!(p.workers, 15);
    assert_eq!(p.placements.last(), Some(&pinned(1)));
}

#[test]
fn more_workers_than_cpus_share_round_robin() {
    let t = detect(&fixture("biglittle_4x4"), Some(set("0-3")));
    let p = plan_for(&t, &cfg(Some(5), false, true), Some(0)).unwrap();
    assert_eq!(
        p.placements,
        [pinned(1), pinned(2), pinned(3), pinned(1), pinned(2)]
    );
    assert!(
        p.reason.contains("5 workers on 3: CPUs shared round-robin"),
        "{}",
        p.reason
    );
    // One CPU: nothing to keep free.
    let t = detect(&fixture("empty"), Some(set("4")));
    let p = plan_for(&t, &cfg(Some(1), false, true), Some(4)).unwrap();
    assert_eq!(p.placements, [pinned(4)]);
    assert_eq!(p.main_cpu, None);
    assert!(
        p.reason.contains("share it with the calling thread"),
        "{}",
        p.reason
    );
}

#[test]
fn exclusion_without_pinning_restricts_to_performance_cores() {
    let t = detect(&fixture("biglittle_4x4"), Some(set("0-7")));
    let p = plan_for(&t, &cfg(None, true, false), Some(0)).unwrap();
    assert_eq!(p.workers, 3);
    assert_eq!(p.placements, vec![Placement::Cpus(set("0-3")); 3]);
    assert_eq!(p.main_cpu, None);
    // Homogeneous machine: nothing to restrict.
    let t = detect(&fixture("cgroup_v1_quota"), Some(set("0-7")));
    let p = plan_for(&t, &cfg(None, true, false), None).unwrap();
    assert_eq!(p.placements, vec![Placement::Inherit; 1]);
    assert!(!p.needs_setup());
    // Only little cores allowed: they are kept rather than leaving none.
    let t = detect(&fixture("biglittle_4x4"), Some(set("4-7")));
    let p = plan_for(&t, &cfg(None, true, false), None).unwrap();
    assert_eq!(p.workers, 3);
    assert!(
        p.reason.contains("no performance core among them"),
        "{}",
        p.reason
    );
}

#[test]
fn plans_follow_the_quota_and_absent_information() {
    let t = detect(&fixture("cgroup_v2_quota"), Some(set("0-7")));
    let p = plan_for(&t, &cfg(None, true, true), Some(0)).unwrap();
    assert_eq!(p.workers, 0);
    assert!(p.placements.is_empty());
    let t = detect(&fixture("empty"), None);
    let p = plan_for(&t, &cfg(Some(2), true, true), None).unwrap();
    assert_eq!(p.placements, vec![Placement::Inherit; 2]);
    assert!(
        p.reason
            .contains("not pinned: the affinity mask is unknown"),
        "{}",
        p.reason
    );
}

#[test]
fn nice_out_of_range_is_an_error() {
    let t = detect(&fixture("empty"), Some(set("0-1")));
    for nice in [-21, 20, i32::MIN] {
        let c = TopologyConfig {
            worker_nice: Some(nice),
            ..cfg(Some(1), false, false)
        };
        let err = plan_for(&t, &c, None).unwrap_err();
        assert!(matches!(err, TopologyError::InvalidNice { nice: n } if n == nice));
        assert!(err.to_string().contains("-20..=19"), "{err}");
        assert!(jobsys::topology::internals::plan(&c).is_err());
    }
}

// ------------------------------------------------------------------- live

#[test]
fn live_topology_of_this_machine() {
    let t = jobsys::topology();
    eprintln!("{t}");
    let usable = t.usable_cpus();
    if cfg!(target_os = "linux") {
        let allowed = t
            .allowed
            .as_ref()
            .expect("sched_getaffinity works on Linux");
        assert!(!allowed.is_empty());
        assert!(!usable.as_ref().unwrap().is_empty());
    }
    assert!(!t.reason.is_empty());
    assert!(t.default_workers < usable.map_or(usize::MAX, |u| u.len()));
    let shown = t.to_string();
    assert!(shown.contains("default workers:"), "{shown}");
}

#[cfg(target_os = "linux")]
#[test]
fn live_pinning_and_nice_on_a_worker_like_thread() {
    use jobsys::topology::internals::{current_affinity, current_cpu, current_nice, plan};
    let p = plan(&TopologyConfig {
        workers: Some(1),
        pin_workers: true,
        worker_nice: Some(19),
        ..TopologyConfig::default()
    })
    .unwrap();
    let Placement::Cpus(cpus) = p.placement(0).clone() else {
        panic!("Linux knows the mask, so the worker is pinned: {p}");
    };
    assert_eq!(cpus.len(), 1);
    let cpu = cpus.first().unwrap();
    let main_mask = current_affinity().unwrap();
    let main_nice = current_nice().unwrap();
    std::thread::Builder::new()
        .name("jobsys-worker-1".into())
        .spawn(move || {
            setup_worker_thread(0, &p).unwrap();
            assert_eq!(current_affinity().unwrap(), cpus);
            assert_eq!(
                current_cpu(),
                Some(cpu),
                "sched_setaffinity migrates at once"
            );
            assert_eq!(
                current_nice().unwrap(),
                19,
                "raising nice is always allowed"
            );
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(
        current_affinity().unwrap(),
        main_mask,
        "the caller is untouched"
    );
    assert_eq!(current_nice().unwrap(), main_nice, "nice is per thread");
}

#[cfg(target_os = "linux")]
#[test]
fn live_negative_nice_is_applied_or_refused_clearly() {
    let p = jobsys::topology::internals::plan(&TopologyConfig {
        workers: Some(1),
        worker_nice: Some(-1),
        ..TopologyConfig::default()
    })
    .unwrap();
    std::thread::spawn(move || match setup_worker_thread(0, &p) {
        Ok(()) => assert_eq!(jobsys::topology::internals::current_nice().unwrap(), -1),
        Err(e @ TopologyError::NotPermitted { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("set nice -1 on jobsys-worker-1"), "{msg}");
            assert!(msg.contains("CAP_SYS_NICE"), "{msg}");
        }
        Err(e) => panic!("unexpected error: {e}"),
    })
    .join()
    .unwrap();
}

/// The CPU watch that `follow_cpus` polls (re-reading the files cheaply)
/// counts the same usable CPUs as `detect` on every fixture tree.
#[test]
fn the_cpu_watch_agrees_with_detect_on_the_fixtures() {
    for entry in std::fs::read_dir(fixture("")).unwrap() {
        let root = entry.unwrap().path();
        for mask in [None, Some(set("0-2,6-40"))] {
            let topo = detect(&root, mask.clone());
            let got = jobsys::topology::internals::watched_usable(&root, mask.as_ref());
            assert_eq!(
                got,
                topo.default_workers + 1,
                "{}: {mask:?}",
                root.display()
            );
        }
    }
}
