//! Control socket server (being built).
