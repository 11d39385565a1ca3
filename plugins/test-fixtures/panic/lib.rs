//! Fixture `panicky`: loads fine, panics in every check (the host must turn it into an error).

use openfiles_plugin_api::{
    export_plugin, Capabilities, CheckRequest, CheckResponse, Init, Plugin, PluginError,
};

pub struct Panicky;

impl Plugin for Panicky {
    const NAME: &'static str = "panicky";
    const VERSION: &'static str = "0.1.0";

    fn create(_init: Init) -> Result<(Self, Capabilities), PluginError> {
        Ok((
            Panicky,
            Capabilities {
                extensions: vec!["txt".into()],
                ..Capabilities::default()
            },
        ))
    }

    fn check(&self, request: CheckRequest) -> Result<CheckResponse, PluginError> {
        panic!(
            "fixture panic while checking {} file(s)",
            request.files.len()
        );
    }
}

export_plugin!(Panicky);
