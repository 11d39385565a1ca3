//! Fixture `aborter`: loads fine, calls `abort()` in every check (kills its host process).

use openfiles_plugin_api::{
    export_plugin, Capabilities, CheckRequest, CheckResponse, Init, Plugin, PluginError,
};

pub struct Aborter;

impl Plugin for Aborter {
    const NAME: &'static str = "aborter";
    const VERSION: &'static str = "0.1.0";

    fn create(_init: Init) -> Result<(Self, Capabilities), PluginError> {
        Ok((
            Aborter,
            Capabilities {
                extensions: vec!["txt".into()],
                ..Capabilities::default()
            },
        ))
    }

    fn check(&self, _request: CheckRequest) -> Result<CheckResponse, PluginError> {
        std::process::abort();
    }
}

export_plugin!(Aborter);
