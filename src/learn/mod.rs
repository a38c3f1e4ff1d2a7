//! Learning on released sketches: a linear SVM ([`svm`]).

pub mod svm;
