//! Test fixtures for the openfiles plugin host. The fixtures themselves are cdylib examples
//! (see `Cargo.toml`); this library only lists their names so tests and benchmarks agree.

/// Every fixture, as `(example name, what it does)`.
pub const FIXTURES: &[(&str, &str)] = &[
    (
        "openfiles_fixture_instant",
        "answers at once with one info item per file",
    ),
    ("openfiles_fixture_panic", "panics in check"),
    ("openfiles_fixture_abort", "calls abort() in check"),
    (
        "openfiles_fixture_bad_abi",
        "exports a table with ABI major 999",
    ),
    (
        "openfiles_fixture_no_symbol",
        "exports no openfiles_plugin_v1 symbol",
    ),
    (
        "openfiles_fixture_minor0",
        "a minor-0 table (no query entry): checks work, questions are unsupported",
    ),
];
