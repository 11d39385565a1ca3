//! Workspaces (being built).
