//! A check of a Parquet file's footer before the `parquet` crate decodes it.
//!
//! The footer is a thrift `FileMetaData` struct in the compact protocol. The crate's decoder sizes
//! some vectors from counts in it before it has read what they count: a schema element's
//! `num_children` becomes `Vec::with_capacity(num_children)` (fuzzing found a 1.4 KB file whose
//! child count made the crate 59.3 reserve 16 GB: `fuzz/known` in session 16), and the list
//! of row groups is reserved at its declared length. A process whose allocator refuses such a
//! reservation aborts, which no `catch_unwind` can turn into an error. So dprp walks the footer
//! first, allocating nothing that depends on it beyond one `i64` per schema element.
//!
//! **The walk reads what the crate reads.** The crate reads every field it knows *by its type in
//! Parquet's thrift IDL*, whatever type the field's header declares, and skips the others by the
//! declared type (a boolean, even inside a list, taking no bytes). A check that only skipped by
//! declared types would part ways with the crate at the first field declared with the wrong
//! type, and the crate would then read counts the check never saw (the fuzzer found that in a
//! minute). So the walk carries the IDL of every struct the crate reads in the footer
//! ([`Shape`]: `FileMetaData`, `SchemaElement` with `LogicalType`, `RowGroup`, `ColumnChunk`,
//! `ColumnMetaData` and the statistics, key-value, sorting, encoding-stats, column-order and
//! encryption structs), reads known fields by their IDL shape and skips unknown ones as the crate
//! does. Wherever both accept a footer they read the same bytes the same way. It refuses:
//!
//! - a known field whose header declares another type than Parquet gives it, and a list of a
//!   known field whose elements have another type (no writer produces either);
//! - a list, set, map or binary field that declares more elements or bytes than remain in the
//!   footer (every element of a field the crate reads takes at least one byte on the wire);
//! - a schema whose child counts ask for more elements than follow (at every element, the
//!   children still owed to the groups above it and to itself must fit in the elements left), or
//!   a negative count;
//! - varints longer than 64 bits (the crate wraps them), field ids out of range, nesting deeper
//!   than [`MAX_DEPTH`] (the walk recurses) and types the protocol does not have.
//!
//! After this check, every reservation the crate makes from the footer is bounded by the footer's
//! length times a small factor. Fields Parquet does not define are skipped, so files from
//! writers with extra fields pass; a newer Parquet field that the crate does not read is skipped
//! by both. An encrypted footer (`PARE`) is left to the crate, which refuses it (dprp builds it
//! without encryption). When the `parquet` dependency is upgraded, its IDL must be compared
//! with [`Shape`]'s tables (a field the crate newly reads must be added).

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
const T_STOP: u8 = 0;
const T_TRUE: u8 = 1;
const T_FALSE: u8 = 2;
const T_BYTE: u8 = 3;
const T_I16: u8 = 4;
const T_I32: u8 = 5;
const T_I64: u8 = 6;
const T_DOUBLE: u8 = 7;
const T_BINARY: u8 = 8;
const T_LIST: u8 = 9;
const T_SET: u8 = 10;
const T_MAP: u8 = 11;
const T_STRUCT: u8 = 12;
const T_UUID: u8 = 13;

