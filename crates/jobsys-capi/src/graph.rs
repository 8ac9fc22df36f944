//! Frame graphs from C: `jobsys_graph_builder_*`, `jobsys_graph_add`,
//! `jobsys_graph_add_for`, `jobsys_graph_edge`, `jobsys_graph_build`,
//! `jobsys_graph_run`, `jobsys_graph_sync`, `jobsys_graph_destroy`: the
//! library's `Graph` (`docs/graph.md`) with C nodes.
//!
//! A node is a C function and its data, called once per run (a loop
//! node: on pieces of its range, from several threads at once). Its
//! options are those of a job, read from the same `jobsys_job_desc`
//! (`jobs::read_desc`), except what does not apply to a node: a node's
//! dependencies are nodes (`after`), not handles, and it cannot be
//! batched or blocking. The data is kept for the graph's life (the
//! caller's pointer, or a heap copy of `desc->data_size` bytes made when
//! the node is added); `release(data)` is called once, when the last of
//! the graph, its builder and its runs in flight is gone.
//!
//! A `jobsys_node` is the node's index and its builder's tag (a process
//! -wide counter): a node of another builder, or a made-up one, is
//! `JOBSYS_ERR_INVALID_ARGUMENT`, never a panic.

use crate::errors::{ffi, non_null, Code, Error, Result};
use crate::handles::Handle;
use crate::jobs::{
    batch_of, check_range, read_desc, run_c, CJob, Heap, JobDesc, JobFn, Payload, Ptr, RangeFn,
};
use crate::system::{system, write_opt, System};
use jobsys::Priority;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

/// `jobsys_node`. All-zero names no node.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// The node's index in its graph (the order nodes were added).
    pub index: u32,
    /// Its builder's tag (never 0).
    pub graph: u32,
}

/// Tags of builders (and the graphs built from them); 0 is none.
static TAGS: AtomicU32 = AtomicU32::new(1);

/// `jobsys_graph_builder`.
pub struct GraphBuilder {
    b: jobsys::GraphBuilder,
    serial: u32,
    tag: u32,
    nodes: Vec<jobsys::NodeId>,
}

/// `jobsys_graph`.
pub struct Graph {
    g: jobsys::Graph,
    serial: u32,
    tag: u32,
    nodes: Vec<jobsys::NodeId>,
}

/// The library's node `n` names, if it is one of `tag`'s.
fn node_of(tag: u32, nodes: &[jobsys::NodeId], n: Node) -> Result<jobsys::NodeId> {
    if n.graph != tag {
        return Err(Error::new(
            Code::InvalidArgument,
            format!(
                "node {{{}, {}}} is not a node of this graph (another graph's, or made up)",
                n.index, n.graph
            ),
        ));
    }
    nodes.get(n.index as usize).copied().ok_or_else(|| {
        Error::new(
            Code::InvalidArgument,
            format!("node index {} is not a node of this graph", n.index),
        )
    })
}

/// `*p`, or `NullArgument` naming `what`.
///
/// # Safety
/// `p` NULL or valid for `&mut` use for `'a`.
unsafe fn get<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    non_null(p, what)?;
    // SAFETY: non-NULL and valid, as the caller promises.
    Ok(unsafe { &mut *p })
}

/// Start a graph for system `sys` (the system its runs will run on).
///
/// # Safety
/// `sys` live or NULL; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_graph_builder_create(
    sys: *const System,
    out: *mut *mut GraphBuilder,
) -> Code {
    ffi("jobsys_graph_builder_create", || {
        // SAFETY: as the caller promises.
        let s = unsafe { system(sys) }?;
        non_null(out, "out")?;
        let b = Box::new(GraphBuilder {
            b: jobsys::Graph::builder(),
            serial: s.serial,
            tag: TAGS.fetch_add(1, Ordering::Relaxed).max(1),
            nodes: Vec::new(),
        });
        // SAFETY: non-NULL and writable, as the caller promises.
        unsafe { out.write(Box::into_raw(b)) };
        Ok(())
    })
}

