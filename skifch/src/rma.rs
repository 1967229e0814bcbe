//! Remote memory access as an optional driver capability (ARCHITECTURE "Higher
//! libraries"). Under construction.
