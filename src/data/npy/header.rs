//! The `.npy` header: the element types dprp accepts and the Python dict literal NumPy writes
//! (`{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`), parsed without evaluating
//! anything.

use super::super::native::extend_f32_le;

/// Element types accepted in `.npy` files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dtype {
    F16,
    F32,
    F64,
    U8,
}

/// An IEEE 754 binary16 value as f32 (every f16 value is exactly an f32 value).
pub(super) fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = (h >> 10) & 0x1f;
    let mant = u32::from(h & 0x3ff);
    match exp {
        // zero and subnormals: mant·2⁻²⁴ (exact in f32)
        0 => sign * (mant as f32) * f32::from_bits(0x3380_0000),
        // ±inf and NaN (refused later, naming the cell)
        31 => f32::from_bits((u32::from(h & 0x8000) << 16) | 0x7f80_0000 | (mant << 13)),
        e => f32::from_bits(
            (u32::from(h & 0x8000) << 16) | ((u32::from(e) + 112) << 23) | (mant << 13),
        ),
    }
}

impl Dtype {
    /// The NumPy description (`<f4`), as a release records the input format.
    pub(super) fn descr(self) -> &'static str {
        match self {
            Dtype::F16 => "<f2",
            Dtype::F32 => "<f4",
            Dtype::F64 => "<f8",
            Dtype::U8 => "|u1",
        }
    }

    pub(super) fn size(self) -> usize {
        match self {
            Dtype::F16 => 2,
            Dtype::F32 => 4,
            Dtype::F64 => 8,
            Dtype::U8 => 1,
        }
    }

    pub(super) fn from_descr(descr: &str) -> std::result::Result<Dtype, String> {
        match descr {
            "<f2" => Ok(Dtype::F16),
            "<f4" => Ok(Dtype::F32),
            "<f8" => Ok(Dtype::F64),
            "|u1" | "<u1" | ">u1" | "=u1" => Ok(Dtype::U8),
            ">f2" | ">f4" | ">f8" => Err(format!(
                "big-endian dtype '{descr}' is not supported (convert with \
                 arr.astype('<{}'))",
                &descr[1..]
            )),
            _ => Err(format!(
                "unsupported dtype '{descr}' (supported: '<f2' float16, '<f4' float32, '<f8' \
                 float64, '|u1' uint8)"
            )),
        }
    }

    /// Append f32 conversions of the elements in `bytes` (a whole number of elements).
    pub(super) fn extend(self, out: &mut Vec<f32>, bytes: &[u8]) {
        match self {
            Dtype::F16 => out.extend(
                bytes
                    .chunks_exact(2)
                    .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]]))),
            ),
            Dtype::F32 => extend_f32_le(out, bytes),
            Dtype::F64 => out.extend(bytes.chunks_exact(8).map(|c| {
                f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) as f32
            })),
            Dtype::U8 => out.extend(bytes.iter().map(|&b| f32::from(b))),
        }
    }
}

/// A value in the header dictionary.
#[derive(Debug, PartialEq)]
pub(super) enum PyValue {
    Str(String),
    Bool(bool),
    Tuple(Vec<u64>),
    /// A list (structured dtype descriptions); contents are not interpreted.
    List,
}

/// The fields of an `.npy` header.
#[derive(Debug, PartialEq)]
pub(super) struct Header {
    pub(super) descr: String,
    pub(super) fortran_order: bool,
    pub(super) shape: Vec<u64>,
}

