//! Retrieval metrics and ground truth (DESIGN.md §9).