/// Free a builder that was not built (NULL: nothing), releasing its
/// nodes' data.
///
/// # Safety
/// `b` NULL or from `jobsys_graph_builder_create`, not built or destroyed.
#[no_mangle]
pub unsafe extern "C" fn jobsys_graph_builder_destroy(b: *mut GraphBuilder) {
    if !b.is_null() {
        // A release callback is C code, which does not unwind; nothing
        // else here can panic.
        // SAFETY: from `Box::into_raw`, freed once (the caller's promise).
        drop(unsafe { Box::from_raw(b) });
    }
}

/// What a node runs.
#[derive(Clone, Copy)]
enum Body {
    Call(JobFn),
    Range {
        f: RangeFn,
        begin: usize,
        end: usize,
        batch: usize,
    },
}

/// The body of `jobsys_graph_add` and `jobsys_graph_add_for`.
///
/// # Safety
/// As `jobsys_graph_add`.
#[allow(clippy::too_many_arguments)]
unsafe fn add(
    name: &str,
    sys: *const System,
    b: *mut GraphBuilder,
    desc: *const JobDesc,
    after: *const Node,
    nafter: usize,
    body: Option<Body>,
    data: *mut c_void,
    out: *mut Node,
) -> Code {
    ffi(name, || {
        // SAFETY: as the caller promises.
        let s = unsafe { system(sys) }?;
        // SAFETY: as the caller promises.
        let gb = unsafe { get(b, "builder") }?;
        let body = body.ok_or_else(|| Error::new(Code::NullArgument, "fn is NULL"))?;
        if s.serial != gb.serial {
            return Err(Error::new(
                Code::InvalidArgument,
                "the builder was created for another system",
            ));
        }
        if let Body::Range { begin, end, .. } = body {
            check_range(begin, end)?;
        }
        // SAFETY: `desc` NULL or valid, as the caller promises.
        let d = unsafe { read_desc(s, desc) }?;
        let refuse = |m: &str| Err(Error::new(Code::InvalidArgument, m.to_string()));
        if d.batched {
            return refuse("desc->flags: JOBSYS_JOB_BATCHED does not apply to a graph node (a run publishes its nodes itself)");
        }
        if d.blocking {
            return refuse("desc->flags: JOBSYS_JOB_BLOCKING does not apply to a graph node");
        }
        if !d.deps.is_empty() {
            return refuse("desc->deps: a node's dependencies are nodes: pass them as `after`");
        }
        let after = if nafter == 0 {
            &[][..]
        } else {
            non_null(after, "after (with nafter > 0)")?;
            // SAFETY: `nafter` readable nodes, as the caller promises.
            unsafe { std::slice::from_raw_parts(after, nafter) }
        };
        let deps = after
            .iter()
            .map(|&n| node_of(gb.tag, &gb.nodes, n))
            .collect::<Result<Vec<_>>>()?;
        let mut nb = gb.b.node().after(&deps);
        if let Some(n) = d.desc.name {
            nb = nb.name(n);
        }
        // The desc's default (Normal) is the node's priority off the
        // critical path; on it the node runs High unless it keeps its own.
        if d.desc.priority != Priority::Normal {
            nb = nb.priority(d.desc.priority);
        }
        if d.keep_priority {
            nb = nb.keep_priority();
        }
        if let Some(p) = d.pin {
            nb = nb.pin(p);
        }
        if let Some(l) = d.limit {
            nb = nb.limit(l);
        }
        if d.class != jobsys::topology::CoreClass::Any {
            nb = nb.core_class(d.class);
        }
        let id = match d.data_size {
            0 => finish(nb, body, s.serial, d.release, Ptr(data)),
            n => {
                non_null(data, "data (with desc->data_size > 0)")?;
                // SAFETY: `data` holds `n` readable bytes (the caller's promise).
                let copy = unsafe { Heap::copy_of(data, n) };
                finish(nb, body, s.serial, d.release, copy)
            }
        };
        let node = Node {
            index: gb.nodes.len() as u32,
            graph: gb.tag,
        };
        gb.nodes.push(id);
        // SAFETY: NULL or writable, as the caller promises.
        unsafe { write_opt(out, node) };
        Ok(())
    })
}