/// A tiny parser for the Python dict literal NumPy writes as the header, e.g.
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`.
pub(super) struct DictParser<'a> {
    pub(super) s: &'a [u8],
    pub(super) pos: usize,
}

impl DictParser<'_> {
    pub(super) fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    pub(super) fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    pub(super) fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!(
                "expected '{}' at byte {} of the header",
                c as char, self.pos
            ))
        }
    }

    pub(super) fn string(&mut self) -> std::result::Result<String, String> {
        self.skip_ws();
        let q = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => {
                return Err(format!(
                    "expected a string at byte {} of the header",
                    self.pos
                ))
            }
        };
        self.pos += 1;
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c == q {
                let s = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
                self.pos += 1;
                return Ok(s);
            }
            if c == b'\\' {
                return Err("escape sequences in header strings are not supported".into());
            }
            self.pos += 1;
        }
        Err("unterminated string in the header".into())
    }

    pub(super) fn word(&mut self) -> &[u8] {
        let start = self.pos;
        while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == b'_') {
            self.pos += 1;
        }
        &self.s[start..self.pos]
    }

    pub(super) fn value(&mut self) -> std::result::Result<PyValue, String> {
        self.skip_ws();
        match self.peek() {
            Some(b'\'' | b'"') => Ok(PyValue::Str(self.string()?)),
            Some(b'(') => {
                self.pos += 1;
                let mut dims = Vec::new();
                loop {
                    self.skip_ws();
                    if self.peek() == Some(b')') {
                        self.pos += 1;
                        break;
                    }
                    let w = self.word();
                    // Python 2 wrote long integers with an `L` suffix.
                    let digits = w.strip_suffix(b"L").unwrap_or(w);
                    let text = std::str::from_utf8(digits).unwrap_or("");
                    let n: u64 = text.parse().map_err(|_| {
                        format!(
                            "bad shape entry '{}' in the header",
                            String::from_utf8_lossy(w)
                        )
                    })?;
                    dims.push(n);
                    self.skip_ws();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b')') => {}
                        _ => return Err("malformed shape tuple in the header".into()),
                    }
                }
                Ok(PyValue::Tuple(dims))
            }
            Some(b'[') => Ok(PyValue::List),
            _ => match self.word() {
                b"True" => Ok(PyValue::Bool(true)),
                b"False" => Ok(PyValue::Bool(false)),
                w => Err(format!(
                    "unexpected value '{}' in the header",
                    String::from_utf8_lossy(w)
                )),
            },
        }
    }

    pub(super) fn parse(s: &[u8]) -> std::result::Result<Header, String> {
        let mut p = DictParser { s, pos: 0 };
        p.expect(b'{')?;
        let (mut descr, mut fortran, mut shape) = (None, None, None);
        loop {
            p.skip_ws();
            if p.peek() == Some(b'}') {
                p.pos += 1;
                break;
            }
            let key = p.string()?;
            p.expect(b':')?;
            let v = p.value()?;
            match (key.as_str(), v) {
                ("descr", PyValue::Str(d)) => descr = Some(d),
                ("descr", PyValue::List) => {
                    return Err("structured dtypes (record arrays) are not supported".into())
                }
                ("fortran_order", PyValue::Bool(b)) => fortran = Some(b),
                ("shape", PyValue::Tuple(t)) => shape = Some(t),
                (k @ ("descr" | "fortran_order" | "shape"), v) => {
                    return Err(format!("bad value {v:?} for '{k}' in the header"))
                }
                (k, _) => return Err(format!("unexpected key '{k}' in the header")),
            }
            p.skip_ws();
            match p.peek() {
                Some(b',') => p.pos += 1,
                Some(b'}') => {}
                _ => {
                    return Err(format!(
                        "expected ',' or '}}' at byte {} of the header",
                        p.pos
                    ))
                }
            }
        }
        p.skip_ws();
        if p.pos != s.len() {
            return Err("unexpected text after the header dictionary".into());
        }
        Ok(Header {
            descr: descr.ok_or("the header has no 'descr'")?,
            fortran_order: fortran.ok_or("the header has no 'fortran_order'")?,
            shape: shape.ok_or("the header has no 'shape'")?,
        })
    }
}

/// A shape as NumPy prints it: `(2, 3)`, `(4,)`, `()`.
pub fn shape_text(shape: &[u64]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
