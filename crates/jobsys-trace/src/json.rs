//! Just enough JSON for trace files, without a dependency (a JSON crate in
//! the library's dependency graph adds `PartialEq` impls on integers that
//! break type inference in users' code, e.g. `assert_eq!(x, it.sum())`).
//!
//! - Writing: strings with the escapes every trace viewer accepts (control
//!   characters other than `\n \r \t \b \f` become U+FFFD: Perfetto's
//!   tokenizer rejects `\u` escapes), and times as exact decimals.
//! - Reading: a streaming pull parser (`Parser`) over any `Read`: the
//!   caller walks the top-level object and the event array element by
//!   element, so a large capture is never held as one tree.

use std::io::{self, BufReader, Bytes, Read, Write};

/// Write `s` as a JSON string.
pub(crate) fn write_str<W: Write>(w: &mut W, s: &str) -> io::Result<()> {
    w.write_all(b"\"")?;
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f | 0x7f => "\u{FFFD}".as_bytes(),
            _ => continue,
        };
        w.write_all(&bytes[start..i])?;
        w.write_all(esc)?;
        start = i + 1;
    }
    w.write_all(&bytes[start..])?;
    w.write_all(b"\"")
}

/// Write nanoseconds as the format's microseconds: an exact decimal plus
/// 0.4 ns, so that readers that truncate to whole nanoseconds (Perfetto
/// computes `(int64) (ts * 1000.0)`, which can land just below the integer)
/// and readers that round both get `ns` back exactly.
pub(crate) fn write_us<W: Write>(w: &mut W, ns: u64) -> io::Result<()> {
    write!(w, "{}.{:03}4", ns / 1000, ns % 1000)
}

/// A parsed JSON value. Numbers keep their text (exact integer and
/// decimal conversions).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub(crate) fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Num(s) => s.parse().ok(),
            _ => None,
        }
    }

    /// Microseconds to whole nanoseconds, rounded to the nearest: exact
    /// from the decimal text when it is plain (`123.4564`), through `f64`
    /// otherwise. `None` for negative or non-numbers.
    pub(crate) fn as_ns(&self) -> Option<u64> {
        let Json::Num(s) = self else { return None };
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        let plain = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
        if !int.is_empty() && plain(int) && plain(frac) {
            let mut ns = int.parse::<u64>().ok()?.checked_mul(1000)?;
            let f = frac.as_bytes();
            let digit = |i: usize| u64::from(f.get(i).map_or(0, |b| b - b'0'));
            ns += digit(0) * 100 + digit(1) * 10 + digit(2);
            if digit(3) >= 5 {
                ns += 1;
            }
            return Some(ns);
        }
        let x = s.parse::<f64>().ok()?;
        (x >= 0.0).then(|| (x * 1000.0).round() as u64)
    }

    pub(crate) fn is_object(&self) -> bool {
        matches!(self, Json::Obj(_))
    }
}

/// Why parsing stopped.
#[derive(Debug)]
pub(crate) enum JsonError {
    Io(io::Error),
    Syntax { offset: u64, msg: String },
}

type PResult<T> = Result<T, JsonError>;

/// Nesting deeper than this is refused (no stack overflow on hostile input).
const MAX_DEPTH: u32 = 128;

/// A pull parser over a byte stream.
pub(crate) struct Parser<R: Read> {
    bytes: Bytes<BufReader<R>>,
    peeked: Option<u8>,
    offset: u64,
    depth: u32,
}

impl<R: Read> Parser<R> {
    pub(crate) fn new(r: R) -> Parser<R> {
        Parser {
            bytes: BufReader::new(r).bytes(),
            peeked: None,
            offset: 0,
            depth: 0,
        }
    }

    pub(crate) fn error<T>(&self, msg: impl Into<String>) -> PResult<T> {
        Err(JsonError::Syntax {
            offset: self.offset,
            msg: msg.into(),
        })
    }

    fn peek(&mut self) -> PResult<Option<u8>> {
        if self.peeked.is_none() {
            self.peeked = match self.bytes.next() {
                None => None,
                Some(Ok(b)) => Some(b),
                Some(Err(e)) => return Err(JsonError::Io(e)),
            };
        }
        Ok(self.peeked)
    }

