//! Fixture `aborter`: loads fine, calls `abort()` in every check (kills its host process).

use openfiles_plugin_api::{
    export_plugin, Capabilities, CheckRequest, CheckResponse, Init, Plugin,
};

pub struct Aborter;

impl Plugin for Aborter {
    const NAME: &'static str = "aborter";
    const VERSION: &'static str = "0.1.0";

    fn create(_init: Init) -> Result<(Self, Capabilities), String> {
        Ok((
            Aborter,
            Capabilities {
                extensions: vec!["txt".into()],
                ..Capabilities::default()
            },
        ))
    }

    fn check(&self, _request: CheckRequest) -> Result<CheckResponse, String> {
        std::process::abort();
    }
}

export_plugin!(Aborter);
