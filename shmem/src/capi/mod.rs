//! C ABI (placeholder while building)
