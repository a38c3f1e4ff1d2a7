//! A check of a Parquet file's footer before the `parquet` crate decodes it.
//!
//! The footer is a thrift `FileMetaData` struct in the compact protocol. The crate's decoder sizes
//! some vectors from counts in it before it has read what they count: a schema element's
//! `num_children` becomes `Vec::with_capacity(num_children)` (fuzzing found a 1.4 KB file whose
//! child count made the crate 59.3 reserve 16 GB: `fuzz/known` in session 16), and the list
//! of row groups is reserved at its declared length. A process whose allocator refuses such a
//! reservation aborts, which no `catch_unwind` can turn into an error. So dprp walks the footer
//! first, allocating nothing that depends on it beyond one `i32` per schema element, and refuses:
//!
//! - a list, set, map or binary field that declares more elements or bytes than remain in the
//!   footer (every element takes at least one byte on the wire);
//! - a schema whose child counts ask for more elements than follow (at every element, the
//!   children still owed to the groups above it and to itself must fit in the elements left), or
//!   a negative count;
//! - nesting deeper than [`MAX_DEPTH`] (the walk recurses; a hostile footer must not exhaust the
//!   stack), and field types the protocol does not have.
//!
//! After this check, every reservation the crate makes from the footer is bounded by the footer's
//! length times a small factor. Fields the walk does not look into are skipped by their wire
//! type, so files from writers with extra or newer fields pass. An encrypted footer (`PARE`)
//! is left to the crate, which refuses it (dprp builds it without encryption).

use crate::error::{Error, Result};
use std::path::Path;

/// Structs, lists and maps nested deeper than this are refused. Parquet's own metadata nests
/// about six deep (file → row group → column chunk → metadata → statistics / logical type).
pub const MAX_DEPTH: u32 = 64;

/// Check the footer of the Parquet file whose last bytes are `tail` (the whole file or any
/// suffix of it that holds the footer; `file_len` is the file's length). Returns `Ok` also when
/// the footer is not in `tail` or the file is not plain Parquet: the crate reports those.
pub fn check_tail(path: &Path, tail: &[u8], file_len: u64) -> Result<()> {
    let n = tail.len();
    if n < 8 || &tail[n - 4..] != b"PAR1" {
        return Ok(());
    }
    let len = u32::from_le_bytes(tail[n - 8..n - 4].try_into().expect("4 bytes")) as usize;
    if len as u64 + 8 > file_len || len + 8 > n {
        return Ok(());
    }
    check_metadata(&tail[n - 8 - len..n - 8])
        .map_err(|m| Error::format(path, format!("the Parquet footer is damaged: {m}")))
}

/// The number of bytes at the end of a file that [`check_tail`] needs, from the file's last 8.
pub fn tail_len(last8: &[u8; 8]) -> Option<u64> {
    if &last8[4..] != b"PAR1" {
        return None;
    }
    Some(u32::from_le_bytes(last8[..4].try_into().expect("4 bytes")) as u64 + 8)
}

/// Check a thrift-encoded `FileMetaData` (see the module documentation for what is refused).
pub fn check_metadata(bytes: &[u8]) -> std::result::Result<(), String> {
    let mut w = Walker { buf: bytes, pos: 0 };
    w.file_metadata()
}

// Compact-protocol wire types.
const STOP: u8 = 0;
const TRUE: u8 = 1;
const FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;
const UUID: u8 = 13;

struct Walker<'a> {
    buf: &'a [u8],
    pos: usize,
}

type R<T> = std::result::Result<T, String>;

