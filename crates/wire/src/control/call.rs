//! Each control request names its reply ([`Call`]): the typed [`super::Client::call`] takes
//! a request and answers with that command's reply type. The arguments of most commands are
//! their own type (`Wait`, `Edited`, …); the commands without arguments, and those that share
//! `PathArg`, get one here.

use serde::{Deserialize, Serialize};

use super::{
    cmd, Check, Edited, EditedReply, Hello, HelloReply, PathArg, PauseReply, Request, ReviewMark,
    ReviewMarked, SessionCleared, StatusReply, ToolsQuery, ToolsReply, TrustArg, TrustReply, Wait,
    WaitReply, WarmReply, WorkspaceReview, WorkspacesReply,
};

/// A request that names its reply (as lsp-types' `Request` names its `Result`): the typed
/// [`Client::call`](super::client::Client::call) takes one and answers with [`Call::Reply`], so a caller cannot read a
/// reply as another command's.
pub trait Call {
    /// The `cmd` it is sent as (one of [`cmd`]'s).
    const CMD: &'static str;
    /// What the service answers.
    type Reply: serde::de::DeserializeOwned;
    /// The request to send.
    fn request(&self) -> Request;
}

/// `status` (no arguments).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Status;
/// `workspaces` (no arguments).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Workspaces;
/// `shutdown` (no arguments).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Shutdown;
/// `add`.
#[derive(Debug, Clone, PartialEq)]
pub struct Add(pub PathArg);
/// `forget`.
#[derive(Debug, Clone, PartialEq)]
pub struct Forget(pub PathArg);
/// `sessionClear`.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionClear(pub PathArg);
/// `review`.
#[derive(Debug, Clone, PartialEq)]
pub struct Review(pub PathArg);
/// `pause`.
#[derive(Debug, Clone, PartialEq)]
pub struct Pause(pub PathArg);
/// `resume`.
#[derive(Debug, Clone, PartialEq)]
pub struct Resume(pub PathArg);
/// `warm`.
#[derive(Debug, Clone, PartialEq)]
pub struct Warm(pub PathArg);

/// The empty reply (`shutdown`'s).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Done {}

macro_rules! call {
    ($ty:ty, $cmd:ident, $reply:ty, |$s:pat_param| $req:expr) => {
        impl Call for $ty {
            const CMD: &'static str = cmd::$cmd;
            type Reply = $reply;
            fn request(&self) -> Request {
                let $s = self;
                $req
            }
        }
    };
}

call!(Hello, HELLO, HelloReply, |s| Request::Hello(s.clone()));
call!(Status, STATUS, StatusReply, |_| Request::Status);
call!(Workspaces, WORKSPACES, WorkspacesReply, |_| {
    Request::Workspaces
});
call!(Add, ADD, WorkspacesReply, |s| Request::Add(s.0.clone()));
call!(Forget, FORGET, WorkspacesReply, |s| Request::Forget(
    s.0.clone()
));
call!(Shutdown, SHUTDOWN, Done, |_| Request::Shutdown);
call!(Edited, EDITED, EditedReply, |s| Request::Edited(s.clone()));
call!(Wait, WAIT, WaitReply, |s| Request::Wait(s.clone()));
call!(Check, CHECK, WaitReply, |s| Request::Check(s.clone()));
call!(SessionClear, SESSION_CLEAR, SessionCleared, |s| {
    Request::SessionClear(s.0.clone())
});
call!(ToolsQuery, TOOLS, ToolsReply, |s| Request::Tools(s.clone()));
call!(Review, REVIEW, WorkspaceReview, |s| Request::Review(
    s.0.clone()
));
call!(ReviewMark, REVIEW_MARK, ReviewMarked, |s| {
    Request::ReviewMark(s.clone())
});
call!(Pause, PAUSE, PauseReply, |s| Request::Pause(s.0.clone()));
call!(Resume, RESUME, PauseReply, |s| Request::Resume(s.0.clone()));
call!(TrustArg, TRUST, TrustReply, |s| Request::Trust(s.clone()));
call!(Warm, WARM, WarmReply, |s| Request::Warm(s.0.clone()));
call!(
    super::nav::Nav,
    NAV,
    super::nav::NavReply,
    |s| Request::Nav(s.clone())
);
