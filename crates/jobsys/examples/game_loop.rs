//! A game's frame loop on jobsys.
//!
//! ```text
//! cargo run --example game_loop -p jobsys
//! JOBSYS_WORKERS=3 JOBSYS_IDLE_POLICY=whipping-boy cargo run --example game_loop -p jobsys
//! ```
//!
//! Each of 120 frames is one graph of jobs with real dependencies:
//!
//! ```text
//! input ──► physics ──┬──► animation ──┬──► render
//!  (High)   (parallel │   (parallel    │     (High)
//!            _for)    │    _for)       │
//!                     └──► ai ─────────┘
//!                          (a burst of 256 tiny batched jobs)
//! ```
//!
//! - `physics` is a `parallel_for` over the 10,000 entities, 64 to a chunk.
//!   It writes the entities in place through the frame's scope: the world's
//!   `Vec<Body>` is split with `chunks_mut` and each chunk sits behind an
//!   `RwLock`, which is never contended (each index of the loop is one chunk,
//!   and the stages that read a chunk run after the one that writes it); it
//!   only shows the compiler that the writes do not alias. No `unsafe`.
//! - `animation` and `ai` both only read the bodies, so they run side by side.
//!   `ai` sends one small job per agent with `job().batched()` (no wakes per
//!   job), then `flush` wakes as many workers as there is work for, once.
//!   AI decisions steer the agents in the *next* frame (double-buffered).
//! - `render` waits for both and hashes what it would draw.
//!
//! Every 20 frames it prints that frame's counters from `take_stats()`; at
//! the end the frame time median and p99. Then it replays the 120 frames
//! serially with the same step functions and asserts that both worlds and
//! every frame's render hash are identical, bit for bit: the example fails
//! if the job system ran a stage too early, twice, or not at all.

use jobsys::{Batch, JobDesc, JobHandle, JobSystem, Priority, Stats};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

const FRAMES: usize = 120;
const ENTITIES: usize = 10_000;
/// Entities `0..AGENTS` are AI-driven.
const AGENTS: usize = 256;
const CHUNK: usize = 64;
const DT: f32 = 1.0 / 60.0;
const ARENA: f32 = 100.0;
const STATS_EVERY: usize = 20;

const INPUT: JobDesc = JobDesc::named("input").with_priority(Priority::High);
const AI: JobDesc = JobDesc::named("ai");
const RENDER: JobDesc = JobDesc::named("render").with_priority(Priority::High);

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Body {
    pos: [f32; 2],
    vel: [f32; 2],
}

/// Everything that lives from frame to frame.
#[derive(Clone, Debug, PartialEq)]
struct World {
    bodies: Vec<Body>,
    /// Walk-cycle phase per entity, 0..1.
    anim: Vec<f32>,
    /// Steering of each agent, decided by the previous frame's AI.
    steer: Vec<[f32; 2]>,
}

/// What the player did this frame: here a gust of wind.
#[derive(Clone, Copy, Debug)]
struct Input {
    wind: [f32; 2],
}

/// What render produced: a hash of the draw list and how much was on screen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct FrameOut {
    hash: u64,
    visible: u32,
}

// ---- The game's step functions, shared by the jobs and the serial replay ----

