//! A check of Chrome trace event JSON against the rules that Perfetto and
//! chrome://tracing rely on, used by the tests on every exported capture
//! and available to tools.

use crate::json::{Json, JsonError, Parser};
use std::collections::HashMap;
use std::io::Read;

/// Check a Chrome trace JSON document (streamed, event by event): the
/// object format with a `traceEvents` array; every event has `name`, `ph`,
/// integer `pid` and `tid`; per phase the fields it needs (`M`: `args`;
/// `X`: `ts`, `dur` ≥ 0; `B`/`E`: `ts`, matched per thread; `i`: `ts`, a
/// valid scope `s`; `s`/`f`: `ts`, `cat`, `id`); complete slices on one
/// thread nest (compared in whole nanoseconds, as viewers store them);
/// each flow has exactly one start and one end. Returns the first problem.
pub fn validate_chrome_json<R: Read>(r: R) -> Result<(), String> {
    let mut v = Validator::default();
    let mut p = Parser::new(r);
    let mut first_err: Option<String> = None;
    let mut saw_events = false;
    let res = p.object(|p, key| {
        if key != "traceEvents" {
            return p.value().map(drop);
        }
        saw_events = true;
        let mut k = 0usize;
        p.array(|p| {
            let e = p.value()?;
            if first_err.is_none() {
                if let Err(m) = v.event(&e) {
                    first_err = Some(format!("event {k}: {m}"));
                }
            }
            k += 1;
            Ok(())
        })
    });
    let fmt_err = |e: JsonError| match e {
        JsonError::Io(e) => e.to_string(),
        JsonError::Syntax { offset, msg } => format!("{msg} at byte {offset}"),
    };
    res.map_err(fmt_err)?;
    p.finish().map_err(fmt_err)?;
    if let Some(e) = first_err {
        return Err(e);
    }
    if !saw_events {
        return Err("no traceEvents array".into());
    }
    v.finish()
}

#[derive(Default)]
struct Validator {
    flows: HashMap<(String, u64), (u32, u32)>,
    slices: HashMap<(u64, u64), Vec<(u64, u64)>>,
    open_be: HashMap<(u64, u64), u32>,
}

impl Validator {
    fn event(&mut self, e: &Json) -> Result<(), String> {
        let ph = e.get("ph").and_then(Json::as_str).ok_or("no ph")?;
        if e.get("name").and_then(Json::as_str).is_none() {
            return Err("no name".into());
        }
        let (Some(pid), Some(tid)) = (
            e.get("pid").and_then(Json::as_u64),
            e.get("tid").and_then(Json::as_u64),
        ) else {
            return Err("pid and tid must be integers".into());
        };
        let ts = || {
            e.get("ts")
                .and_then(Json::as_ns)
                .ok_or("no ts (or negative)")
        };
        match ph {
            "M" => {
                if !e.get("args").is_some_and(Json::is_object) {
                    return Err("metadata without args".into());
                }
            }
            "X" => {
                let b = ts()?;
                let dur = e.get("dur").and_then(Json::as_ns).ok_or("X without dur")?;
                self.slices
                    .entry((pid, tid))
                    .or_default()
                    .push((b, b + dur));
            }
            "B" => {
                ts()?;
                *self.open_be.entry((pid, tid)).or_default() += 1;
            }
            "E" => {
                ts()?;
                let n = self.open_be.entry((pid, tid)).or_default();
                *n = n.checked_sub(1).ok_or("E without B")?;
            }
            "i" | "I" => {
                ts()?;
                if !matches!(
                    e.get("s").and_then(Json::as_str),
                    None | Some("t" | "p" | "g")
                ) {
                    return Err("bad instant scope".into());
                }
            }
            "s" | "t" | "f" => {
                ts()?;
                let cat = e
                    .get("cat")
                    .and_then(Json::as_str)
                    .ok_or("flow without cat")?;
                let id = e
                    .get("id")
                    .and_then(Json::as_u64)
                    .ok_or("flow without id")?;
                let f = self.flows.entry((cat.to_owned(), id)).or_default();
                match ph {
                    "s" => f.0 += 1,
                    "f" => f.1 += 1,
                    _ => {}
                }
            }
            "C" => {
                ts()?;
                let Some(Json::Obj(args)) = e.get("args") else {
                    return Err("counter without args".into());
                };
                if args.iter().any(|(_, v)| !matches!(v, Json::Num(_))) {
                    return Err("counter args must be numbers".into());
                }
            }
            other => return Err(format!("unexpected phase {other}")),
        }
        Ok(())
    }

    fn finish(self) -> Result<(), String> {
        if let Some(((pid, tid), n)) = self.open_be.iter().find(|(_, &n)| n != 0) {
            return Err(format!("{n} B events without E on pid {pid} tid {tid}"));
        }
        if let Some(((cat, id), n)) = self.flows.iter().find(|(_, &n)| n != (1, 1)) {
            return Err(format!(
                "flow {cat}/{id} has {} starts and {} ends (want 1 and 1)",
                n.0, n.1
            ));
        }
        for ((pid, tid), mut v) in self.slices {
            v.sort_by_key(|&(b, e)| (b, std::cmp::Reverse(e)));
            let mut open: Vec<u64> = Vec::new();
            for (b, e) in v {
                while open.last().is_some_and(|&end| end <= b) {
                    open.pop();
                }
                if open.last().is_some_and(|&end| e > end) {
                    return Err(format!(
                        "slices on pid {pid} tid {tid} overlap without nesting (at {b} ns)"
                    ));
                }
                open.push(e);
            }
        }
        Ok(())
    }
}
