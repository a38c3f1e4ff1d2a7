//! numpy input: 2-D float arrays read in place (no copy of the array), and a [`RowReader`] over
//! them for the publishing pipeline.

use numpy::ndarray::{ArrayView1, ArrayView2, Axis};
use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use dprp::request::rows::{RowReader, Scaling};

use crate::interrupt::Cancel;

/// A borrowed 2-D float array: f32 or f64, any strides (C order, Fortran order, slices).
pub enum Matrix<'py> {
    /// float32.
    F32(PyReadonlyArray2<'py, f32>),
    /// float64.
    F64(PyReadonlyArray2<'py, f64>),
}

/// A borrowed view of a [`Matrix`], which can cross to a worker thread.
#[derive(Clone, Copy)]
pub enum View<'a> {
    /// float32.
    F32(ArrayView2<'a, f32>),
    /// float64.
    F64(ArrayView2<'a, f64>),
}

impl<'py> Matrix<'py> {
    /// The array as a view.
    pub fn view(&self) -> View<'_> {
        match self {
            Matrix::F32(a) => View::F32(a.as_array()),
            Matrix::F64(a) => View::F64(a.as_array()),
        }
    }
}

impl View<'_> {
    /// Rows.
    pub fn rows(&self) -> usize {
        match self {
            View::F32(v) => v.nrows(),
            View::F64(v) => v.nrows(),
        }
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        match self {
            View::F32(v) => v.ncols(),
            View::F64(v) => v.ncols(),
        }
    }
    /// Append rows `start..end` to `out` as f32, row-major: one `memcpy` for C-ordered float32,
    /// element by element otherwise (float64 values are rounded to the nearest f32, as dprp reads
    /// float64 `.npy` files; values beyond f32's range become ±inf and are refused as
    /// non-finite by the pipeline, which names the row and column).
    pub fn append_rows(&self, start: usize, end: usize, out: &mut Vec<f32>) {
        match self {
            View::F32(v) => {
                let part = v.slice_axis(Axis(0), (start..end).into());
                match part.as_slice() {
                    Some(s) => out.extend_from_slice(s),
                    None => {
                        for row in part.rows() {
                            out.extend(row.iter().copied());
                        }
                    }
                }
            }
            View::F64(v) => {
                for row in v.slice_axis(Axis(0), (start..end).into()).rows() {
                    out.extend(row.iter().map(|&x| x as f32));
                }
            }
        }
    }
}

/// Take `x` as a 2-D float32/float64 numpy array; `what` names the argument in errors.
pub fn matrix<'py>(x: &Bound<'py, PyAny>, what: &str) -> PyResult<Matrix<'py>> {
    let Ok(arr) = x.cast::<PyUntypedArray>() else {
        return Err(PyTypeError::new_err(format!(
            "{what}: expected a 2-D numpy array of float32 or float64, got {}",
            x.get_type().name()?
        )));
    };
    if arr.ndim() != 2 {
        return Err(crate::param(
            what,
            format!(
                "expected a 2-D array (rows × features), got {} dimension(s) with shape {:?}",
                arr.ndim(),
                arr.shape()
            ),
        ));
    }
    let dtype = arr.dtype();
    if let Ok(a) = x.extract::<PyReadonlyArray2<'py, f32>>() {
        return Ok(Matrix::F32(a));
    }
    if let Ok(a) = x.extract::<PyReadonlyArray2<'py, f64>>() {
        return Ok(Matrix::F64(a));
    }
    Err(PyTypeError::new_err(format!(
        "{what}: expected float32 or float64 values, got dtype {} (convert with .astype(np.float32))",
        dtype.str()?
    )))
}

/// A shape as Python prints it: `(2, 3)`, `(4,)`, `()` (the `.npy` reader's wording).
fn shape_text(shape: &[usize]) -> String {
    dprp::request::rows::shape_text(&shape.iter().map(|&d| d as u64).collect::<Vec<_>>())
}