fn mix(x: u64) -> u64 {
    let x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A number in -1..1 from `seed`.
fn unit(seed: u64) -> f32 {
    (mix(seed) >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

fn new_world() -> World {
    let bodies = (0..ENTITIES as u64)
        .map(|i| Body {
            pos: [unit(4 * i) * ARENA, unit(4 * i + 1) * ARENA],
            vel: [unit(4 * i + 2) * 20.0, unit(4 * i + 3) * 20.0],
        })
        .collect();
    World {
        bodies,
        anim: vec![0.0; ENTITIES],
        steer: vec![[0.0; 2]; AGENTS],
    }
}

fn read_input(frame: usize) -> Input {
    let f = frame as u64 + 1_000_000;
    Input {
        wind: [unit(2 * f) * 3.0, unit(2 * f + 1) * 3.0],
    }
}

/// Semi-implicit Euler with drag, bouncing off the arena's walls.
fn integrate(b: &mut Body, input: &Input, steer: [f32; 2]) {
    let accel = [input.wind[0] + steer[0], input.wind[1] + steer[1]];
    for ((pos, vel), accel) in b.pos.iter_mut().zip(&mut b.vel).zip(accel) {
        *vel = (*vel + accel * DT) * 0.999;
        *pos += *vel * DT;
        if pos.abs() > ARENA {
            *pos = pos.clamp(-ARENA, ARENA);
            *vel = -*vel;
        }
    }
}

/// The walk cycle advances with speed.
fn animate(phase: &mut f32, b: &Body) {
    let speed = (b.vel[0] * b.vel[0] + b.vel[1] * b.vel[1]).sqrt();
    *phase = (*phase + speed * DT * 0.1).fract();
}

/// Agent `agent` chases this entity this frame.
fn target_of(agent: usize, frame: usize) -> usize {
    AGENTS + (mix((agent * FRAMES + frame) as u64) as usize) % (ENTITIES - AGENTS)
}

/// Steer towards the target, or away if it is too close.
fn think(me: Body, target: Body) -> [f32; 2] {
    let d = [target.pos[0] - me.pos[0], target.pos[1] - me.pos[1]];
    let len = (d[0] * d[0] + d[1] * d[1]).sqrt().max(1e-3);
    let push = if len < 5.0 { -8.0 } else { 8.0 };
    [d[0] / len * push, d[1] / len * push]
}

/// Fold one entity into the draw list: cull against the camera, hash the
/// rest in entity order.
fn draw(out: &mut FrameOut, b: &Body, phase: f32) {
    const CAMERA: f32 = 50.0;
    if b.pos[0].abs() <= CAMERA && b.pos[1].abs() <= CAMERA {
        out.visible += 1;
        let sprite = u64::from(b.pos[0].to_bits()) << 32 | u64::from(b.pos[1].to_bits());
        out.hash = mix(out.hash ^ sprite ^ u64::from(phase.to_bits()));
    }
}

// ---- One frame as a job graph ----

fn frame_jobs(js: &JobSystem, world: &mut World, frame: usize) -> FrameOut {
    let World {
        bodies,
        anim,
        steer,
    } = world;
    let steer: &[[f32; 2]] = steer;
    // Everything the jobs borrow is declared before the scope, so it
    // outlives every job in it.
    let input = OnceLock::new();
    let body_chunks: Vec<RwLock<&mut [Body]>> = bodies.chunks_mut(CHUNK).map(RwLock::new).collect();
    let anim_chunks: Vec<Mutex<&mut [f32]>> = anim.chunks_mut(CHUNK).map(Mutex::new).collect();
    let mut next_steer = vec![[0.0; 2]; AGENTS];
    let mut out = FrameOut::default();

    // The jobs get references (the closures below are `move`).
    let (input, body_chunks, anim_chunks) = (&input, &body_chunks, &anim_chunks);
    let (next_steer_mut, out_mut) = (&mut next_steer, &mut out);
    js.scope(move |s| {
        let body = move |i: usize| body_chunks[i / CHUNK].read().unwrap()[i % CHUNK];

        let input_done = s.job().desc(INPUT).schedule(move || {
            input.set(read_input(frame)).unwrap();
        });

        // (Scope::job().after(..).parallel_for takes no JobDesc, so the two loops are
        // unnamed and of normal priority.)
        let physics = s.job().after(&[input_done]).parallel_for(
            0..body_chunks.len(),
            Batch::Auto,
            move |c| {
                let input = input.get().expect("input ran before physics");
                let mut chunk = body_chunks[c].write().unwrap();
                for (j, b) in chunk.iter_mut().enumerate() {
                    let i = c * CHUNK + j;
                    integrate(b, input, steer.get(i).copied().unwrap_or_default());
                }
            },
        );

        let animation =
            s.job()
                .after(&[physics])
                .parallel_for(0..anim_chunks.len(), Batch::Auto, move |c| {
                    let bodies = body_chunks[c].read().unwrap();
                    let mut phases = anim_chunks[c].lock().unwrap();
                    for (phase, b) in phases.iter_mut().zip(bodies.iter()) {
                        animate(phase, b);
                    }
                });

        let ai = s.job().desc(AI).after(&[physics]).schedule(move || {
            // Batched jobs are 'static: each moves in the two bodies it
            // needs and sends its decision back.
            let (tx, rx) = mpsc::channel();
            let burst: Vec<JobHandle> = (0..AGENTS)
                .map(|a| {
                    let (me, target) = (body(a), body(target_of(a, frame)));
                    let tx = tx.clone();
                    js.job()
                        .batched()
                        .schedule(move || tx.send((a, think(me, target))).unwrap())
                })
                .collect();
            drop(tx);
            js.flush();
            js.complete(js.combine(&burst));
            for (a, st) in rx.try_iter() {
                next_steer_mut[a] = st;
            }
        });

        s.job()
            .desc(RENDER)
            .after(&[animation, ai])
            .schedule(move || {
                for (bodies, phases) in body_chunks.iter().zip(anim_chunks) {
                    let (bodies, phases) = (bodies.read().unwrap(), phases.lock().unwrap());
                    for (b, &phase) in bodies.iter().zip(phases.iter()) {
                        draw(out_mut, b, phase);
                    }
                }
            });
    });

    world.steer = next_steer;
    out
}

/// The same frame, one stage after the other on this thread.
fn frame_serial(world: &mut World, frame: usize) -> FrameOut {
    let input = read_input(frame);
    for (i, b) in world.bodies.iter_mut().enumerate() {
        integrate(b, &input, world.steer.get(i).copied().unwrap_or_default());
    }
    for (phase, b) in world.anim.iter_mut().zip(&world.bodies) {
        animate(phase, b);
    }
    world.steer = (0..AGENTS)
        .map(|a| think(world.bodies[a], world.bodies[target_of(a, frame)]))
        .collect();
    let mut out = FrameOut::default();
    for (b, &phase) in world.bodies.iter().zip(&world.anim) {
        draw(&mut out, b, phase);
    }
    out
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn main() {
    let js = JobSystem::builder().build().expect("start the job system");
    println!(
        "game_loop: {FRAMES} frames, {ENTITIES} entities, {AGENTS} AI agents, {} workers, {:?}",
        js.workers(),
        js.idle_policy()
    );

    let mut world = new_world();
    let mut outs = Vec::with_capacity(FRAMES);
    let mut times = Vec::with_capacity(FRAMES);
    let mut total = Stats::default();
    js.take_stats(); // start the per-frame counters here
    for frame in 0..FRAMES {
        let t = Instant::now();
        outs.push(frame_jobs(&js, &mut world, frame));
        times.push(t.elapsed());
        let st = js.take_stats();
        total.jobs_scheduled += st.jobs_scheduled;
        total.jobs_finished += st.jobs_finished;
        total.wakes += st.wakes;
        total.steals += st.steals;
        if frame % STATS_EVERY == 0 || frame == FRAMES - 1 {
            println!(
                "frame {frame:3}: {:7.3} ms  jobs scheduled {:3} finished {:3}  wakes {:3}  steals {:3}  visible {:4}",
                times[frame].as_secs_f64() * 1e3,
                st.jobs_scheduled,
                st.jobs_finished,
                st.wakes,
                st.steals,
                outs[frame].visible,
            );
        }
    }

    // The check: replay every frame serially, compare bit for bit.
    let mut reference = new_world();
    for (frame, out) in outs.iter().enumerate() {
        let expected = frame_serial(&mut reference, frame);
        assert_eq!(
            *out, expected,
            "frame {frame}: render differs from the serial replay"
        );
    }
    assert!(
        world == reference,
        "final world differs from the serial replay"
    );
    let checksum = outs.iter().fold(0, |h, o| mix(h ^ o.hash));

    times.sort();
    println!(
        "summary: {FRAMES} frames, frame time median {:.3} ms, p99 {:.3} ms, max {:.3} ms; \
         {} jobs, {} wakes, {} steals; checksum {checksum:016x} = serial replay",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3,
        times[FRAMES - 1].as_secs_f64() * 1e3,
        total.jobs_scheduled,
        total.wakes,
        total.steals,
    );
}
