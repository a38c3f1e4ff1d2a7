//! Integer arguments. The library takes counts, dimensions and row ids as `u32`/`u64`/`usize`,
//! whose pyo3 conversions raise a bare `OverflowError` ("can't convert negative int to
//! unsigned") for a negative Python int, naming no argument. The bindings therefore take every
//! such argument as an [`Int`] (any Python int, or an object with `__index__` such as a numpy
//! integer) and convert it with [`Int::get`] / [`unsigned`], which refuse a negative or too large
//! value with a `DprpError` naming the keyword: `invalid row: must be a non-negative integer, got
//! -1`. A float or a string stays a `TypeError`, as for every argument of the wrong type.

use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;

use crate::param;

/// A Python integer of any size: exact within ±2¹²⁷, saturated beyond (both ends are out of
/// range for every unsigned argument, and refused as such).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Int(pub i128);

impl<'a, 'py> FromPyObject<'a, 'py> for Int {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Int> {
        match obj.extract::<i128>() {
            Ok(v) => Ok(Int(v)),
            Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
                Ok(Int(if obj.lt(0)? { i128::MIN } else { i128::MAX }))
            }
            Err(e) => Err(e),
        }
    }
}

impl Int {
    /// The value as the unsigned type the library takes; `name` is the keyword in errors.
    pub fn get<T: Unsigned>(self, name: &str) -> PyResult<T> {
        unsigned(self.0, name)
    }
}

/// For `#[pyo3(from_py_with = crate::ints::int)] x: i128` arguments with an integer default
/// (`row=0`), which keep the default visible in the function's signature.
pub fn int(obj: &Bound<'_, PyAny>) -> PyResult<i128> {
    obj.extract::<Int>().map(|i| i.0)
}

/// The unsigned integer types of the library's arguments.
pub trait Unsigned: TryFrom<i128> {
    /// The largest value.
    const MAX: u128;
}

impl Unsigned for u32 {
    const MAX: u128 = u32::MAX as u128;
}

impl Unsigned for u64 {
    const MAX: u128 = u64::MAX as u128;
}

impl Unsigned for usize {
    const MAX: u128 = usize::MAX as u128;
}

/// `v` as the unsigned type `T`, or a `DprpError` naming the keyword `name`.
pub fn unsigned<T: Unsigned>(v: i128, name: &str) -> PyResult<T> {
    if v < 0 {
        let got = if v == i128::MIN {
            "a negative one".to_string()
        } else {
            v.to_string()
        };
        return Err(param(
            name,
            format!("must be a non-negative integer, got {got}"),
        ));
    }
    T::try_from(v).map_err(|_| {
        let got = if v == i128::MAX {
            "an integer beyond 2^127".to_string()
        } else {
            v.to_string()
        };
        param(name, format!("{got} is too large (at most {})", T::MAX))
    })
}

/// An optional unsigned argument.
pub fn opt<T: Unsigned>(v: Option<Int>, name: &str) -> PyResult<Option<T>> {
    v.map(|i| i.get(name)).transpose()
}