impl Walker<'_> {
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn byte(&mut self) -> R<u8> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| format!("it ends early (at byte {})", self.pos))?;
        self.pos += 1;
        Ok(b)
    }

    fn advance(&mut self, n: usize) -> R<()> {
        if n > self.remaining() {
            return Err(format!(
                "a field at byte {} is {n} bytes long but only {} remain",
                self.pos,
                self.remaining()
            ));
        }
        self.pos += n;
        Ok(())
    }

    fn varint(&mut self) -> R<u64> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err(format!("a varint at byte {} overflows 64 bits", self.pos));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("a varint at byte {} is too long", self.pos))
    }

    fn zigzag(&mut self) -> R<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// A collection's element count, refused when more elements than bytes remain.
    fn count(&mut self, n: u64, what: &str) -> R<usize> {
        if n > self.remaining() as u64 {
            return Err(format!(
                "a {what} at byte {} declares {n} elements but only {} bytes remain",
                self.pos,
                self.remaining()
            ));
        }
        Ok(n as usize)
    }

    /// The header of a list or set: element count and element type.
    fn list_header(&mut self) -> R<(usize, u8)> {
        let h = self.byte()?;
        let ty = h & 0x0f;
        let n = match h >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        Ok((self.count(n, "list")?, ty))
    }

    /// Skip the value of a struct field of wire type `ty`: a boolean field's value is in its
    /// header (the type is TRUE or FALSE), other values follow it.
    fn skip_field(&mut self, ty: u8, depth: u32) -> R<()> {
        match ty {
            TRUE | FALSE => Ok(()),
            _ => self.skip(ty, depth),
        }
    }

    /// Skip one element of a list, set or map of wire type `ty` (a boolean takes one byte).
    fn skip(&mut self, ty: u8, depth: u32) -> R<()> {
        if depth > MAX_DEPTH {
            return Err(format!("it nests deeper than {MAX_DEPTH} levels"));
        }
        match ty {
            TRUE | FALSE | BYTE => self.advance(1),
            I16 | I32 | I64 => self.varint().map(|_| ()),
            DOUBLE => self.advance(8),
            UUID => self.advance(16),
            BINARY => {
                let n = self.varint()?;
                let n = self.count(n, "binary field")?;
                self.advance(n)
            }
            LIST | SET => {
                let (n, elem) = self.list_header()?;
                for _ in 0..n {
                    self.skip(elem, depth + 1)?;
                }
                Ok(())
            }
            MAP => {
                let n = self.varint()?;
                let n = self.count(n, "map")?;
                if n > 0 {
                    let kv = self.byte()?;
                    for _ in 0..n {
                        self.skip(kv >> 4, depth + 1)?;
                        self.skip(kv & 0x0f, depth + 1)?;
                    }
                }
                Ok(())
            }
            STRUCT => self.fields(depth + 1, |w, _, ty, depth| w.skip_field(ty, depth)),
            other => Err(format!("unknown thrift type {other} at byte {}", self.pos)),
        }
    }

    /// Walk a struct's fields up to its stop byte, handing each (id, type) to `field`, which
    /// must consume the value.
    fn fields(
        &mut self,
        depth: u32,
        mut field: impl FnMut(&mut Self, i16, u8, u32) -> R<()>,
    ) -> R<()> {
        if depth > MAX_DEPTH {
            return Err(format!("it nests deeper than {MAX_DEPTH} levels"));
        }
        let mut last: i16 = 0;
        loop {
            let h = self.byte()?;
            let ty = h & 0x0f;
            if ty == STOP {
                return Ok(());
            }
            let id = match h >> 4 {
                0 => i16::try_from(self.zigzag()?)
                    .map_err(|_| format!("a field id at byte {} is out of range", self.pos))?,
                d => last.wrapping_add(i16::from(d)),
            };
            last = id;
            field(self, id, ty, depth)?;
        }
    }

    /// `FileMetaData`: field 2 is the schema, a list of `SchemaElement`s.
    fn file_metadata(&mut self) -> R<()> {
        self.fields(0, |w, id, ty, depth| {
            if id == 2 && ty == LIST {
                w.schema(depth)
            } else {
                w.skip_field(ty, depth)
            }
        })
    }

    /// The schema list: collect each element's `num_children` (field 5) and check the tree.
    fn schema(&mut self, depth: u32) -> R<()> {
        let start = self.pos;
        let (n, elem) = self.list_header()?;
        if elem != STRUCT {
            // Not a list of structs: the crate refuses it; skip it as it is.
            for _ in 0..n {
                self.skip(elem, depth + 1)?;
            }
            return Ok(());
        }
        let mut children = Vec::with_capacity(n);
        for _ in 0..n {
            let mut count: i64 = 0;
            self.fields(depth + 1, |w, id, ty, depth| {
                if id == 5 && ty == I32 {
                    count = w.zigzag()?;
                    Ok(())
                } else {
                    w.skip_field(ty, depth)
                }
            })?;
            children.push(count);
        }
        check_tree(&children).map_err(|m| format!("its schema (at byte {start}) {m}"))
    }
}