/// Add the node: its closure owns the data (and its release).
fn finish<P: Payload>(
    nb: jobsys::NodeBuilder<'_>,
    body: Body,
    serial: u32,
    release: Option<crate::jobs::ReleaseFn>,
    data: P,
) -> jobsys::NodeId {
    let job = CJob {
        release,
        serial,
        data,
    };
    match body {
        Body::Call(f) => nb.call(move || {
            // SAFETY: the caller of `jobsys_graph_add` promised `f(data)`
            // may be called once per run, from any thread (never two runs'
            // calls at once: node n of a run waits for node n of the one
            // before).
            run_c(job.serial, || unsafe { f(job.data.ptr()) });
        }),
        Body::Range {
            f,
            begin,
            end,
            batch,
        } => {
            nb.parallel_for_chunked(begin..end, batch_of(batch), move |r| {
                // SAFETY: the caller of `jobsys_graph_add_for` promised `f`
                // may be called on disjoint pieces from several threads.
                run_c(job.serial, || unsafe { f(job.data.ptr(), r.start, r.end) });
            })
        }
    }
}

/// Add a node that calls `fn(data)` once per run, after the nodes
/// `after[..nafter]`, with the options of `*desc` (NULL: none).
///
/// # Safety
/// `sys` live or NULL; `b` a builder or NULL; `desc` NULL or valid;
/// `after` NULL (with `nafter` 0) or `nafter` nodes; `data` readable for
/// `desc->data_size` bytes (when not 0); `out` NULL or writable;
/// `fn(data)` callable once per run from any thread.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn jobsys_graph_add(
    sys: *const System,
    b: *mut GraphBuilder,
    desc: *const JobDesc,
    after: *const Node,
    nafter: usize,
    f: Option<JobFn>,
    data: *mut c_void,
    out: *mut Node,
) -> Code {
    let body = f.map(Body::Call);
    // SAFETY: the caller's promises.
    unsafe {
        add(
            "jobsys_graph_add",
            sys,
            b,
            desc,
            after,
            nafter,
            body,
            data,
            out,
        )
    }
}

/// Add a loop node: each run calls `fn(data, b, e)` on pieces covering
/// `[begin, end)` (`batch` indices each; 0: chosen by the library).
///
/// # Safety
/// As `jobsys_graph_add`, and `fn` callable from several threads at once.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn jobsys_graph_add_for(
    sys: *const System,
    b: *mut GraphBuilder,
    desc: *const JobDesc,
    after: *const Node,
    nafter: usize,
    begin: usize,
    end: usize,
    batch: usize,
    f: Option<RangeFn>,
    data: *mut c_void,
    out: *mut Node,
) -> Code {
    let body = f.map(|f| Body::Range {
        f,
        begin,
        end,
        batch,
    });
    // SAFETY: the caller's promises.
    unsafe {
        add(
            "jobsys_graph_add_for",
            sys,
            b,
            desc,
            after,
            nafter,
            body,
            data,
            out,
        )
    }
}

/// `to` runs after `from` in every run.
///
/// # Safety
/// `b` a builder or NULL.
#[no_mangle]
pub unsafe extern "C" fn jobsys_graph_edge(b: *mut GraphBuilder, from: Node, to: Node) -> Code {
    ffi("jobsys_graph_edge", || {
        // SAFETY: as the caller promises.
        let gb = unsafe { get(b, "builder") }?;
        let (f, t) = (
            node_of(gb.tag, &gb.nodes, from)?,
            node_of(gb.tag, &gb.nodes, to)?,
        );
        gb.b.edge(f, t);
        Ok(())
    })
}