/// What a field of Parquet's thrift IDL (`parquet.thrift`, as the crate 59 reads it) holds. The
/// crate reads a field it knows *by this shape, whatever type its header declares*, and skips
/// the others by their declared type; so dprp refuses a known field whose declared type is
/// another (a valid file never has one) — otherwise the crate would read those bytes one way
/// and this walk another, and the crate could meet a count this walk never saw (the first
/// version of this check skipped by declared type, and the fuzzer got a 6 GB reservation past
/// it in a minute).
#[derive(Clone, Copy)]
enum Shape {
    Bool,
    Byte,
    Int16,
    Int32,
    Int64,
    Double,
    Binary,
    List(&'static Shape),
    /// A struct or a union (a union is a struct with one field set).
    Struct(&'static [(i16, Shape)]),
}

use Shape::*;

const EMPTY: Shape = Struct(&[]);
const STRING_LIST: Shape = List(&Binary);
const TIME_UNIT: Shape = Struct(&[(1, EMPTY), (2, EMPTY), (3, EMPTY)]);
const TIME: Shape = Struct(&[(1, Bool), (2, TIME_UNIT)]);
const LOGICAL_TYPE: Shape = Struct(&[
    (1, EMPTY),
    (2, EMPTY),
    (3, EMPTY),
    (4, EMPTY),
    (5, Struct(&[(1, Int32), (2, Int32)])),
    (6, EMPTY),
    (7, TIME),
    (8, TIME),
    (10, Struct(&[(1, Byte), (2, Bool)])),
    (11, EMPTY),
    (12, EMPTY),
    (13, EMPTY),
    (14, EMPTY),
    (15, EMPTY),
    (16, Struct(&[(1, Byte)])),
    (17, Struct(&[(1, Binary)])),
    (18, Struct(&[(1, Binary), (2, Int32)])),
]);
/// `SchemaElement`; field 5 is `num_children`.
const SCHEMA_ELEMENT: &[(i16, Shape)] = &[
    (1, Int32),
    (2, Int32),
    (3, Int32),
    (4, Binary),
    (5, Int32),
    (6, Int32),
    (7, Int32),
    (8, Int32),
    (9, Int32),
    (10, LOGICAL_TYPE),
];
const KEY_VALUE: Shape = Struct(&[(1, Binary), (2, Binary)]);
const STATISTICS: Shape = Struct(&[
    (1, Binary),
    (2, Binary),
    (3, Int64),
    (4, Int64),
    (5, Binary),
    (6, Binary),
    (7, Bool),
    (8, Bool),
]);
const PAGE_ENCODING_STATS: Shape = Struct(&[(1, Int32), (2, Int32), (3, Int32)]);
const SIZE_STATISTICS: Shape = Struct(&[(1, Int64), (2, List(&Int64)), (3, List(&Int64))]);
const BOUNDING_BOX: Shape = Struct(&[
    (1, Double),
    (2, Double),
    (3, Double),
    (4, Double),
    (5, Double),
    (6, Double),
    (7, Double),
    (8, Double),
]);
const GEOSPATIAL_STATISTICS: Shape = Struct(&[(1, BOUNDING_BOX), (2, List(&Int32))]);
const COLUMN_META_DATA: Shape = Struct(&[
    (1, Int32),
    (2, List(&Int32)),
    (3, STRING_LIST),
    (4, Int32),
    (5, Int64),
    (6, Int64),
    (7, Int64),
    (8, List(&KEY_VALUE)),
    (9, Int64),
    (10, Int64),
    (11, Int64),
    (12, STATISTICS),
    (13, List(&PAGE_ENCODING_STATS)),
    (14, Int64),
    (15, Int32),
    (16, SIZE_STATISTICS),
    (17, GEOSPATIAL_STATISTICS),
]);
const COLUMN_CRYPTO_META_DATA: Shape =
    Struct(&[(1, EMPTY), (2, Struct(&[(1, STRING_LIST), (2, Binary)]))]);
const COLUMN_CHUNK: Shape = Struct(&[
    (1, Binary),
    (2, Int64),
    (3, COLUMN_META_DATA),
    (4, Int64),
    (5, Int32),
    (6, Int64),
    (7, Int32),
    (8, COLUMN_CRYPTO_META_DATA),
    (9, Binary),
]);
const SORTING_COLUMN: Shape = Struct(&[(1, Int32), (2, Bool), (3, Bool)]);
const ROW_GROUP: Shape = Struct(&[
    (1, List(&COLUMN_CHUNK)),
    (2, Int64),
    (3, Int64),
    (4, List(&SORTING_COLUMN)),
    (5, Int64),
    (6, Int64),
    (7, Int16),
]);
const AES: Shape = Struct(&[(1, Binary), (2, Binary), (3, Bool)]);
/// `FileMetaData`; field 2, the schema, is walked by [`Walker::schema`].
const FILE_META_DATA: &[(i16, Shape)] = &[
    (1, Int32),
    (2, List(&Struct(SCHEMA_ELEMENT))),
    (3, Int64),
    (4, List(&ROW_GROUP)),
    (5, List(&KEY_VALUE)),
    (6, Binary),
    (7, List(&Struct(&[(1, EMPTY)]))),
    (8, Struct(&[(1, AES), (2, AES)])),
    (9, Binary),
];

const DATA_PAGE_HEADER: Shape = Struct(&[
    (1, Int32),
    (2, Int32),
    (3, Int32),
    (4, Int32),
    (5, STATISTICS),
]);
const DATA_PAGE_HEADER_V2: Shape = Struct(&[
    (1, Int32),
    (2, Int32),
    (3, Int32),
    (4, Int32),
    (5, Int32),
    (6, Int32),
    (7, Bool),
    (8, STATISTICS),
]);
/// `DictionaryPageHeader`; field 1 is `num_values`.
const DICTIONARY_PAGE_HEADER: &[(i16, Shape)] = &[(1, Int32), (2, Int32), (3, Bool)];
/// `PageHeader`: 1 type, 2 uncompressed size, 3 compressed size, 7 the dictionary header.
const PAGE_HEADER: &[(i16, Shape)] = &[
    (1, Int32),
    (2, Int32),
    (3, Int32),
    (4, Int32),
    (5, DATA_PAGE_HEADER),
    (6, EMPTY),
    (7, Struct(DICTIONARY_PAGE_HEADER)),
    (8, DATA_PAGE_HEADER_V2),
];

/// What dprp needs of a page header ([`page_header`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageInfo {
    /// Bytes of the header itself.
    pub header_len: usize,
    /// `PageType`: 0 data, 1 index, 2 dictionary, 3 data v2.
    pub kind: i64,
    /// `uncompressed_page_size`.
    pub uncompressed: i64,
    /// `compressed_page_size` (the bytes that follow the header).
    pub compressed: i64,
    /// A dictionary page's `num_values`.
    pub dictionary_values: Option<i64>,
}

/// Walk the thrift `PageHeader` at the start of `bytes` as the parquet crate reads it (its
/// shape as for the footer: known fields by their IDL type) and return its sizes; an error when
/// it is malformed or does not end within `bytes` ("ends early": the caller may retry with more).
pub fn page_header(bytes: &[u8]) -> std::result::Result<PageInfo, String> {
    let mut w = Walker { buf: bytes, pos: 0 };
    let (mut kind, mut unc, mut comp, mut dict) = (None, None, None, None);
    w.fields(PAGE_HEADER, 0, |w, id| match id {
        1 => w.zigzag().map(|v| kind = Some(v)).map(|()| true),
        2 => w.zigzag().map(|v| unc = Some(v)).map(|()| true),
        3 => w.zigzag().map(|v| comp = Some(v)).map(|()| true),
        7 => w
            .fields(DICTIONARY_PAGE_HEADER, 2, |w, id| {
                if id == 1 {
                    w.zigzag().map(|v| dict = Some(v)).map(|()| true)
                } else {
                    Ok(false)
                }
            })
            .map(|()| true),
        _ => Ok(false),
    })?;
    match (kind, unc, comp) {
        (Some(kind), Some(uncompressed), Some(compressed)) => Ok(PageInfo {
            header_len: w.pos,
            kind,
            uncompressed,
            compressed,
            dictionary_values: dict,
        }),
        _ => Err("a page header lacks its type or sizes".into()),
    }
}

impl Shape {
    /// Whether a field header's or list header's type `ty` is this shape on the wire.
    fn is_wire(self, ty: u8) -> bool {
        match self {
            Bool => ty == T_TRUE || ty == T_FALSE,
            Byte => ty == T_BYTE,
            Int16 => ty == T_I16,
            Int32 => ty == T_I32,
            Int64 => ty == T_I64,
            Double => ty == T_DOUBLE,
            Binary => ty == T_BINARY,
            List(_) => ty == T_LIST,
            Struct(_) => ty == T_STRUCT,
        }
    }
}

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

