//! Linear SVM (dual coordinate descent, LIBLINEAR) on dense and sign sketches.
