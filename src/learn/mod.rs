//! Learning on released sketches: a linear SVM ([`svm`]) over borrowed feature rows
//! ([`features`]: dense f32 values or packed signs).

pub mod features;
pub mod svm;

pub use features::Features;
pub use svm::{LinearSvm, Loss, ModelInfo, SvmParams};
