//! The `openfiles` binary: all the work lives in the library; see `cli/`.

fn main() -> std::process::ExitCode {
    openfiles::cli::run()
}