/// Build the graph from `b`, which this frees whatever it returns (on an
/// error: with its nodes' data released). `max_in_flight`: the most runs
/// in flight at once, 0 for the default (2).
///
/// # Safety
/// `b` NULL or a builder not yet built or destroyed; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_graph_build(
    b: *mut GraphBuilder,
    max_in_flight: u32,
    out: *mut *mut Graph,
) -> Code {
    ffi("jobsys_graph_build", || {
        non_null(b, "builder")?;
        // SAFETY: from `Box::into_raw`, taken once (the caller's promise).
        let gb = unsafe { Box::from_raw(b) };
        non_null(out, "out")?;
        let GraphBuilder {
            b: mut builder,
            serial,
            tag,
            nodes,
        } = *gb;
        if max_in_flight != 0 {
            builder.max_in_flight(max_in_flight as usize);
        }
        let g = builder
            .build()
            .map_err(|e| Error::new(Code::InvalidArgument, e.to_string()))?;
        let g = Box::new(Graph {
            g,
            serial,
            tag,
            nodes,
        });
        // SAFETY: non-NULL and writable, as the caller promises.
        unsafe { out.write(Box::into_raw(g)) };
        Ok(())
    })
}

/// Free a graph (NULL: nothing). Runs still in flight go on; the nodes'
/// data is released after the last of them.
///
/// # Safety
/// `g` NULL or from `jobsys_graph_build`, not destroyed yet, and no other
/// call on it in progress.
#[no_mangle]
pub unsafe extern "C" fn jobsys_graph_destroy(g: *mut Graph) {
    if !g.is_null() {
        // SAFETY: from `Box::into_raw`, freed once (the caller's promise).
        drop(unsafe { Box::from_raw(g) });
    }
}

/// The checked graph and system of a call.
///
/// # Safety
/// `sys` live or NULL; `g` a graph or NULL.
unsafe fn graph_of<'a>(sys: *const System, g: *const Graph) -> Result<(&'a System, &'a Graph)> {
    // SAFETY: as the caller promises.
    let s = unsafe { system(sys) }?;
    non_null(g, "graph")?;
    // SAFETY: non-NULL and live, as the caller promises.
    let g = unsafe { &*g };
    if g.serial != s.serial {
        return Err(Error::new(
            Code::InvalidArgument,
            "the graph was built for another system",
        ));
    }
    Ok((s, g))
}

/// Start a run of `g`; `*out` gets a handle for the whole run (complete,
/// cancel, or a dependency like any job's). With `max_in_flight` runs in
/// flight, first waits for the oldest, helping with its work.
///
/// # Safety
/// `sys` live or NULL; `g` a graph or NULL; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_graph_run(
    sys: *const System,
    g: *const Graph,
    out: *mut Handle,
) -> Code {
    ffi("jobsys_graph_run", || {
        // SAFETY: as the caller promises.
        let (s, g) = unsafe { graph_of(sys, g) }?;
        let h = g.g.run(&s.js);
        // SAFETY: NULL or writable, as the caller promises.
        unsafe { write_opt(out, Handle::from_job(h)) };
        Ok(())
    })
}

/// Wait for `node` of the newest run (a mid-frame sync point), helping
/// meanwhile; its failure as `jobsys_complete` reports one. No run yet: OK.
///
/// # Safety
/// `sys` live or NULL; `g` a graph or NULL.
#[no_mangle]
pub unsafe extern "C" fn jobsys_graph_sync(
    sys: *const System,
    g: *const Graph,
    node: Node,
) -> Code {
    ffi("jobsys_graph_sync", || {
        // SAFETY: as the caller promises.
        let (s, g) = unsafe { graph_of(sys, g) }?;
        let n = node_of(g.tag, &g.nodes, node)?;
        g.g.sync(&s.js, n)
            .map_err(|e| crate::errors::from_job_error(&e))
    })
}

