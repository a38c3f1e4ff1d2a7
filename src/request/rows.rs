//! The rows a request reads, as a front end names them: it feeds its own rows (an array held in
//! memory, a reader it can cancel) by implementing [`RowReader`], or opens a file as the command
//! does ([`open_reader`] with [`InputOptions`]). These are the data layer's own types, named here
//! so that a front end needs nothing below the request layer.

pub use crate::data::npy::shape_text;
pub use crate::data::parquet::Columns;
pub use crate::data::synthetic::SyntheticRows;
pub use crate::data::{open_reader, read_all, Dataset, Format, InputOptions, RowReader, Scaling};