/// One vector, copied as f64: a 1-D float32 or float64 numpy array (any strides), or a list or
/// tuple of numbers (converted by numpy to float64). `what` is the argument's keyword; `takes`
/// says what the function takes, for the error about an array of another shape ("privatise takes
/// one vector (1-D array of d values)"), a `DprpError` naming the shape. Another dtype or type
/// is a `TypeError`, as for [`matrix`].
pub fn vector(x: &Bound<'_, PyAny>, what: &str, takes: &str) -> PyResult<Vec<f64>> {
    let converted;
    let x = if x.cast::<PyUntypedArray>().is_ok() {
        x
    } else if x.cast::<PyList>().is_ok() || x.cast::<PyTuple>().is_ok() {
        let np = x.py().import("numpy")?;
        let kw = PyDict::new(x.py());
        kw.set_item("dtype", "float64")?;
        converted = np.call_method("asarray", (x,), Some(&kw)).map_err(|e| {
            PyTypeError::new_err(format!(
                "{what}: expected a 1-D numpy array or a list of numbers ({})",
                e.value(x.py())
            ))
        })?;
        &converted
    } else {
        return Err(PyTypeError::new_err(format!(
            "{what}: expected a 1-D numpy array of float32 or float64 (or a list of numbers), got \
             {}",
            x.get_type().name()?
        )));
    };
    let arr = x.cast::<PyUntypedArray>()?;
    if arr.ndim() != 1 {
        return Err(crate::param(
            what,
            format!("{takes}; got shape {}", shape_text(arr.shape())),
        ));
    }
    if let Ok(a) = x.extract::<PyReadonlyArray1<'_, f64>>() {
        return Ok(a.as_array().to_vec());
    }
    if let Ok(a) = x.extract::<PyReadonlyArray1<'_, f32>>() {
        return Ok(a.as_array().iter().map(|&v| f64::from(v)).collect());
    }
    Err(PyTypeError::new_err(format!(
        "{what}: expected float32 or float64 values, got dtype {} (convert with \
         .astype(np.float64))",
        arr.dtype().str()?
    )))
}

/// Labels: a 1-D float array of one value per row, copied as f32.
pub fn labels(x: &Bound<'_, PyAny>, rows: usize) -> PyResult<Vec<f32>> {
    let v: Vec<f32> = if let Ok(a) = x.extract::<PyReadonlyArray1<'_, f32>>() {
        a.as_array().to_vec()
    } else if let Ok(a) = x.extract::<PyReadonlyArray1<'_, f64>>() {
        a.as_array().iter().map(|&l| l as f32).collect()
    } else {
        return Err(PyTypeError::new_err(
            "labels: expected a 1-D numpy array of float32 or float64",
        ));
    };
    if v.len() != rows {
        return Err(crate::param(
            "labels",
            format!("{} labels for {rows} rows", v.len()),
        ));
    }
    if let Some(i) = v.iter().position(|l| !l.is_finite()) {
        return Err(crate::param("labels", format!("label {i} is not finite")));
    }
    Ok(v)
}

/// The rows of a numpy array as a [`RowReader`] for the publishing pipeline; each chunk first
/// checks the cancel flag, so an interrupt stops the pipeline at the next chunk.
pub struct ArrayReader<'a, 'c> {
    /// The array.
    pub view: View<'a>,
    /// One label per row, if given.
    pub labels: Option<ArrayView1<'a, f32>>,
    /// Next row to read.
    pub next: usize,
    /// Checked before every chunk.
    pub cancel: &'c Cancel,
}

impl RowReader for ArrayReader<'_, '_> {
    fn format(&self) -> String {
        "python array".into()
    }
    fn has_ids(&self) -> bool {
        false // row i has id i
    }
    fn dim(&self) -> usize {
        self.view.cols()
    }
    fn rows_hint(&self) -> Option<u64> {
        Some(self.view.rows() as u64)
    }
    fn has_labels(&self) -> bool {
        self.labels.is_some()
    }
    fn read_chunk(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
    ) -> dprp::Result<usize> {
        self.cancel.check()?;
        let end = (self.next + max_rows).min(self.view.rows());
        let start = self.next;
        self.view.append_rows(start, end, values);
        if let Some(l) = &self.labels {
            labels.extend(l.slice(numpy::ndarray::s![start..end]).iter().copied());
        }
        self.next = end;
        Ok(end - start)
    }
}

/// A file reader that stops at the next chunk once the call is interrupted.
pub struct CancellableReader<'a> {
    /// The file's reader.
    pub inner: Box<dyn RowReader>,
    /// Checked before every chunk.
    pub cancel: &'a Cancel,
}

impl RowReader for CancellableReader<'_> {
    fn format(&self) -> String {
        self.inner.format()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn rows_hint(&self) -> Option<u64> {
        self.inner.rows_hint()
    }
    fn has_labels(&self) -> bool {
        self.inner.has_labels()
    }
    fn scaling(&self) -> Scaling {
        self.inner.scaling()
    }
    fn read_chunk(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
    ) -> dprp::Result<usize> {
        self.cancel.check()?;
        self.inner.read_chunk(max_rows, values, labels)
    }
    fn has_ids(&self) -> bool {
        self.inner.has_ids()
    }
    fn skip_rows(&mut self, n: u64) -> dprp::Result<u64> {
        self.cancel.check()?;
        self.inner.skip_rows(n)
    }
    fn read_rows(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
        ids: &mut Vec<u64>,
    ) -> dprp::Result<usize> {
        self.cancel.check()?;
        self.inner.read_rows(max_rows, values, labels, ids)
    }
}
