//! Fixture: a perfectly loadable shared library that is not an openfiles plugin (it does
//! not export `openfiles_plugin_v1`).

/// Something exported, so the library is not empty.
#[no_mangle]
pub extern "C" fn not_an_openfiles_plugin() -> i32 {
    42
}