/// Check that the child counts of a schema in depth-first order fit the elements there are:
/// at each element, the children still owed (to it and the groups above) fit in what follows.
fn check_tree(children: &[i64]) -> R<()> {
    let mut owed: i64 = 0;
    for (i, &c) in children.iter().enumerate() {
        if c < 0 {
            return Err(format!("gives element {i} a negative child count ({c})"));
        }
        if i > 0 {
            owed = (owed - 1).max(0);
        }
        owed = owed.saturating_add(c);
        let left = (children.len() - 1 - i) as i64;
        if owed > left {
            return Err(format!(
                "gives element {i} {c} children, but only {left} elements follow it \
                 ({owed} owed in all)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compact-protocol writer for the hand-made footers below.
    #[derive(Default)]
    struct W(Vec<u8>);

    impl W {
        fn varint(&mut self, mut v: u64) -> &mut Self {
            loop {
                let b = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    self.0.push(b);
                    return self;
                }
                self.0.push(b | 0x80);
            }
        }
        fn field(&mut self, delta: u8, ty: u8) -> &mut Self {
            self.0.push(delta << 4 | ty);
            self
        }
        fn i32(&mut self, v: i32) -> &mut Self {
            self.varint(((v << 1) ^ (v >> 31)) as u32 as u64)
        }
        fn list(&mut self, n: u64, ty: u8) -> &mut Self {
            if n < 15 {
                self.0.push((n as u8) << 4 | ty);
                self
            } else {
                self.0.push(0xf0 | ty);
                self.varint(n)
            }
        }
        fn stop(&mut self) -> &mut Self {
            self.0.push(STOP);
            self
        }
        /// A schema element with a name and optionally a child count.
        fn element(&mut self, name: &str, children: Option<i32>) -> &mut Self {
            self.field(4, BINARY).varint(name.len() as u64);
            self.0.extend_from_slice(name.as_bytes());
            if let Some(c) = children {
                self.field(1, I32).i32(c);
            }
            self.stop()
        }
    }

    /// FileMetaData { 1: version, 2: schema, 3: num_rows, 4: row_groups (empty) }.
    fn footer(elements: &[(&str, Option<i32>)], row_groups: u64) -> Vec<u8> {
        let mut w = W::default();
        w.field(1, I32).i32(1);
        w.field(1, LIST).list(elements.len() as u64, STRUCT);
        for (name, c) in elements {
            w.element(name, *c);
        }
        w.field(1, I64).varint(0);
        w.field(1, LIST).list(row_groups, STRUCT);
        w.stop();
        w.0
    }

    #[test]
    fn a_well_formed_footer_passes() {
        let f = footer(
            &[("root", Some(2)), ("a", None), ("b", Some(1)), ("c", None)],
            0,
        );
        check_metadata(&f).unwrap();
        // A boolean field carries its value in its header: no byte follows it.
        let mut w = W::default();
        w.field(1, TRUE).field(1, I32).i32(7).field(1, FALSE).stop();
        check_metadata(&w.0).unwrap();
        // Booleans in a list take one byte each.
        let mut w = W::default();
        w.field(1, LIST).list(3, TRUE);
        w.0.extend_from_slice(&[1, 0, 1]);
        w.stop();
        check_metadata(&w.0).unwrap();
        // Primitive elements with an explicit zero count (parquet-cpp writes them).
        let f = footer(&[("root", Some(1)), ("a", Some(0))], 0);
        check_metadata(&f).unwrap();
    }

    #[test]
    fn a_child_count_beyond_the_elements_is_refused() {
        let e = check_metadata(&footer(&[("root", Some(1)), ("a", Some(i32::MAX))], 0));
        assert!(e.unwrap_err().contains("element 1 2147483647 children"));
        // Owed children add up across levels: root owes 2, its first child claims both others.
        let e = check_metadata(&footer(
            &[("root", Some(2)), ("g", Some(2)), ("a", None), ("b", None)],
            0,
        ));
        assert!(e.unwrap_err().contains("owed"));
        let e = check_metadata(&footer(&[("root", Some(-1))], 0));
        assert!(e.unwrap_err().contains("negative"));
        // The boundary: exactly as many as follow passes.
        check_metadata(&footer(&[("root", Some(2)), ("a", None), ("b", None)], 0)).unwrap();
        assert!(
            check_metadata(&footer(&[("root", Some(3)), ("a", None), ("b", None)], 0)).is_err()
        );
    }

    #[test]
    fn a_list_longer_than_the_footer_is_refused() {
        let e = check_metadata(&footer(&[("root", Some(0))], 1 << 30)).unwrap_err();
        assert!(e.contains("declares 1073741824 elements"), "{e}");
        let mut w = W::default();
        w.field(5, BINARY).varint(1 << 40).stop();
        assert!(check_metadata(&w.0).unwrap_err().contains("binary"));
    }

    #[test]
    fn deep_nesting_and_unknown_types_are_refused() {
        let mut w = W::default();
        for _ in 0..1000 {
            w.field(1, STRUCT);
        }
        let e = check_metadata(&w.0).unwrap_err();
        assert!(e.contains("nests deeper"), "{e}");
        let mut w = W::default();
        w.field(1, 14);
        assert!(check_metadata(&w.0)
            .unwrap_err()
            .contains("unknown thrift type 14"));
        assert!(check_metadata(&[]).unwrap_err().contains("ends early"));
    }

    #[test]
    fn the_tail_is_found_from_the_last_eight_bytes() {
        let f = footer(&[("root", Some(1)), ("a", Some(i32::MAX))], 0);
        let mut file = b"PAR1".to_vec();
        file.extend_from_slice(&f);
        file.extend_from_slice(&(f.len() as u32).to_le_bytes());
        file.extend_from_slice(b"PAR1");
        let last8: [u8; 8] = file[file.len() - 8..].try_into().unwrap();
        assert_eq!(tail_len(&last8), Some(f.len() as u64 + 8));
        let e = check_tail(Path::new("x.parquet"), &file, file.len() as u64).unwrap_err();
        assert!(e.to_string().contains("x.parquet") && e.to_string().contains("footer"));
        // Opening the file for the crate checks it: the crate alone would reserve 2³¹ − 1
        // schema nodes (16 GB) for this footer.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.parquet");
        std::fs::write(&path, &file).unwrap();
        let e = super::super::StrictFile::open(&path)
            .err()
            .expect("refused");
        assert!(e.to_string().contains("2147483647 children"), "{e}");
        // A footer length past the file is left to the crate.
        check_tail(Path::new("x"), &file[file.len() - 12..], 12).unwrap();
    }
}