    fn bump(&mut self) -> PResult<Option<u8>> {
        let b = self.peek()?;
        if b.is_some() {
            self.peeked = None;
            self.offset += 1;
        }
        Ok(b)
    }

    fn ws(&mut self) -> PResult<Option<u8>> {
        while let Some(b) = self.peek()? {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Ok(Some(b));
            }
            self.bump()?;
        }
        Ok(None)
    }

    fn expect(&mut self, c: u8) -> PResult<()> {
        match self.ws()? {
            Some(b) if b == c => {
                self.bump()?;
                Ok(())
            }
            Some(b) => self.error(format!("expected '{}', found '{}'", c as char, b as char)),
            None => self.error(format!("expected '{}', found the end", c as char)),
        }
    }

    /// Only whitespace is left.
    pub(crate) fn finish(&mut self) -> PResult<()> {
        match self.ws()? {
            None => Ok(()),
            Some(b) => self.error(format!("unexpected '{}' after the document", b as char)),
        }
    }

    /// `{ "key": value, … }`: `f` is called with each key and must parse
    /// the value.
    pub(crate) fn object(
        &mut self,
        mut f: impl FnMut(&mut Self, String) -> PResult<()>,
    ) -> PResult<()> {
        self.nest(|p| {
            p.expect(b'{')?;
            if p.ws()? == Some(b'}') {
                p.bump()?;
                return Ok(());
            }
            loop {
                if p.ws()? != Some(b'"') {
                    return p.error("expected a key");
                }
                let key = p.string()?;
                p.expect(b':')?;
                f(p, key)?;
                match p.ws()? {
                    Some(b',') => {
                        p.bump()?;
                    }
                    Some(b'}') => {
                        p.bump()?;
                        return Ok(());
                    }
                    _ => return p.error("expected ',' or '}'"),
                }
            }
        })
    }

    /// `[ value, … ]`: `f` is called for each element and must parse it.
    pub(crate) fn array(&mut self, mut f: impl FnMut(&mut Self) -> PResult<()>) -> PResult<()> {
        self.nest(|p| {
            p.expect(b'[')?;
            if p.ws()? == Some(b']') {
                p.bump()?;
                return Ok(());
            }
            loop {
                f(p)?;
                match p.ws()? {
                    Some(b',') => {
                        p.bump()?;
                    }
                    Some(b']') => {
                        p.bump()?;
                        return Ok(());
                    }
                    _ => return p.error("expected ',' or ']'"),
                }
            }
        })
    }

    fn nest<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= MAX_DEPTH {
            return self.error("nested too deeply");
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    /// Any value.
    pub(crate) fn value(&mut self) -> PResult<Json> {
        match self.ws()? {
            Some(b'{') => {
                let mut m = Vec::new();
                self.object(|p, k| {
                    m.push((k, p.value()?));
                    Ok(())
                })?;
                Ok(Json::Obj(m))
            }
            Some(b'[') => {
                let mut v = Vec::new();
                self.array(|p| {
                    v.push(p.value()?);
                    Ok(())
                })?;
                Ok(Json::Arr(v))
            }
            Some(b'"') => Ok(Json::Str(self.string()?)),
            Some(b't') => self.literal(b"true", Json::Bool(true)),
            Some(b'f') => self.literal(b"false", Json::Bool(false)),
            Some(b'n') => self.literal(b"null", Json::Null),
            Some(b'-' | b'0'..=b'9') => Ok(Json::Num(self.number()?)),
            Some(b) => self.error(format!("unexpected '{}'", b as char)),
            None => self.error("unexpected end"),
        }
    }

    fn literal(&mut self, word: &[u8], v: Json) -> PResult<Json> {
        for &c in word {
            if self.bump()? != Some(c) {
                return self.error("bad literal");
            }
        }
        Ok(v)
    }

    fn number(&mut self) -> PResult<String> {
        let mut s = String::new();
        while let Some(b @ (b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) = self.peek()? {
            s.push(b as char);
            self.bump()?;
        }
        if s.parse::<f64>().is_err() {
            return self.error(format!("bad number {s}"));
        }
        Ok(s)
    }

    fn hex4(&mut self) -> PResult<u32> {
        let mut v = 0;
        for _ in 0..4 {
            let d = self.bump()?.and_then(|b| (b as char).to_digit(16));
            match d {
                Some(d) => v = v * 16 + d,
                None => return self.error("bad \\u escape"),
            }
        }
        Ok(v)
    }

    fn string(&mut self) -> PResult<String> {
        self.expect(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            match self.bump()? {
                None => return self.error("unterminated string"),
                Some(b'"') => break,
                Some(b'\\') => {
                    let c = match self.bump()? {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) {
                                if self.bump()? != Some(b'\\') || self.bump()? != Some(b'u') {
                                    return self.error("lone surrogate");
                                }
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return self.error("bad surrogate pair");
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            match char::from_u32(code) {
                                Some(c) => c,
                                None => return self.error("bad \\u escape"),
                            }
                        }
                        _ => return self.error("bad escape"),
                    };
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                Some(b) if b < 0x20 => return self.error("control character in string"),
                Some(b) => out.push(b),
            }
        }
        match String::from_utf8(out) {
            Ok(s) => Ok(s),
            Err(_) => self.error("invalid UTF-8 in string"),
        }
    }
}

/// Parse a whole document held in memory (tests, small files).
#[cfg(test)]
pub(crate) fn parse(s: &[u8]) -> PResult<Json> {
    let mut p = Parser::new(s);
    let v = p.value()?;
    p.finish()?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_with_escapes() {
        for s in [
            "plain",
            "quote \" back \\ slash",
            "tab\tnl\n",
            "ünïcødé ✓",
            "",
        ] {
            let mut buf = Vec::new();
            write_str(&mut buf, s).unwrap();
            assert_eq!(parse(&buf).unwrap(), Json::Str(s.to_owned()), "{s}");
        }
        let mut buf = Vec::new();
        write_str(&mut buf, "bell\u{7}").unwrap();
        assert_eq!(parse(&buf).unwrap(), Json::Str("bell\u{FFFD}".into()));
        assert_eq!(
            parse(br#""\u00e9\ud83d\ude00""#).unwrap(),
            Json::Str("é😀".into())
        );
    }

    #[test]
    fn times_are_exact_for_truncating_and_rounding_readers() {
        for ns in [
            0u64,
            1,
            999,
            1000,
            12_345,
            4_999_999_999,
            123_456_789_012_345,
        ] {
            let mut buf = Vec::new();
            write_us(&mut buf, ns).unwrap();
            let v = parse(&buf).unwrap();
            assert_eq!(v.as_ns(), Some(ns));
            let x: f64 = std::str::from_utf8(&buf).unwrap().parse().unwrap();
            if ns < 1 << 40 {
                assert_eq!((x * 1000.0) as u64, ns, "truncating reader");
            }
        }
        assert_eq!(Json::Num("1.5e3".into()).as_ns(), Some(1_500_000));
        assert_eq!(Json::Num("-1".into()).as_ns(), None);
    }

    #[test]
    fn documents_parse_and_errors_say_where() {
        let v =
            parse(br#" {"a": [1, 2.5, -3e2], "b": {"c": null, "d": true}, "e": "x"} "#).unwrap();
        assert_eq!(
            v.get("a"),
            Some(&Json::Arr(vec![
                Json::Num("1".into()),
                Json::Num("2.5".into()),
                Json::Num("-3e2".into())
            ]))
        );
        assert_eq!(v.get("b").and_then(|b| b.get("d")), Some(&Json::Bool(true)));
        assert_eq!(v.get("e").and_then(Json::as_str), Some("x"));
        for bad in [
            &b"{"[..],
            b"[1,]",
            b"{\"a\" 1}",
            b"\"abc",
            b"[1] x",
            b"tru",
            b"{\"a\":01.2.3}",
        ] {
            assert!(
                matches!(parse(bad), Err(JsonError::Syntax { .. })),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let deep = "[".repeat(1000);
        assert!(parse(deep.as_bytes()).is_err());
    }
}
