//! Shared code of the benchmark tools.