/// `jobsys_node_report`: one node of the newest finished run's report.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeReport {
    /// The node.
    pub node: Node,
    /// Its measured duration (first start to last end of its pieces).
    pub duration_ns: u64,
    /// How much longer it could take without a longer frame (0 on the
    /// critical path).
    pub slack_ns: u64,
    /// Its place on the critical path, from 1 (first node); 0: not on it.
    pub critical: u32,
    /// Zero.
    pub reserved: u32,
}

/// The newest finished run's report; BAD_STATE before one finished.
fn report_of(s: &System, g: &Graph) -> Result<jobsys::GraphReport> {
    g.g.report(&s.js).ok_or_else(|| {
        Error::new(
            Code::BadState,
            "no run of the graph has finished yet (complete a run first)",
        )
    })
}

/// The newest finished run, measured: `*frame_ns` = the longest path of
/// the DAG with its durations; `nodes[i]` = node `i`'s report for `i` below
/// `n` and the node count; `*count` (if not NULL) = the node count.
///
/// # Safety
/// `sys` live or NULL; `g` a graph or NULL; `frame_ns` NULL or writable;
/// `nodes` NULL (with `n` 0) or `n` writable reports; `count` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_graph_report(
    sys: *const System,
    g: *const Graph,
    frame_ns: *mut u64,
    nodes: *mut NodeReport,
    n: usize,
    count: *mut usize,
) -> Code {
    ffi("jobsys_graph_report", || {
        // SAFETY: as the caller promises.
        let (s, g) = unsafe { graph_of(sys, g) }?;
        non_null(frame_ns, "frame_ns")?;
        if n > 0 {
            non_null(nodes, "nodes (with n > 0)")?;
        }
        let r = report_of(s, g)?;
        let path = r.critical_path();
        for (i, &id) in g.nodes.iter().enumerate().take(n) {
            let critical = path
                .iter()
                .position(|&p| p == id)
                .map_or(0, |k| k as u32 + 1);
            let report = NodeReport {
                node: Node {
                    index: i as u32,
                    graph: g.tag,
                },
                duration_ns: r.duration(id).as_nanos() as u64,
                slack_ns: r.slack(id).as_nanos() as u64,
                critical,
                reserved: 0,
            };
            // SAFETY: `i < n`, and `nodes` holds `n` writable reports.
            unsafe { nodes.add(i).write(report) };
        }
        // SAFETY: non-NULL and writable / NULL or writable, as promised.
        unsafe {
            frame_ns.write(r.frame().as_nanos() as u64);
            write_opt(count, g.nodes.len());
        }
        Ok(())
    })
}

/// `*frame_ns` = the frame of the newest finished run's report if `node`
/// took `factor` times as long (0.8: 20 % faster), the others unchanged.
///
/// # Safety
/// `sys` live or NULL; `g` a graph or NULL; `frame_ns` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_graph_what_if(
    sys: *const System,
    g: *const Graph,
    node: Node,
    factor: f64,
    frame_ns: *mut u64,
) -> Code {
    ffi("jobsys_graph_what_if", || {
        // SAFETY: as the caller promises.
        let (s, g) = unsafe { graph_of(sys, g) }?;
        let id = node_of(g.tag, &g.nodes, node)?;
        non_null(frame_ns, "frame_ns")?;
        if !(factor.is_finite() && factor >= 0.0) {
            return Err(Error::new(
                Code::InvalidArgument,
                format!("factor {factor}: must be finite and at least 0"),
            ));
        }
        let r = report_of(s, g)?;
        // SAFETY: non-NULL and writable, as the caller promises.
        unsafe { frame_ns.write(r.what_if(id, factor).as_nanos() as u64) };
        Ok(())
    })
}