    /// Skip a value of declared type `ty` as the crate skips a field it does not know: by the
    /// type alone, a boolean taking no bytes (also as an element of a list, set or map, where
    /// it takes one on the wire: the crate's skip consumes none, and this walk follows it).
    fn skip(&mut self, ty: u8, depth: u32) -> R<()> {
        if depth > MAX_DEPTH {
            return Err(format!("it nests deeper than {MAX_DEPTH} levels"));
        }
        match ty {
            T_TRUE | T_FALSE => Ok(()),
            T_BYTE => self.advance(1),
            T_I16 | T_I32 | T_I64 => self.varint().map(|_| ()),
            T_DOUBLE => self.advance(8),
            T_UUID => self.advance(16),
            T_BINARY => {
                let n = self.varint()?;
                let n = self.count(n, "binary field")?;
                self.advance(n)
            }
            T_LIST | T_SET => {
                let (n, elem) = self.list_header()?;
                for _ in 0..n {
                    self.skip(elem, depth + 1)?;
                }
                Ok(())
            }
            T_MAP => {
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
            T_STRUCT => self.fields(&[], depth + 1, |_, _| Ok(false)),
            other => Err(format!("unknown thrift type {other} at byte {}", self.pos)),
        }
    }

    /// Read a value of the expected `shape` (its type already checked). `element`: inside a
    /// list, where a boolean takes a byte (in a struct field it is in the header).
    fn read(&mut self, shape: Shape, element: bool, depth: u32) -> R<()> {
        if depth > MAX_DEPTH {
            return Err(format!("it nests deeper than {MAX_DEPTH} levels"));
        }
        match shape {
            Bool if element => self.advance(1),
            Bool => Ok(()),
            Byte => self.advance(1),
            Int16 | Int32 | Int64 => self.varint().map(|_| ()),
            Double => self.advance(8),
            Binary => {
                let n = self.varint()?;
                let n = self.count(n, "binary field")?;
                self.advance(n)
            }
            List(elem) => {
                let at = self.pos;
                let (n, ty) = self.list_header()?;
                if n > 0 && !elem.is_wire(ty) {
                    return Err(format!(
                        "a list at byte {at} has elements of the wrong type {ty}"
                    ));
                }
                for _ in 0..n {
                    self.read(*elem, true, depth + 1)?;
                }
                Ok(())
            }
            Struct(fields) => self.fields(fields, depth + 1, |_, _| Ok(false)),
        }
    }

    /// Walk a struct's fields up to its stop byte: a field in `known` is read by its shape
    /// (refused when its header declares another type), handing its id and position to
    /// `seen` first; the others are skipped by their declared type.
    fn fields(
        &mut self,
        known: &[(i16, Shape)],
        depth: u32,
        mut seen: impl FnMut(&mut Self, i16) -> R<bool>,
    ) -> R<()> {
        if depth > MAX_DEPTH {
            return Err(format!("it nests deeper than {MAX_DEPTH} levels"));
        }
        let mut last: i16 = 0;
        loop {
            let at = self.pos;
            let h = self.byte()?;
            let ty = h & 0x0f;
            if ty == T_STOP {
                return Ok(());
            }
            let id = match h >> 4 {
                0 => i16::try_from(self.zigzag()?)
                    .map_err(|_| format!("a field id at byte {at} is out of range"))?,
                d => last
                    .checked_add(i16::from(d))
                    .ok_or_else(|| format!("a field id at byte {at} overflows"))?,
            };
            last = id;
            match known.iter().find(|(i, _)| *i == id) {
                Some(&(_, shape)) => {
                    if !shape.is_wire(ty) {
                        return Err(format!(
                            "field {id} at byte {at} has type {ty}, not the type Parquet gives it"
                        ));
                    }
                    // `seen` may read the value itself (returns true) or leave it to `read`.
                    if !seen(self, id)? {
                        self.read(shape, false, depth)?;
                    }
                }
                None => self.skip(ty, depth)?,
            }
        }
    }

    /// `FileMetaData`, with its schema (field 2) checked as a tree.
    fn file_metadata(&mut self) -> R<()> {
        self.fields(FILE_META_DATA, 0, |w, id| {
            if id == 2 {
                w.schema(1).map(|()| true)
            } else {
                Ok(false)
            }
        })
    }

    /// The schema list: each element's `num_children` (field 5), then the tree they make.
    fn schema(&mut self, depth: u32) -> R<()> {
        let start = self.pos;
        let (n, elem) = self.list_header()?;
        if n > 0 && elem != T_STRUCT {
            return Err(format!(
                "its schema (at byte {start}) is not a list of structs"
            ));
        }
        let mut children = Vec::with_capacity(n);
        for _ in 0..n {
            let mut count: i64 = 0;
            self.fields(SCHEMA_ELEMENT, depth + 1, |w, id| {
                if id == 5 {
                    count = w.zigzag()?;
                    Ok(true)
                } else {
                    Ok(false)
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
            self.0.push(T_STOP);
            self
        }
        /// A schema element with a name and optionally a child count.
        fn element(&mut self, name: &str, children: Option<i32>) -> &mut Self {
            self.field(4, T_BINARY).varint(name.len() as u64);
            self.0.extend_from_slice(name.as_bytes());
            if let Some(c) = children {
                self.field(1, T_I32).i32(c);
            }
            self.stop()
        }
    }

    /// FileMetaData { 1: version, 2: schema, 3: num_rows, 4: row_groups (empty) }.
    fn footer(elements: &[(&str, Option<i32>)], row_groups: u64) -> Vec<u8> {
        let mut w = W::default();
        w.field(1, T_I32).i32(1);
        w.field(1, T_LIST).list(elements.len() as u64, T_STRUCT);
        for (name, c) in elements {
            w.element(name, *c);
        }
        w.field(1, T_I64).varint(0);
        w.field(1, T_LIST).list(row_groups, T_STRUCT);
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
        // A boolean field carries its value in its header: no byte follows it. Unknown fields
        // (ids Parquet does not use) are skipped by their declared type.
        let mut w = W::default();
        w.field(15, T_TRUE)
            .field(1, T_I32)
            .i32(7)
            .field(1, T_FALSE)
            .stop();
        check_metadata(&w.0).unwrap();
        // Skipping a list of booleans consumes no bytes per element, as the crate's skip does
        // (the byte after the header is the stop byte here).
        let mut w = W::default();
        w.field(15, T_LIST).list(1, T_TRUE);
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
        w.field(6, T_BINARY).varint(1 << 40).stop();
        assert!(check_metadata(&w.0).unwrap_err().contains("binary"));
    }

    /// The crate reads a field it knows by its Parquet type whatever the header declares: a
    /// known field declared with another type is refused (the crate and this walk would read
    /// different bytes from there on), at every level.
    #[test]
    fn a_known_field_with_another_type_is_refused() {
        let mut w = W::default();
        w.field(3, T_BINARY).varint(2).stop();
        let e = check_metadata(&w.0).unwrap_err();
        assert!(e.contains("field 3 at byte 0 has type 8"), "{e}");
        // num_children declared as a string, inside the schema.
        let mut w = W::default();
        w.field(2, T_LIST).list(1, T_STRUCT);
        w.field(4, T_BINARY).varint(1);
        w.0.push(b'r');
        w.field(1, T_BINARY).varint(0).stop();
        w.stop();
        let e = check_metadata(&w.0).unwrap_err();
        assert!(e.contains("field 5") && e.contains("type 8"), "{e}");
        // A list whose elements have another type.
        let mut w = W::default();
        w.field(4, T_LIST).list(1, T_I32).i32(1).stop();
        let e = check_metadata(&w.0).unwrap_err();
        assert!(e.contains("wrong type 5"), "{e}");
        // The same bytes under an id Parquet does not use are skipped.
        let mut w = W::default();
        w.field(15, T_BINARY).varint(2);
        w.0.extend_from_slice(b"ab");
        w.stop();
        check_metadata(&w.0).unwrap();
    }

    #[test]
    fn deep_nesting_and_unknown_types_are_refused() {
        let mut w = W::default();
        w.field(15, T_STRUCT);
        for _ in 0..1000 {
            w.field(1, T_STRUCT);
        }
        let e = check_metadata(&w.0).unwrap_err();
        assert!(e.contains("nests deeper"), "{e}");
        let mut w = W::default();
        w.field(15, 14);
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
